"""Our pipeline in one long-lived driver: the first run pays Spark's start-up and first-job
warm-up, the later ones show what each further input costs in a long job. The extraction
cache is per run, so a later run extracts every page again (nothing carries over).

    python bench/e2e_ours_warm.py CONFIG OUTPUT RUNS WARC [WARC ...]   -> JSON on stdout
"""

from __future__ import annotations

import json
import logging
import sys
import time

from curate_pipeline.config import load_config
from curate_pipeline.engine.spark import get_spark
from curate_pipeline.run.orchestrate import run


def main() -> None:
    config, output, runs, *warcs = sys.argv[1:]
    logging.basicConfig(level=logging.WARNING)
    cfg = load_config(config)
    t0 = time.perf_counter()
    spark = get_spark(cfg)
    startup = time.perf_counter() - t0
    out = []
    for _ in range(int(runs)):
        m = run(cfg, warcs, output, spark, force=True)
        out.append({"seconds": m["seconds"],
                    "stages": {s["name"]: s["seconds"] for s in m["stages"]}})  # fmt: skip
    spark.stop()
    print(json.dumps({"startup_seconds": round(startup, 3), "runs": out}))


if __name__ == "__main__":
    main()
