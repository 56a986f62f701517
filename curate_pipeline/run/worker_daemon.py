"""Spark's Python worker daemon, with the pipeline's heavy modules imported before it forks.

Spark forks one Python worker per task slot from a daemon process (`pyspark.daemon`); each
fresh worker would import trafilatura, lxml, numpy, pyarrow and the pipeline itself (~0.5 s,
on every core at once, at the start of every run). Importing them in the daemon, before the
first fork, lets every worker inherit them (workers are forked per task slot and are not
always reused: a fresh fork is the common case). Local mode sets `spark.python.daemon.module` to
this module (curate_pipeline/engine/spark.py). An import that fails here is left for the task to
report.
"""

from __future__ import annotations

import importlib
import json
import os

# Set by curate_pipeline.run.warmup (local mode): the run's language-ID model and tokenizer, which
# every worker loads on first use (~0.2 s each); the daemon loads them once and forks them
# loaded.
PRELOAD_ENV = "CURATE_PRELOAD"

PRELOAD = (
    "pyarrow",
    "numpy",
    "curate_pipeline.document.extract",
    "curate_pipeline.document.langid",
    "curate_pipeline.document.text.rules",
    "curate_pipeline.document.dedup.minhash",
    "curate_pipeline.document.dedup.normalize",
    "curate_pipeline.document.warc.records",
    "curate_pipeline.stages.extract",
)


_PAGE = f"<html><body><article><p>{'Warm words for a page. ' * 20}</p></article></body></html>"


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  the task importing it will raise with its traceback
            pass
    try:  # the first extraction loads trafilatura's lazy parts (~0.1 s); forks inherit them
        importlib.import_module("trafilatura").extract(_PAGE)
    except Exception:  # noqa: BLE001
        pass
    try:
        spec = json.loads(os.environ.get(PRELOAD_ENV) or "{}")
        if spec.get("langid"):
            from curate_pipeline.document.langid import load_fasttext
            from curate_pipeline.engine.models import preload_model

            preload_model(spec["langid"], load_fasttext)
        if spec.get("tokenizer"):
            from curate_pipeline.document.tokenizer import Tokenizer
            from curate_pipeline.engine.models import preload_model
            from curate_pipeline.stages.tokenize import get_tokenizer

            name, eot = spec["tokenizer"]
            if name.endswith(".json"):  # shipped: found by load_shipped under its file name
                preload_model(name, lambda p: Tokenizer(p, eot), variant=str(eot))
            else:
                get_tokenizer(name, eot)
    except Exception:  # noqa: BLE001  loaded again (and failing loudly) where it is used
        pass


if __name__ == "__main__":
    preload()
    from pyspark import daemon

    daemon.manager()
