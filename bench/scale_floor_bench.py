"""Wall time against the physical floor at crawl scale: the crawl of bench/scale_bench.py
(28 files, 23,184 records built from the real pages in ../shared/data: later re-crawls under
new URLs, a one-word edit per page, 15% duplicates), on 2 cores.

- ours: one fresh `curate run` with conf/default.yaml over all files: wall time, records/s,
  peak PSS per role (driver's Python, JVM, Spark's Python workers);
- the floor: trafilatura alone (the same extraction settings) over the same records, in two
  processes side by side, each over half of the files; each process reads and decodes a
  record untimed and times only the extraction. Floor = the summed extraction seconds / 2.

The target of issue 23: ours <= 1.2x the floor at >= 20,000 records.

    python bench/scale_floor_bench.py [--files 28] [--pages-per-file 720] [--prefilter-off-too]

`--prefilter-off-too` adds a second run of ours with `langid.prefilter: false`, after the
first: what the language pre-filter costs on this crawl, where ~97% of pages are English.

Writes bench/results/scale_floor.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shutil
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from e2e_bench import floor_seconds  # noqa: E402
from scale_bench import WORK, build_crawl, curate, manifest  # noqa: E402

from pipeline.config import Config, load_config  # noqa: E402


def extraction_seconds(args: tuple[list[str], dict]) -> tuple[float, int]:
    """The e2e benchmark's floor (bench/e2e_bench.py) over `files`, in a pool process."""
    files, cfg_json = args
    return floor_seconds([Path(f) for f in files], Config.model_validate(cfg_json))


def run_ours(config: Path, files: list[str], out: Path) -> dict:
    """One fresh `curate run`: wall, peak memory, counts, per-stage seconds."""
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    ours = curate(config, files, out)
    m = manifest(out)
    ours.update(records=m["counts"]["read"], kept=m["counts"]["kept"],
                records_per_s=round(m["counts"]["read"] / ours["seconds"], 1),
                stages={s["name"]: s["seconds"] for s in m["stages"]})  # fmt: skip
    return ours


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=28)
    ap.add_argument("--pages-per-file", type=int, default=720)
    ap.add_argument("--prefilter-off-too", action="store_true")
    args = ap.parse_args()
    files = build_crawl(args.files, args.pages_per_file)
    cfg = load_config(ROOT / "conf" / "default.yaml")
    config = WORK / "floor-run.yaml"
    config.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    out = WORK / "runs" / "floor-ours"
    ours = run_ours(config, files, out)
    print("ours", json.dumps(ours), flush=True)
    unfiltered = None
    if args.prefilter_off_too:
        cfg_off = cfg.model_copy(deep=True)
        cfg_off.langid.prefilter = False
        config_off = WORK / "floor-run-no-prefilter.yaml"
        config_off.write_text(yaml.safe_dump(cfg_off.model_dump(mode="json")))
        unfiltered = run_ours(config_off, files, WORK / "runs" / "floor-ours-no-prefilter")
        print("ours, no pre-filter", json.dumps(unfiltered), flush=True)

    halves = [files[0::2], files[1::2]]
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(2) as pool:
        parts = pool.map(extraction_seconds, [(h, cfg.model_dump(mode="json")) for h in halves])
    floor_wall = time.perf_counter() - t0
    summed = sum(s for s, _ in parts)
    floor = summed / 2
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "files": len(files),
        "ours": ours,
        "floor": {
            "extraction_seconds_per_process": [round(s, 1) for s, _ in parts],
            "records_extracted": sum(n for _, n in parts),
            "seconds_on_2_cores": round(floor, 1),
            "wall_of_the_two_processes_incl_reading": round(floor_wall, 1),
        },
        "ours_wall_over_floor": round(ours["seconds"] / floor, 3),
    }
    if unfiltered is not None:
        result["ours_without_prefilter"] = unfiltered
        result["ours_without_prefilter_wall_over_floor"] = round(unfiltered["seconds"] / floor, 3)
    (ROOT / "bench" / "results" / "scale_floor.json").write_text(
        json.dumps(result, indent=2) + "\n"
    )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
