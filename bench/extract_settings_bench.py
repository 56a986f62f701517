"""Extraction settings and backends on real pages with ground truth, per page type.

Runs the pipeline's own `process_record` (decode, charset, extraction with its time bound) on
the WCXB dev split (../shared/data/extraction/wcxb_dev: 1,497 pages of seven types, ground
truth `main_content`) and the 181 scrapinghub article pages, with each setting in turn on the
same page (so machine noise hits all settings alike), and scores bag-of-words precision,
recall and F1 against the ground truth (the benchmarks' own measure). Prints and writes, per
setting and page type: mean F1, P, R, pages under F1 0.2, and ms per page (wall time, one
process per core).

    python bench/extract_settings_bench.py [--limit N] [--workers 2]
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

from extract_bench import prf  # noqa: E402  (bench/: the same measure as extract_bench)
from extract_candidates import pages as candidate_pages  # noqa: E402

from curate_pipeline.config import ExtractConf, ReadConf  # noqa: E402
from curate_pipeline.document.extract import process_record  # noqa: E402

# one extractor each (strategy single); the strategies: bench/extract_strategy_bench.py
SETTINGS = {
    "FineWeb: favor_precision, no comments": ExtractConf(
        strategy="single", favor_precision=True, include_comments=False
    ),
    "trafilatura defaults (ours)": ExtractConf(
        strategy="single", favor_precision=False, include_comments=True
    ),
    "defaults, no comments": ExtractConf(
        strategy="single", favor_precision=False, include_comments=False
    ),
    "favor_recall": ExtractConf(
        strategy="single", favor_precision=False, favor_recall=True, include_comments=True
    ),
    "resiliparse": ExtractConf(strategy="single", backend="resiliparse", include_comments=False),
}


def pages(limit: int | None) -> list[dict]:
    # the two benchmarks with a full main text (the four: bench/extract_strategy_bench.py)
    out = [p for p in candidate_pages() if p["bench"] in ("wcxb", "aeb")][:limit]
    for p in out:
        p["type"] = "news (scrapinghub)" if p["bench"] == "aeb" else p["type"]
    return out


def score(page: dict) -> dict:
    raw = Path(page["html"]).read_bytes()
    if page["html"].endswith(".gz"):
        raw = gzip.decompress(raw)
    row = {"doc_id": page["id"], "url": page["url"], "payload": raw,
           "content_type": "text/html", "transfer_encoding": None, "content_encoding": None,
           "reject_stage": None, "reject_reason": None, "reject_detail": None}  # fmt: skip
    out = {}
    for name, conf in SETTINGS.items():
        t0 = time.perf_counter()  # wall: process_time ticks in 4 ms steps here
        res = process_record(row, conf, ReadConf(), scope=f"{name}/{page['id']}")
        ms = (time.perf_counter() - t0) * 1000
        out[name] = (*prf(res["text"] or "", page["truth"]), ms, res["reject_reason"])
    return {"id": page["id"], "type": page["type"], "scores": out}


def summarise(results: list[dict]) -> dict:
    table: dict = {}
    for name in SETTINGS:
        by_type: dict[str, list] = defaultdict(list)
        for r in results:
            by_type[r["type"]].append(r["scores"][name])
            by_type["all"].append(r["scores"][name])
        table[name] = {
            t: {
                "pages": len(v),
                "f1": round(statistics.fmean(x[2] for x in v), 3),
                "precision": round(statistics.fmean(x[0] for x in v), 3),
                "recall": round(statistics.fmean(x[1] for x in v), 3),
                "under_0.2": sum(1 for x in v if x[2] < 0.2),
                "ms_median": round(statistics.median(x[3] for x in v), 1),
                "ms_mean": round(statistics.fmean(x[3] for x in v), 1),
                "timeouts": sum(1 for x in v if x[4] == "extract_timeout"),
            }
            for t, v in sorted(by_type.items())
        }
    return table


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "extract_settings.json"))
    args = ap.parse_args()
    todo = pages(args.limit)
    t0 = time.perf_counter()
    with Pool(args.workers) as pool:
        results = pool.map(score, todo, chunksize=8)
    table = summarise(results)
    types = [t for t in table[next(iter(SETTINGS))] if t != "all"] + ["all"]
    for name, rows in table.items():
        print(f"\n{name}")
        print(f"  {'page type':22s} {'pages':>5s} {'F1':>6s} {'P':>6s} {'R':>6s} "
              f"{'<0.2':>5s} {'ms med':>7s} {'ms mean':>7s}")  # fmt: skip
        for t in types:
            r = rows[t]
            print(f"  {t:22s} {r['pages']:5d} {r['f1']:6.3f} {r['precision']:6.3f} "
                  f"{r['recall']:6.3f} {r['under_0.2']:5d} {r['ms_median']:7.1f} "
                  f"{r['ms_mean']:7.1f}")  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"pages": len(todo), "seconds": round(time.perf_counter() - t0, 1),
                               "settings": {k: v.model_dump() for k, v in SETTINGS.items()},
                               "results": table}, indent=2) + "\n")  # fmt: skip
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
