"""Document ids unique within a run, whatever the splitting.

A row's `doc_id` is its WARC-Record-ID, and those repeat: wget has been seen to reuse one, a
file concatenated with itself repeats every one, the same capture can sit in two inputs. A
reader task cannot know what other tasks saw, so uniqueness is settled here, over the whole
documents pass: the first occurrence in crawl order keeps the id, each later one becomes
`id#FILE:OFFSET` (its input file index and its place in that file, from `crawl_pos`). One
aggregation of two columns; the join only runs when some id repeats, and then the repeated
ids (narrow: id and first position) are broadcast to the rows, which stay where they are.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from curate_pipeline.document.warc.records import OFFSET_BITS
from curate_pipeline.engine.compat import from_arrow, to_arrow

log = logging.getLogger(__name__)
# Repeated ids broadcast to the rows, at most (~70 bytes each: ~70 MB). A crawl repeats a few
# ids (wget); a listing naming the same files twice repeats them all, and above this the rows
# are joined by a shuffle instead (correct, slower).
BROADCAST_MAX = 1_000_000


# Up to this many rows the ids are counted on the driver from one collect of (id, position),
# ~100 bytes a row: one job where the aggregation and its count took four.
LOCAL_MAX_ROWS = 200_000


def _repeated_on_driver(docs: DataFrame) -> DataFrame | None:
    """The repeated ids and their first positions, counted on the driver (None: none)."""
    table = to_arrow(docs.select("doc_id", "crawl_pos"))
    counted = table.group_by("doc_id").aggregate([("crawl_pos", "count"), ("crawl_pos", "min")])
    again = counted.filter(pc.greater(counted.column("crawl_pos_count"), 1))
    if again.num_rows == 0:
        return None
    return from_arrow(docs.sparkSession, pa.table({
        "doc_id": again.column("doc_id"), "_first": again.column("crawl_pos_min")}))  # fmt: skip


def unique_ids(docs: DataFrame, broadcast_max: int = BROADCAST_MAX,
               rows: int | None = None) -> DataFrame:  # fmt: skip
    """`docs` with later copies of a repeated id renamed; `rows`: how many rows `docs` has
    (the documents pass counted them), up to LOCAL_MAX_ROWS counted on the driver."""
    if rows is not None and rows <= LOCAL_MAX_ROWS:
        local = _repeated_on_driver(docs)
        if local is None:
            return docs
        repeated, n = local, 0
    else:
        repeated = (
            docs.groupBy("doc_id")
            .agg(F.count(F.lit(1)).alias("_n"), F.min("crawl_pos").alias("_first"))
            .where(F.col("_n") > 1)
            .select("doc_id", "_first")
        )
        repeated = repeated.persist(StorageLevel.MEMORY_AND_DISK)
        n = repeated.count()
        if not n:
            repeated.unpersist()
            return docs
    if n <= broadcast_max:
        repeated = F.broadcast(repeated)
    else:
        log.warning(
            "%d document ids repeat (above %d): renaming them moves the rows through a "
            "shuffle; does the input list the same files twice?",
            n,
            broadcast_max,
        )
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
