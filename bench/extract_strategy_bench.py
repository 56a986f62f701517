"""Extraction strategies against single extractors on four benchmarks: score and CPU per page.

Every page of the four benchmarks (bench/extract_benchmarks.py: WCXB dev, ScrapingHub AEB,
trafilatura's evaluation, Mozilla readability's pages; 2,758 pages) goes through the
pipeline's own `extract_text` with each setting in turn, in one process per core, the
settings' order rotated page by page so machine noise hits all alike. Per setting: CPU ms per
page (time.process_time, which ticks in 4 ms steps here: its mean is unbiased, its median is
not) and wall ms (median, p99), and each one's ratio to trafilatura's measured on the same
pages in the same run.

Scores are each benchmark's own measure. For the strategies two figures: `left_out`, each page
scored with the output of the rule chosen without its benchmark (bench/extract_chooser_train.py
writes those choices), the figure the targets are judged on; and the shipped rule's, run here
(`shipped`). Core-hours per snapshot: mean CPU x 3 billion pages.

    make extract-chooser   # or: extract_candidates.py, extract_chooser_train.py, then this
    python bench/extract_strategy_bench.py [--limit N] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extract_benchmarks import BENCHMARKS, html_of, score  # noqa: E402
from extract_candidates import load_rows  # noqa: E402
from extract_chooser_train import CHOICES  # noqa: E402

from curate_pipeline.config import ExtractConf  # noqa: E402
from curate_pipeline.document.extract import (  # noqa: E402
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
    out = {"id": page["id"], "s": {}}
    for name in names:
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            text, used = extract_text(html, page["url"], SETTINGS[name])
        except (ExtractTimeout, ExtractFailed) as e:  # the page's verdict: no text
            text, used = None, f"failed: {type(e).__name__}"
        cpu, wall = (time.process_time() - c0) * 1000, (time.perf_counter() - w0) * 1000
        out["s"][name] = {"f1": score(page, text), "cpu": cpu, "wall": wall,
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
    rows = load_rows()  # the candidates' cache: pages, their outputs, language groups
    todo = rows[: args.limit] if args.limit else rows
    pages = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in todo]
    # warm each setting once (imports, first-call set-up) before any page is timed
    for conf in SETTINGS.values():
        extract_text(html_of(pages[0]), pages[0]["url"], conf)
    with Pool(args.workers, initializer=_warm, initargs=(pages[0],)) as pool:
        results = pool.map(run, list(enumerate(pages)), chunksize=8)
    choices = json.loads(CHOICES.read_text())
    by_id = {r["id"]: r for r in todo}
    table: dict = {}
    base = {r["id"]: r["s"]["trafilatura"] for r in results}
    for name in SETTINGS:

        def left_out(r: dict, name: str = name) -> float:
            if name in choices:  # the output of the rule chosen without the page's benchmark
                return by_id[r["id"]][choices[name][r["id"]]]["f1"]
            return r["s"][name]["f1"]

        groups: dict = defaultdict(list)
        for r in results:
            page = by_id[r["id"]]
            f, t = left_out(r), r["s"]["trafilatura"]["f1"]
            groups[page["bench"]].append((f, t, r["s"][name]["f1"]))
            groups[f"lang {page['lang_group']}"].append((f, t, r["s"][name]["f1"]))
            if page["bench"] == "wcxb":
                groups[f"wcxb {page['type']}"].append((f, t, r["s"][name]["f1"]))
        cpu = [r["s"][name]["cpu"] for r in results]
        wall = [r["s"][name]["wall"] for r in results]
        traf_cpu = statistics.mean(b["cpu"] for b in base.values())
        figures = {g: {"pages": len(v), "left_out": round(statistics.mean(a for a, _, _ in v), 4),
                       "shipped": round(statistics.mean(c for _, _, c in v), 4),
                       "trafilatura": round(statistics.mean(b for _, b, _ in v), 4)}
                   for g, v in sorted(groups.items())}  # fmt: skip
        gain = [figures[b]["left_out"] - figures[b]["trafilatura"] for b in BENCHMARKS
                if b in figures]  # fmt: skip
        table[name] = {
            "scores": figures,
            "left_out_gain_mean": round(statistics.mean(gain), 4),
            "left_out_gain_min": round(min(gain), 4),
            "cpu_ms_mean": round(statistics.mean(cpu), 2),
            "cpu_ratio_mean": round(statistics.mean(cpu) / traf_cpu, 3),
            "wall_ms_median": round(statistics.median(wall), 2),
            "wall_ms_p99": round(pct(wall, 0.99), 1),
            "wall_ratio_median": round(
                statistics.median(wall) / statistics.median([b["wall"] for b in base.values()]), 3
            ),
            "core_hours_per_snapshot": round(statistics.mean(cpu) / 1000 * SNAPSHOT_PAGES / 3600),
            "used": dict(sorted(_count(r["s"][name]["used"] for r in results).items())),
        }
    report = {"pages": len(results), "workers": args.workers, "settings": table}
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'':12s} " + " ".join(f"{b[:11]:>11s}" for b in BENCHMARKS)
          + f" {'mean gain':>9s} {'min gain':>8s} {'CPU x':>6s} {'wall x':>6s}")  # fmt: skip
    for name, t in table.items():
        got = [t["scores"].get(b, {}).get("left_out", float("nan")) for b in BENCHMARKS]
        print(f"{name:12s} " + " ".join(f"{v:11.4f}" for v in got)
              + f" {t['left_out_gain_mean']:+9.4f} {t['left_out_gain_min']:+8.4f} "
              f"{t['cpu_ratio_mean']:6.2f} {t['wall_ratio_median']:6.2f}")  # fmt: skip
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
