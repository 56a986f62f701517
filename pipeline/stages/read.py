"""Stage `read`: WARC files to one row per record, one Spark task per file, streamed."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pipeline.config import Config
from pipeline.schema import RECORD_SCHEMA, spark_schema
from pipeline.stages.arrow_batches import rows_to_batches
from pipeline.streams import open_stream
from pipeline.warc.records import RecordPolicy, file_error_row, iter_warc_rows


class UnreadableInput(RuntimeError):
    pass


def read_file_rows(index: int, path: str, cfg: Config) -> Iterator[dict]:
    """All rows of one file; an unopenable file is one ledger row or, by policy, an error."""
    policy = RecordPolicy(
        max_record_bytes=cfg.read.max_record_bytes,
        html_content_types=tuple(cfg.read.html_content_types),
        accept_status=tuple(cfg.read.accept_status),
        reject_truncated=cfg.read.reject_truncated,
    )
    try:
        stream = open_stream(
            path,
            retries=cfg.input.http_retries,
            backoff_s=cfg.input.http_backoff_s,
            timeout_s=cfg.input.http_timeout_s,
        )
    except OSError as e:
        if cfg.input.on_unreadable == "fail":
            raise UnreadableInput(
                f"input {path} cannot be opened: {e} "
                "(fix the path, or set input.on_unreadable: record to skip it)"
            ) from e
        yield file_error_row(index, path, "unreadable_file", f"{type(e).__name__}: {e}"[:500])
        return
    with stream:
        for row in iter_warc_rows(stream, index, path, policy):
            if row["reject_reason"] == "unreadable_file" and cfg.input.on_unreadable == "fail":
                raise UnreadableInput(
                    f"input {path}: {row['reject_detail']} "
                    "(set input.on_unreadable: record to keep going past broken files)"
                )
            yield row


def read_warcs(spark: SparkSession, files: list[str], cfg: Config) -> DataFrame:
    """A DataFrame of RECORD_SCHEMA rows for every record of `files` (index = crawl order)."""
    listing = spark.createDataFrame(
        spark.sparkContext.parallelize(list(enumerate(files)), numSlices=max(1, len(files))),
        "file_index long, path string",
    )
    max_rows = cfg.spark.arrow_batch_rows

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[dict]:
            for batch in batches:
                for f in batch.to_pylist():
                    yield from read_file_rows(f["file_index"], f["path"], cfg)

        yield from rows_to_batches(rows(), RECORD_SCHEMA, max_rows)

    return listing.mapInArrow(read_partition, spark_schema(RECORD_SCHEMA))
