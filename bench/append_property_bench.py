"""The append property on real text, at many random splits (issue 61): a crawl of JSONL files
(real paragraphs from ../shared/data, a tenth exact copies and a tenth one-word edits of
earlier documents: append_e2e_bench.build) cut at random into a first run plus 1-3 appends;
each added file's documents must be decided (kept or dropped) as one run over all the files
decides them, but for the documented exception (tests/append_property.py). All runs on one
local Spark session.

    python bench/append_property_bench.py [--splits 20] [--files 8] [--per-file 400]

Writes bench/results/append_property.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from append_e2e_bench import WORK, build  # noqa: E402
from append_property import decisions, random_cuts, split_differences  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "append_property.json"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--splits", type=int, default=20)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--per-file", type=int, default=400)
    a = p.parse_args()
    from curate_pipeline.config import load_config
    from curate_pipeline.engine.spark import get_spark
    from curate_pipeline.run.orchestrate import run

    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.chunks.files = 1
    spark = get_spark(cfg, "local[2]")
    folder = WORK / f"property-{a.files}x{a.per_file}"
    files = [str(f) for f in build(a.files, a.per_file, folder / "inputs", seed=62)]
    work = folder / "runs"
    shutil.rmtree(work, ignore_errors=True)

    def curate(inputs: list[str], out: Path) -> dict:
        return run(cfg, inputs, out, spark)

    t0 = time.perf_counter()
    curate(files, work / "whole")
    whole = decisions(work / "whole")
    rng = random.Random(61)
    rows = []
    for i in range(a.splits):
        cuts = random_cuts(len(files), rng)
        n, allowed, other = split_differences(curate, files, cuts, work / f"split-{i}", whole)
        rows.append({"cuts": cuts, "compared": n, "documented_differences": len(allowed),
                     "other_differences": other[:10], "examples": allowed[:3]})  # fmt: skip
        print(
            f"split {i:2d} cuts {cuts}: {n} documents compared, {len(allowed)} documented, "
            f"{len(other)} other differences",
            flush=True,
        )
        shutil.rmtree(work / f"split-{i}", ignore_errors=True)
    summary = {
        "files": a.files, "docs_per_file": a.per_file, "splits": a.splits,
        "documents_compared": sum(r["compared"] for r in rows),
        "documented_differences": sum(r["documented_differences"] for r in rows),
        "other_differences": sum(len(r["other_differences"]) for r in rows),
        "splits_passing": sum(not r["other_differences"] for r in rows),
        "seconds": round(time.perf_counter() - t0, 1), "by_split": rows,
    }  # fmt: skip
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "by_split"}, indent=2))


if __name__ == "__main__":
    main()
