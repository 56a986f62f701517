"""The SparkSession: one per process, configured from the `spark` section of the config."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from pipeline.config import Config


def under_spark_submit() -> bool:
    """True when this Python process was started by spark-submit (it owns master and JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_spark(cfg: Config, master: str | None = None) -> SparkSession:
    builder = SparkSession.builder.appName(cfg.spark.app_name)
    if master or not under_spark_submit():
        builder = builder.master(master or cfg.spark.master)
    local = (master or cfg.spark.master).startswith("local") and not under_spark_submit()
    if local:
        # Workers must run this interpreter (the venv's), not whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    builder = builder.config(
        "spark.sql.execution.arrow.maxRecordsPerBatch", str(cfg.spark.arrow_batch_rows)
    )
    for key, value in cfg.spark.conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
