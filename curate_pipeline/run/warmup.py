"""Start the Python worker daemon while the driver is still planning.

A cold local run spends ~1 s before its first task does any work: Spark starts the Python
worker daemon, which (curate_pipeline/run/worker_daemon.py) imports trafilatura, lxml, pyarrow and
the
pipeline before it forks workers. None of that depends on the plan, so a trivial
one-task-per-core job started in a thread when the run begins does it in the shadow of the
driver's own start-up; the stages' workers are then forked from a ready daemon.

Daemons are kept per (interpreter, environment). SQL's Arrow UDFs add
SPARK_SIMPLIFIED_TRACEBACK to the environment, so the warm-up job (a plain RDD job: planning a
DataFrame in a cold JVM takes longer than the warm-up saves) sets it the same way, or it would
start a daemon the stages never fork from.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator

from pyspark.sql import SparkSession

from curate_pipeline.config import Config
from curate_pipeline.run.worker_daemon import PRELOAD_ENV

log = logging.getLogger(__name__)

_TRACEBACK_CONF = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"


def _warm(_: Iterator[int]) -> Iterator[int]:
    yield 0  # the daemon that forked this worker has started (and preloaded, in local mode)


def preload_spec(cfg: Config) -> str:
    """What the local worker daemon loads before forking (curate_pipeline/run/worker_daemon.py)."""
    from curate_pipeline.stages.langid import lid_model_path
    from curate_pipeline.stages.tokenize import tokenizer_file

    tokenizer = tokenizer_file(cfg)
    return json.dumps(
        {"langid": str(lid_model_path(cfg)),  # preflight has checked it exists
         "tokenizer": [str(tokenizer or cfg.tokenizer.name), cfg.tokenizer.eot_token]},
        sort_keys=True,
    )  # fmt: skip


# (application, preload spec) already warmed: a later run in the same session (a serve
# cycle, the API's next call) finds the daemon started and skips the job
_warmed: set[tuple[str, str]] = set()


def warm_workers(spark: SparkSession, cfg: Config) -> threading.Thread | None:
    """Run the warm-up job in a daemon thread; returns the thread (join it or not), or None
    when this session's daemon for these models was warmed by an earlier run. The daemon
    also loads the run's language-ID model and tokenizer before forking: the variable
    naming them is part of the environment that keys Spark's daemons, so it is set before any
    stage's function is made, and runs with the same models share a daemon."""
    sc = spark.sparkContext
    n = sc.defaultParallelism
    if spark.conf.get(_TRACEBACK_CONF, "true").lower() == "true":
        sc.environment["SPARK_SIMPLIFIED_TRACEBACK"] = "1"
    spec = preload_spec(cfg)
    sc.environment[PRELOAD_ENV] = spec
    if (sc.applicationId, spec) in _warmed:
        return None
    _warmed.add((sc.applicationId, spec))

    def go() -> None:
        try:
            sc.parallelize(range(n), n).mapPartitions(_warm).collect()
        except Exception as e:  # a warm-up failing must not stop the run: its tasks will say why
            log.debug("worker warm-up failed: %s", e)

    t = threading.Thread(target=go, name="warm-workers", daemon=True)
    t.start()
    return t
