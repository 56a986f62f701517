"""Stage `exact_dedup`: keep the first document (smallest crawl_pos) of each normalised-text
fingerprint; the others are `exact_dup:duplicate` with the kept doc_id. Kept rows carry
`exact_copies`, the size of their group."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipeline.config import Config
from pipeline.dedup.normalize import exact_key
from pipeline.schema import spark_schema
from pipeline.stages.arrow_batches import extended_schema, map_batches


def mark_rejected(df: DataFrame, cond, stage: str, reason: str, detail) -> DataFrame:
    """Set the reject columns where `cond` holds (on rows not rejected yet)."""
    hit = cond & F.col("reject_reason").isNull()
    return (
        df.withColumn("reject_stage", F.when(hit, F.lit(stage)).otherwise(F.col("reject_stage")))
        .withColumn("reject_detail", F.when(hit, detail).otherwise(F.col("reject_detail")))
        .withColumn("reject_reason", F.when(hit, F.lit(reason)).otherwise(F.col("reject_reason")))
    )


def exact_dedup(spark: SparkSession, docs: DataFrame, cfg: Config) -> DataFrame:
    schema = extended_schema(docs.schema, [pa.field("exact_key", pa.string())])

    def key(rows: list[dict]) -> list[dict]:
        for r in rows:
            r["exact_key"] = exact_key(r["text"] or "")
        return rows

    keyed = docs.mapInArrow(map_batches(key, schema), spark_schema(schema))
    # Window aggregates: one shuffle, and the Python key function runs once (a groupBy joined
    # back to its own input would run it twice).
    group = Window.partitionBy("exact_key")
    out = keyed.withColumn("_first", F.min(F.struct("crawl_pos", "doc_id")).over(group))
    out = out.withColumn("_n", F.count("*").over(group))
    out = mark_rejected(
        out,
        F.col("crawl_pos") != F.col("_first.crawl_pos"),
        "exact_dup",
        "duplicate",
        F.concat(F.lit("kept "), F.col("_first.doc_id")),
    )
    return out.withColumn(
        "exact_copies", F.when(F.col("reject_reason").isNull(), F.col("_n").cast("int"))
    ).drop("_first", "_n")
