"""A few example documents per rejection reason and per kept source, for the report: what a
stage drops, read before trusting its threshold.

Chosen deterministically and without collecting rows: per group, the row with the smallest
xxhash64 of its id under each of `k` seeds (an aggregation of struct minimums), so the same
input gives the same examples whatever the partitioning, and only k rows per group reach the
driver."""

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
    )
    picks = [
        F.min(
            F.struct(
                F.xxhash64(F.lit(seed), "doc_id").alias("h"), "doc_id", "url", "detail", "text"
            )
        ).alias(f"p{seed}")  # fmt: skip
        for seed in range(k)
    ]
    out: dict[str, list[dict]] = {}
    for r in rows.groupBy("key").agg(*picks).collect():
        seen: dict[str, dict] = {}
        for seed in range(k):
            p = r[f"p{seed}"]
            if p is not None and p["doc_id"] not in seen:
                seen[p["doc_id"]] = {"id": p["doc_id"], "url": p["url"],
                                     "detail": p["detail"], "text": p["text"]}  # fmt: skip
        out[r["key"]] = sorted(seen.values(), key=lambda e: e["id"])
    return dict(sorted(out.items()))


def examples(frames: list[DataFrame], k: int = 3) -> dict[str, dict[str, list[dict]]]:
    """{"rejected": {stage:reason: [example...]}, "kept": {source: [example...]}}; `frames`
    as for outcomes.count_outcomes (the documents pass, then each corpus stage)."""
    cols = ["doc_id", "url", "reject_stage", "reject_reason", "reject_detail", "text"]
    dropped = reduce(
        DataFrame.unionByName,
        [f.where(F.col("reject_reason").isNotNull()).select(*cols) for f in frames],
    )
    last = frames[-1]
    kept = last.where(F.col("reject_reason").isNull())
    source = F.coalesce(F.col("source"), F.lit("")) if "source" in last.columns else F.lit("")
    return {
        "rejected": _pick(dropped, F.concat_ws(":", "reject_stage", "reject_reason"), k),
        "kept": _pick(kept.select(*cols, source.alias("source")), F.col("source"), k),
    }
