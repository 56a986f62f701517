"""Small inputs: the same real pages as one WARC and as 500 small WARCs, the small ones read
several to a task (the default) and one file a task (read.splits_per_file: 1, as before the
packing). Alternating rounds in one session, medians; the ratio to the one-WARC run is the
figure (issue 52 measured 2.46x for 500 files before packing).

    .venv/bin/python bench/small_files_bench.py [--files 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.engine.spark import get_spark  # noqa: E402
from curate_pipeline.examples.corpus import folder_pages, write_pages_warc  # noqa: E402
from curate_pipeline.run.orchestrate import run  # noqa: E402

PAGES = ROOT.parent / "shared" / "data" / "extraction" / "wcxb_dev" / "html"
WORK = ROOT / "bench" / "work" / "small_files"
RESULTS = ROOT / "bench" / "results"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not PAGES.is_dir():
        print(f"{PAGES}: not here (docs/real-data.md)", file=sys.stderr)
        return 2
    shutil.rmtree(WORK, ignore_errors=True)
    pages = folder_pages(PAGES)
    one = WORK / "one" / "pages.warc.gz"
    write_pages_warc(one, pages, tag="one")
    small = []
    for k in range(args.files):
        small.append(WORK / "small" / f"pages-{k:04d}.warc.gz")
        write_pages_warc(small[-1], pages[k :: args.files], tag=f"s{k}")
    cfg = load_config(ROOT / "conf" / "default.yaml")
    unpacked = cfg.model_copy(deep=True)
    unpacked.read.splits_per_file = 1
    spark = get_spark(cfg)
    sides = {
        "one_warc": (cfg, [str(one)]),
        "small_packed": (cfg, [str(p) for p in small]),
        "small_one_per_task": (unpacked, [str(p) for p in small]),
    }
    run(cfg, [str(one)], WORK / "warmup", spark)  # JIT, caches, worker start-up
    seconds: dict[str, list[float]] = {k: [] for k in sides}
    kept: dict[str, int] = {}
    for r in range(args.rounds):
        for name, (c, inputs) in sides.items():
            out = WORK / f"{name}-{r}"
            t0 = time.perf_counter()
            m = run(c, inputs, out, spark, force=True)
            seconds[name].append(round(time.perf_counter() - t0, 2))
            kept[name] = m["counts"]["kept"]
            print(f"round {r + 1} {name:20} {seconds[name][-1]:7.2f} s  "
                  f"read {m['counts']['read']} kept {kept[name]}", flush=True)  # fmt: skip
    med = {k: statistics.median(v) for k, v in seconds.items()}
    result = {
        "pages": len(pages),
        "files": args.files,
        "cores": spark.sparkContext.defaultParallelism,
        "seconds": seconds,
        "median_seconds": med,
        "ratio_to_one_warc": {k: round(v / med["one_warc"], 2) for k, v in med.items()},
        "kept": kept,
    }
    print(json.dumps(result["ratio_to_one_warc"]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "small_files.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
