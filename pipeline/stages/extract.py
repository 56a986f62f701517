"""Stage `extract`: decode each candidate page and extract its main text with trafilatura.

Extraction dominates the run; it runs in the read tasks (each file is split over several
tasks by `read_warcs`), so no shuffle of raw HTML stands between reading and extracting.
"""

from __future__ import annotations

from functools import partial

from pyspark.sql import DataFrame

from pipeline.config import Config
from pipeline.extract import process_record
from pipeline.schema import DOC_SCHEMA, spark_schema
from pipeline.stages.arrow_batches import map_rows


def extract(records: DataFrame, cfg: Config) -> DataFrame:
    """RECORD_SCHEMA rows to DOC_SCHEMA rows; decode/extract failures become rejections."""
    fn = partial(process_record, s=cfg.extract, max_decoded_bytes=cfg.read.max_decoded_bytes)
    return records.mapInArrow(
        map_rows(fn, DOC_SCHEMA, cfg.spark.arrow_batch_rows), spark_schema(DOC_SCHEMA)
    )
