"""Document ids unique within a run, whatever the splitting.

A row's `doc_id` is its WARC-Record-ID, and those repeat: wget has been seen to reuse one, a
file concatenated with itself repeats every one, the same capture can sit in two inputs. A
reader task cannot know what other tasks saw, so uniqueness is settled here, over the whole
documents pass: the first occurrence in crawl order keeps the id, each later one becomes
`id#FILE:OFFSET` (its input file index and its place in that file, from `crawl_pos`). One
aggregation of two columns; the join only runs when some id repeats.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipeline.document.warc.records import OFFSET_BITS


def unique_ids(docs: DataFrame) -> DataFrame:
    repeated = (
        docs.groupBy("doc_id")
        .agg(F.count(F.lit(1)).alias("_n"), F.min("crawl_pos").alias("_first"))
        .where(F.col("_n") > 1)
        .select("doc_id", "_first")
    )
    if not repeated.take(1):
        return docs
    pos = F.col("crawl_pos")
    suffix = F.concat(
        F.lit("#"),
        F.shiftright(pos, OFFSET_BITS).cast("string"),
        F.lit(":"),
        (pos.bitwiseAND(F.lit((1 << OFFSET_BITS) - 1))).cast("string"),
    )
    later = F.col("_first").isNotNull() & (pos != F.col("_first"))
    return (
        docs.join(repeated, "doc_id", "left")
        .withColumn("doc_id", F.when(later, F.concat("doc_id", suffix)).otherwise(F.col("doc_id")))
        .select(docs.columns)
    )
