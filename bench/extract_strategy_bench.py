"""Extraction strategies against single extractors: F1 per page type and CPU per page.

Every page of the WCXB dev split (1,495 with a `main_content`) and the 181 scrapinghub AEB
news pages goes through the pipeline's own `extract_text` with each setting in turn, in one
process per core, the settings' order rotated page by page so machine noise hits all alike.
Per setting: CPU ms per page (time.process_time, which ticks in 4 ms steps here: its mean is
unbiased, its median is not) and wall ms (median, p99), and each one's ratio to trafilatura's
measured on the same pages in the same run.

F1 is bag-of-words F1 against the ground truth (the benchmarks' measure). On WCXB dev the
strategies' F1 is cross-validated: each page scored with the choice a model trained on the
other folds' sites made (bench/extract_chooser_train.py writes those choices); the shipped
model's in-sample figure is printed beside it. AEB was never used in training: its figures
are the shipped model's, held out. Core-hours per snapshot: mean CPU x 3 billion pages.

    python bench/extract_candidates.py && python bench/extract_chooser_train.py
    python bench/extract_strategy_bench.py [--limit N] [--workers 2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extract_bench import prf  # noqa: E402
from extract_candidates import OUT as CANDIDATES_FILE  # noqa: E402
from extract_candidates import html_of, pages  # noqa: E402
from extract_chooser_train import CV_CHOICES  # noqa: E402

from pipeline.config import ExtractConf  # noqa: E402
from pipeline.document.extract import (  # noqa: E402
    ExtractFailed,
    ExtractTimeout,
    extract_text,
)

SETTINGS = {
    "trafilatura": ExtractConf(strategy="single", backend="trafilatura"),
    "resiliparse": ExtractConf(strategy="single", backend="resiliparse"),
    "fast": ExtractConf(strategy="fast"),
    "balanced": ExtractConf(strategy="balanced"),
    "best": ExtractConf(strategy="best"),
}
SNAPSHOT_PAGES = 3e9
OUT = ROOT / "bench" / "results" / "extract_strategies.json"


def run(args: tuple[int, dict]) -> dict:
    i, page = args
    html = html_of(page)
    names = list(SETTINGS)
    names = names[i % len(names) :] + names[: i % len(names)]  # rotate the order
    out = {"id": page["id"], "type": page["type"], "truth": page["truth"], "s": {}}
    for name in names:
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            text, used = extract_text(html, page["url"], SETTINGS[name])
        except (ExtractTimeout, ExtractFailed) as e:  # the page's verdict: no text
            text, used = None, f"failed: {type(e).__name__}"
        cpu, wall = (time.process_time() - c0) * 1000, (time.perf_counter() - w0) * 1000
        out["s"][name] = {"f1": prf(text or "", page["truth"])[2], "cpu": cpu, "wall": wall,
                          "used": used}  # fmt: skip
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    todo = pages(args.limit)
    # warm each setting once (imports, model loading) before any page is timed
    for conf in SETTINGS.values():
        extract_text(html_of(todo[0]), todo[0]["url"], conf)
    with Pool(args.workers, initializer=_warm, initargs=(todo[0],)) as pool:
        results = pool.map(run, list(enumerate(todo)), chunksize=8)
    cv = json.loads(CV_CHOICES.read_text())
    cand = {}
    for line in gzip.open(CANDIDATES_FILE, "rt"):
        r = json.loads(line)
        cand[r["id"]] = r
    table: dict = {}
    base = {r["id"]: r["s"]["trafilatura"] for r in results}
    for name in SETTINGS:
        dev = [r for r in results if r["id"].startswith("wcxb/")]
        aeb = [r for r in results if r["type"] == "aeb"]

        def f1_dev(r: dict, name: str = name) -> float:
            if name in cv and r["id"] in cv[name]:  # the cross-validated choice
                picked = cand[r["id"]][cv[name][r["id"]]]["text"] or ""
                return prf(picked, r["truth"])[2]
            return r["s"][name]["f1"]

        by_type: dict = defaultdict(list)
        for r in dev:
            by_type[r["type"]].append(f1_dev(r))
        cpu = [r["s"][name]["cpu"] for r in results]
        wall = [r["s"][name]["wall"] for r in results]
        wall_ratio = [r["s"][name]["wall"] / max(1e-6, base[r["id"]]["wall"]) for r in results]
        table[name] = {
            "dev_f1": round(statistics.mean(sum(by_type.values(), [])), 4),
            "dev_f1_in_sample": round(statistics.mean(r["s"][name]["f1"] for r in dev), 4),
            "dev_f1_by_type": {t: round(statistics.mean(v), 4) for t, v in sorted(by_type.items())},
            "aeb_f1": round(statistics.mean(r["s"][name]["f1"] for r in aeb), 4),
            "cpu_ms_mean": round(statistics.mean(cpu), 2),
            "wall_ms_median": round(statistics.median(wall), 2),
            "wall_ms_p99": round(pct(wall, 0.99), 1),
            "cpu_ratio_mean": round(
                statistics.mean(cpu) / statistics.mean([base[r["id"]]["cpu"] for r in results]), 3
            ),  # fmt: skip
            "wall_ratio_median": round(statistics.median(wall), 2)
            and round(
                statistics.median(wall) / statistics.median([b["wall"] for b in base.values()]), 3
            ),
            "wall_ratio_per_page_median": round(statistics.median(wall_ratio), 3),
            "core_hours_per_snapshot": round(statistics.mean(cpu) / 1000 * SNAPSHOT_PAGES / 3600),
            "used": dict(sorted(_count(r["s"][name]["used"] for r in results).items())),
        }
    report = {"pages": len(results), "workers": args.workers, "settings": table}
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    types = list(table["trafilatura"]["dev_f1_by_type"])
    print(f"{'':12s} {'dev F1':>7s} {'AEB F1':>7s} {'CPU ms':>7s} {'x traf':>7s} {'wall p50':>8s} "
          f"{'p99':>6s} {'x traf':>6s} " + " ".join(f"{t[:7]:>7s}" for t in types))  # fmt: skip
    for name, t in table.items():
        print(f"{name:12s} {t['dev_f1']:7.3f} {t['aeb_f1']:7.3f} {t['cpu_ms_mean']:7.1f} "
              f"{t['cpu_ratio_mean']:7.2f} {t['wall_ms_median']:8.1f} {t['wall_ms_p99']:6.0f} "
              f"{t['wall_ratio_median']:6.2f} "
              + " ".join(f"{t['dev_f1_by_type'][k]:7.3f}" for k in types))  # fmt: skip
    print(f"wrote {OUT}")


def _warm(page: dict) -> None:
    for conf in SETTINGS.values():
        extract_text(html_of(page), page["url"], conf)


def _count(values) -> dict:
    out: dict = defaultdict(int)
    for v in values:
        out[str(v).split(" (")[0]] += 1
    return out


if __name__ == "__main__":
    main()
