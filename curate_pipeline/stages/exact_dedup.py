"""Stage `exact_dedup`: keep the first document (smallest crawl_pos) of each normalised-text
fingerprint; the others are `exact_dup:duplicate` with the kept doc_id. Kept rows carry
`exact_copies`, the size of their group."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from curate_pipeline.config import Config
from curate_pipeline.document.dedup.normalize import exact_key
from curate_pipeline.engine.compat import to_arrow
from curate_pipeline.stages.arrow_batches import attach
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


def groups_on_driver(narrow: DataFrame) -> pa.Table:
    """The keys held by more than one document, with their first (crawl_pos, doc_id) and
    their count, from one collect; a key held once needs no row (its document is first)."""
    table = to_arrow(narrow).filter(pc.is_valid(pc.field("exact_key")))
    table = table.sort_by([("exact_key", "ascending"), ("crawl_pos", "ascending")])
    keys = table.column("exact_key").combine_chunks()
    n = len(keys)
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = pc.not_equal(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, n))
    pick = pa.array(starts[sizes > 1], pa.int64())
    first = pa.StructArray.from_arrays(
        [table.column(c).combine_chunks().take(pick) for c in ("crawl_pos", "doc_id")],
        names=["crawl_pos", "doc_id"],
    )
    return pa.table({"exact_key": keys.take(pick), "_first": first,
                     "_n": pa.array(sizes[sizes > 1], pa.int64())})  # fmt: skip


def exact_dedup(spark: SparkSession, docs: DataFrame, cfg: Config,
                rows: int | None = None) -> DataFrame:  # fmt: skip
    """The corpus half: keep the first of each `exact_key` (computed here if `docs` lacks it).
    `rows`: at most this many documents are given (the documents pass counted them): up to
    `exact_dedup.local_max_documents` the groups are counted on the driver.

    The verdicts come from the narrow columns (key, crawl_pos, doc_id) in one aggregation,
    which combines map-side: a template page with a million copies is one small row per task
    before the shuffle, never a million-row group in one task (a window over whole rows was).
    The rows then meet their group's verdict in a join whose other side holds one row per
    key, so a hot key streams through it in bounded memory."""
    keyed = docs
    if "exact_key" not in docs.columns:  # computed once, not again for the join
        keyed = cut_lineage(transform(docs, "exact_dup", key_step(spark, cfg)))
    narrow = keyed.select("exact_key", "crawl_pos", "doc_id")
    if rows is not None and rows <= cfg.exact_dedup.local_max_documents:
        # the groups ship with the tasks: no join, so no broadcast job (the columns in the
        # order the join gives them)
        out = attach(keyed, groups_on_driver(narrow), "exact_key").select(
            "exact_key", *(c for c in keyed.columns if c != "exact_key"), "_first", "_n"
        )
    else:
        groups = narrow.groupBy("exact_key").agg(
            F.min(F.struct("crawl_pos", "doc_id")).alias("_first"), F.count("*").alias("_n")
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
              passed="no exact duplicate", sized=True)  # fmt: skip
