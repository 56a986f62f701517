"""A few example documents per rejection reason and per kept source, for the report: what a
stage drops, read before trusting its threshold.

Chosen deterministically and without collecting rows: per group, the row with the smallest
xxhash64 of its id under each of `k` seeds (an aggregation of struct minimums), so the same
input gives the same examples whatever the partitioning, and only k rows per group reach the
driver. The corpus stages keep narrow rows (no text): their examples' text is looked up in the
documents pass by crawl position, for the few rows picked."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

TEXT_CHARS = 300  # of each example's text


def _pick(df: DataFrame, key: Column, k: int) -> dict[str, list[dict]]:
    rows = df.select(
        key.alias("key"),
        "doc_id",
        "url",
        F.substring(F.coalesce("reject_detail", F.lit("")), 1, 300).alias("detail"),
        F.substring("text", 1, TEXT_CHARS).alias("text"),
        "crawl_pos",
    )
    picks = [
        F.min(
            F.struct(
                F.xxhash64(F.lit(seed), "doc_id").alias("h"),
                "doc_id",
                "url",
                "detail",
                "text",
                "crawl_pos",
            )  # fmt: skip
        ).alias(f"p{seed}")
        for seed in range(k)
    ]
    out: dict[str, list[dict]] = {}
    for r in rows.groupBy("key").agg(*picks).collect():
        seen: dict[str, dict] = {}
        for seed in range(k):
            p = r[f"p{seed}"]
            if p is not None and p["doc_id"] not in seen:
                seen[p["doc_id"]] = {"id": p["doc_id"], "url": p["url"], "detail": p["detail"],
                                     "text": p["text"], "pos": p["crawl_pos"]}  # fmt: skip
        out[r["key"]] = sorted(seen.values(), key=lambda e: e["id"])
    return dict(sorted(out.items()))


def _texts(docs: DataFrame, picked: dict[str, dict[str, list[dict]]]) -> None:
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


def examples(
    frames: list[DataFrame], docs: DataFrame | None = None, k: int = 3
) -> dict[str, dict[str, list[dict]]]:
    """{"rejected": {stage:reason: [example...]}, "kept": {source: [example...]}}; `frames`
    as for outcomes.count_outcomes (the documents pass, then each corpus stage), `docs` the
    documents pass (where narrow frames' texts are looked up; default frames[0])."""
    cols = ["doc_id", "url", "reject_stage", "reject_reason", "reject_detail", "crawl_pos"]

    def text(f: DataFrame):
        return F.col("text") if "text" in f.columns else F.lit(None).cast("string").alias("text")

    dropped = reduce(
        DataFrame.unionByName,
        [f.where(F.col("reject_reason").isNotNull()).select(*cols, text(f)) for f in frames],
    )
    last = frames[-1]
    kept = last.where(F.col("reject_reason").isNull())
    source = F.coalesce(F.col("source"), F.lit("")) if "source" in last.columns else F.lit("")
    picked = {
        "rejected": _pick(dropped, F.concat_ws(":", "reject_stage", "reject_reason"), k),
        "kept": _pick(kept.select(*cols, text(last), source.alias("source")), F.col("source"), k),
    }
    _texts(frames[0] if docs is None else docs, picked)
    return picked
