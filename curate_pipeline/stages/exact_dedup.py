"""Stage `exact_dedup`: keep the first document (smallest crawl_pos) of each normalised-text
fingerprint; the others are `exact_dup:duplicate` with the kept doc_id. Kept rows carry
`exact_copies`, the size of their group."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from curate_pipeline.config import Config
from curate_pipeline.document.dedup.normalize import exact_key
from curate_pipeline.stages.dedup_components import cut_lineage
from curate_pipeline.stages.step import DocumentStep, Stage, Verdict, each, transform

KEY_FIELDS = [pa.field("exact_key", pa.string())]


def mark_rejected(df: DataFrame, cond, stage: str, reason: str, detail) -> DataFrame:
    """Set the reject columns where `cond` holds (on rows not rejected yet)."""
    hit = cond & F.col("reject_reason").isNull()
    return df.withColumns({  # one projection: each expression sees the input's columns
        "reject_stage": F.when(hit, F.lit(stage)).otherwise(F.col("reject_stage")),
        "reject_detail": F.when(hit, detail).otherwise(F.col("reject_detail")),
        "reject_reason": F.when(hit, F.lit(reason)).otherwise(F.col("reject_reason")),
    })  # fmt: skip


def key_step(spark: SparkSession, cfg: Config) -> DocumentStep:  # noqa: ARG001 (no settings)
    """The per-document half: each document's `exact_key` (run in the extract tasks)."""

    def key(doc: dict) -> Verdict:
        doc["exact_key"] = exact_key(doc["text"] or "")
        return None  # the verdicts are the corpus half's

    return DocumentStep(KEY_FIELDS, each(key))


def exact_dedup(spark: SparkSession, docs: DataFrame, cfg: Config) -> DataFrame:
    """The corpus half: keep the first of each `exact_key` (computed here if `docs` lacks it).

    The verdicts come from the narrow columns (key, crawl_pos, doc_id) in one aggregation,
    which combines map-side: a template page with a million copies is one small row per task
    before the shuffle, never a million-row group in one task (a window over whole rows was).
    The rows then meet their group's verdict in a join whose other side holds one row per
    key, so a hot key streams through it in bounded memory."""
    keyed = docs
    if "exact_key" not in docs.columns:  # computed once, not again for the join
        keyed = cut_lineage(transform(docs, "exact_dup", key_step(spark, cfg)))
    groups = (
        keyed.select("exact_key", "crawl_pos", "doc_id")
        .groupBy("exact_key")
        .agg(F.min(F.struct("crawl_pos", "doc_id")).alias("_first"), F.count("*").alias("_n"))
    )
    out = keyed.join(groups, "exact_key", "left")  # a null key (no text) meets no group
    out = mark_rejected(
        out,
        F.col("_first").isNotNull() & (F.col("crawl_pos") != F.col("_first.crawl_pos")),
        "exact_dup",
        "duplicate",
        F.concat(F.lit("kept "), F.col("_first.doc_id")),
    )
    copies = F.coalesce(F.col("_n"), F.lit(1)).cast("int")
    return out.withColumn("exact_copies", F.when(F.col("reject_reason").isNull(), copies)).drop(
        "_first", "_n"
    )


STAGE = Stage("exact_dedup", ledger="exact_dup", step=key_step, corpus=exact_dedup,
              enabled=lambda c: c.exact_dedup.enabled, settings=lambda c: None,
              passed="no exact duplicate")  # fmt: skip
