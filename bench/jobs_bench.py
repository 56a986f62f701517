"""A run's Spark jobs, counted by the step that started them (issue 65: a run's fixed cost).

138 records (the project's sample WARC, 25 records, and 113 synthetic pages), curated twice
in one local[2] session: the first run pays the JVM's and the workers' start-up, the second
is the warm run measured. Its jobs are read from Spark's REST API and grouped by their
description (each corpus step names its jobs: engine/progress.py; the documents pass's and
the publishing's carry none and are "other"). Prints the counts, the warm run's wall time,
and writes bench/results/jobs.json.

    .venv/bin/python bench/jobs_bench.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.engine.spark import get_spark  # noqa: E402
from curate_pipeline.examples.corpus import synthetic_pages, write_pages_warc  # noqa: E402
from curate_pipeline.examples.sample import write_sample_warc  # noqa: E402
from curate_pipeline.run.orchestrate import run  # noqa: E402


def jobs(spark) -> list[dict]:
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/jobs"
    with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 (the session's own UI)
        return json.loads(r.read())


def step_of(job: dict) -> str:
    text = job.get("description") or ""
    return text.split(" (")[0].removeprefix("stage ") if text else "other"


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="jobs-bench-"))
    inputs = [work / "sample.warc.gz", work / "pages.warc.gz"]
    write_sample_warc(inputs[0])
    write_pages_warc(inputs[1], synthetic_pages(113, seed=7))
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.spark.conf["spark.ui.enabled"] = "true"  # the REST API the jobs are read from
    spark = get_spark(cfg, "local[2]")
    try:
        run(cfg, [str(p) for p in inputs], work / "cold", spark)  # start-up paid here
        before = {j["jobId"] for j in jobs(spark)}
        t0 = time.perf_counter()
        manifest = run(cfg, [str(p) for p in inputs], work / "warm", spark)
        wall = time.perf_counter() - t0
        warm = [j for j in jobs(spark) if j["jobId"] not in before]
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    by_step = Counter(step_of(j) for j in warm)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "records": manifest["counts"]["read"],
        "kept": manifest["counts"]["kept"],
        "warm_wall_seconds": round(wall, 2),
        "jobs": len(warm),
        "jobs_by_step": dict(by_step.most_common()),
    }
    print(f"{result['records']} records, warm run {wall:.1f} s, {len(warm)} Spark jobs:")
    for step, n in by_step.most_common():
        print(f"  {n:>4}  {step}")
    out = ROOT / "bench" / "results" / "jobs.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
