"""Spark's Python worker daemon, with the pipeline's heavy modules imported before it forks.

Spark forks one Python worker per task slot from a daemon process (`pyspark.daemon`); each
fresh worker would import trafilatura, lxml, numpy, pyarrow and the pipeline itself (~0.5 s,
on every core at once, at the start of every run). Importing them in the daemon, before the
first fork, lets every worker inherit them. Local mode sets `spark.python.daemon.module` to
this module (pipeline/spark.py). An import that fails here is left for the task to report.
"""

from __future__ import annotations

import importlib

PRELOAD = (
    "pyarrow",
    "numpy",
    "pipeline.extract",
    "pipeline.langid",
    "pipeline.text.rules",
    "pipeline.dedup.minhash",
    "pipeline.dedup.normalize",
    "pipeline.warc.records",
    "pipeline.stages.extract",
)


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  the task importing it will raise with its traceback
            pass


if __name__ == "__main__":
    preload()
    from pyspark import daemon

    daemon.manager()
