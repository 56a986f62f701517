"""Stage `extract`: decode each candidate page and extract its main text with trafilatura.

Extraction dominates the run. It runs inside the read tasks (which split large files by byte
range), so the raw HTML goes from the WARC to trafilatura without a shuffle or a trip
through the JVM; only text and the ledger fields leave Python.
"""

from __future__ import annotations

import uuid
from functools import partial

from pyspark.sql import DataFrame, SparkSession

from pipeline.config import Config
from pipeline.extract import process_record
from pipeline.schema import DOC_SCHEMA
from pipeline.stages.read import read_warcs


def read_and_extract(
    spark: SparkSession, files: list[str], cfg: Config, splits_per_file: int
) -> DataFrame:
    """DOC_SCHEMA rows for every record of `files`; decode/extract failures are rejections."""
    # One cache scope per run: payloads repeated within this run are extracted once.
    extract = partial(process_record, s=cfg.extract, read=cfg.read, scope=uuid.uuid4().hex)
    return read_warcs(spark, files, cfg, splits_per_file, then=extract, schema=DOC_SCHEMA)
