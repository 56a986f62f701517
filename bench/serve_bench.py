"""A `curate serve` cycle's latency (issue 65): one session (local[2], conf/default.yaml)
watching a folder; the first cycle curates the project's sample WARC and 113 synthetic pages;
then, `--files` times, one new small file (`--pages` pages, a tenth of them copies of earlier
pages) lands and a cycle curates it through the added-inputs path with the corpus stages
(dedup against what was published, the mixture, shards, the report), as serve does when
`corpus_every` has passed. Each cycle's wall time and Spark jobs (Spark's REST API) are
printed; the median of the cycles after the first is the figure. Writes
bench/results/serve.json.

    .venv/bin/python bench/serve_bench.py [--files 5] [--pages 40]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from jobs_bench import jobs  # noqa: E402

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.engine.spark import get_spark  # noqa: E402
from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc  # noqa: E402
from curate_pipeline.examples.sample import write_sample_warc  # noqa: E402
from curate_pipeline.run.serve import Server  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5)
    ap.add_argument("--pages", type=int, default=40)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    watched = work / "in"
    watched.mkdir()
    write_sample_warc(watched / "000-sample.warc.gz")
    write_pages_warc(watched / "001-pages.warc.gz", synthetic_pages(113, seed=7))
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.spark.conf["spark.ui.enabled"] = "true"  # the REST API the jobs are read from
    spark = get_spark(cfg, "local[2]")
    server = Server(cfg, [str(watched)], str(work / "out"), spark, every=0, corpus_every=0)
    cycles = []
    try:
        for k in range(args.files + 1):
            if k:  # a new small file lands; its stamp holds still for one look
                pages = with_duplicates(synthetic_pages(args.pages, seed=100 + k), share=0.1,
                                        seed=k)  # fmt: skip
                write_pages_warc(watched / f"{k + 1:03d}-new.warc.gz", pages, tag=f"new{k}")
            server.ready_files()
            before = {j["jobId"] for j in jobs(spark)}
            t0 = time.perf_counter()
            ran = server.cycle()
            wall = time.perf_counter() - t0
            n_jobs = len([j for j in jobs(spark) if j["jobId"] not in before])
            cycles.append({"cycle": k, "ran": ran, "seconds": round(wall, 2), "jobs": n_jobs})
            print(json.dumps(cycles[-1]), flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    later = [c["seconds"] for c in cycles[1:]]
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "new_file_pages": args.pages,
        "cycles": cycles,
        "median_cycle_seconds_after_first": round(statistics.median(later), 2),
        "median_jobs_after_first": statistics.median(c["jobs"] for c in cycles[1:]),
    }
    print(f"serve cycle after the first: median {result['median_cycle_seconds_after_first']} s, "
          f"{result['median_jobs_after_first']} Spark jobs")  # fmt: skip
    out = ROOT / "bench" / "results" / "serve.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
