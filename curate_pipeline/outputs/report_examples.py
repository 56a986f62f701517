"""A few example documents per rejection reason and per kept source, for the report: what a
stage drops, read before trusting its threshold.

Chosen deterministically and without collecting rows: per group, the row with the smallest
xxhash64 of its id under each of `k` seeds (an aggregation of struct minimums), so the same
input gives the same examples whatever the partitioning, and only k rows per group reach the
driver. The minimums are taken in run/outcomes.py's aggregation, which groups the same rows
by the same keys (one job for the counts and the examples). The corpus stages keep narrow
rows (no text): their examples' text is looked up in the documents pass by crawl position,
for the few rows picked."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

TEXT_CHARS = 300  # of each example's text
K = 3  # examples per group
EXAMPLE = "struct<doc_id:string,url:string,detail:string,text:string,crawl_pos:bigint>"


def example(df: DataFrame) -> Column:
    """What an example shows of a row of `df` (its text, where `df` has it)."""
    text = F.col("text") if "text" in df.columns else F.lit(None).cast("string")
    return F.struct(
        F.col("doc_id"),
        F.col("url"),
        F.substring(F.coalesce("reject_detail", F.lit("")), 1, 300).alias("detail"),
        F.substring(text, 1, TEXT_CHARS).alias("text"),
        F.col("crawl_pos"),
    ).cast(EXAMPLE)


def none() -> Column:
    """The example of a row no example is picked from."""
    return F.lit(None).cast(EXAMPLE)


def picks(ex: Column, k: int = K) -> list[Column]:
    """Aggregations over `ex` (example() or none() per row): per seed, the row with the
    smallest hash of its id."""
    return [
        F.min(F.when(ex.isNotNull(), F.struct(F.xxhash64(F.lit(seed), ex["doc_id"]).alias("h"),
                                               ex.alias("e")))).alias(f"p{seed}")
        for seed in range(k)
    ]  # fmt: skip


def chosen(groups: list[tuple[str, Row]], k: int = K) -> dict[str, list[dict]]:
    """{group: [example...]} from (group, aggregated row) pairs; rows of one group name merge
    (the smaller hash per seed wins, as one aggregation's would)."""
    best: dict[str, dict[int, tuple]] = {}
    for key, r in groups:
        for seed in range(k):
            p = r[f"p{seed}"]
            if p is None:
                continue
            have = best.setdefault(key, {}).get(seed)
            if have is None or (p["h"], p["e"]["doc_id"]) < (have["h"], have["e"]["doc_id"]):
                best[key][seed] = p
    out: dict[str, list[dict]] = {}
    for key, by_seed in best.items():
        seen = {}
        for p in by_seed.values():
            e = p["e"]
            seen[e["doc_id"]] = {"id": e["doc_id"], "url": e["url"], "detail": e["detail"],
                                 "text": e["text"], "pos": e["crawl_pos"]}  # fmt: skip
        out[key] = sorted(seen.values(), key=lambda e: e["id"])
    return dict(sorted(out.items()))


def fill_texts(docs: DataFrame, picked: dict[str, dict[str, list[dict]]]) -> None:
    """Fill in the text of examples picked from narrow rows, from `docs` (one filtered scan
    of a few positions)."""
    missing = sorted({e["pos"] for g in picked.values() for es in g.values() for e in es
                      if e["text"] is None and e["pos"] is not None})  # fmt: skip
    found = {}
    if missing:
        rows = docs.where(F.col("crawl_pos").isin(missing)).select(
            "crawl_pos", F.substring("text", 1, TEXT_CHARS).alias("text")
        )
        found = {r["crawl_pos"]: r["text"] for r in rows.collect()}
    for g in picked.values():
        for es in g.values():
            for e in es:
                pos = e.pop("pos")
                if e["text"] is None:
                    e["text"] = found.get(pos)
