"""The driver JVM's heap sizing in local mode, side by side: `curate run` on the e2e benchmark
WARC (2,057 records) with the JVM options of conf/default.yaml against the same options
without the initial-heap settings, alternating, `--rounds` each, fresh processes.

The JVM's initial heap is 1/64 of the machine's memory by default (376 MiB on 24 GB) and the
serial collector sizes its young generation from it: eden alone is then ~125 MiB, all of it
touched between collections. A 64 MiB initial heap that grows on demand (and gives back what
it does not use, MaxHeapFreeRatio) keeps the same maximum (spark.driver.memory).

Reports medians of wall time and peak PSS per role (driver's Python, JVM, Spark's Python
workers), and whether the kept sets are equal. Writes bench/results/jvm_heap.json.

    python bench/jvm_heap_bench.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pss import PeakPss  # noqa: E402

from curate_pipeline.outputs.publish.versions import read_rows  # noqa: E402

WORK = ROOT / "bench" / "work" / "jvm_heap"
WARCS = sorted((ROOT / "bench" / "work" / "e2e" / "warc").glob("*.warc.gz"))
CURATE = str(Path(sys.executable).parent / "curate")
OPTS_KEY = "spark.driver.extraJavaOptions"
HEAP_FLAGS = ("-Xms", "-XX:MinHeapFreeRatio", "-XX:MaxHeapFreeRatio")


def variants() -> dict[str, str]:
    default = yaml.safe_load((ROOT / "conf" / "default.yaml").read_text())
    opts = default["spark"]["local_conf"][OPTS_KEY]
    without = " ".join(o for o in opts.split() if not o.startswith(HEAP_FLAGS))
    return {"default": opts, "jvm_default_heap": without}


def run(name: str, opts: str) -> dict:
    cfg = yaml.safe_load((ROOT / "bench" / "work" / "e2e" / "ours.yaml").read_text())
    cfg["spark"]["local_conf"][OPTS_KEY] = opts
    conf = WORK / f"{name}.yaml"
    conf.write_text(yaml.safe_dump(cfg))
    out = WORK / name
    cmd = [CURATE, "run", "--config", str(conf), "--input", *map(str, WARCS),
           "--output", str(out), "--force"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    sampler = PeakPss(proc.pid, every=0.5)
    proc.wait()
    wall = time.perf_counter() - t0
    peaks = sampler.stop()
    if proc.returncode:
        raise RuntimeError(f"{name}: curate failed ({proc.returncode})")
    kept = sorted(r["id"] for r in read_rows(out, "data", ["id"]))
    return {"seconds": round(wall, 2), "peak_pss_mib": peaks,
            "peak_total_mib": sum(peaks.values()), "kept": kept}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not WARCS:
        sys.exit("bench/work/e2e/warc is empty: run bench/e2e_bench.py once to build it")
    WORK.mkdir(parents=True, exist_ok=True)
    opts = variants()
    runs: dict[str, list[dict]] = {k: [] for k in opts}
    for r in range(args.rounds):
        for name in opts if r % 2 == 0 else reversed(list(opts)):
            res = run(name, opts[name])
            runs[name].append(res)
            print(f"round {r + 1} {name}: {res['seconds']} s, peak {res['peak_pss_mib']}")
    kept = {k: v[-1].pop("kept") for k, v in runs.items()}
    for v in runs.values():
        for res in v:
            res.pop("kept", None)
    summary = {
        name: {
            "java_options": opts[name],
            "median_seconds": statistics.median(x["seconds"] for x in v),
            "median_peak_total_mib": statistics.median(x["peak_total_mib"] for x in v),
            "median_peak_pss_mib": {
                role: statistics.median(x["peak_pss_mib"].get(role, 0) for x in v)
                for role in v[0]["peak_pss_mib"]
            },
            "runs": v,
        }
        for name, v in runs.items()
    }
    a, b = summary["default"], summary["jvm_default_heap"]
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "records": 2057,
        "rounds": args.rounds,
        "variants": summary,
        "wall_ratio_default_over_jvm_default_heap": round(
            a["median_seconds"] / b["median_seconds"], 3),
        "peak_saved_mib": b["median_peak_total_mib"] - a["median_peak_total_mib"],
        "kept_sets_equal": kept["default"] == kept["jvm_default_heap"],
        "kept": len(kept["default"]),
    }  # fmt: skip
    out = ROOT / "bench" / "results" / "jvm_heap.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "variants"}, indent=2))
    for name, s in summary.items():
        print(f"{name}: {s['median_seconds']} s, peak {s['median_peak_pss_mib']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
