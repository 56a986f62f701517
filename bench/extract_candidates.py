"""Every candidate extractor on every page with ground truth: texts and CPU time, cached.

The raw material of the extraction chooser: for each page of the four benchmarks
(bench/extract_benchmarks.py: WCXB dev, ScrapingHub AEB, trafilatura's evaluation, Mozilla
readability's pages; 2,758 pages) the page is decoded as the pipeline does
(curate_pipeline.document.warc.decode) and every extractor in CANDIDATES runs on it, timed in CPU
seconds (time.process_time, one process per core) under the pipeline's own time bound. Writes
bench/work/extract_candidates.jsonl.gz: one line per page with its benchmark, site, truth, and
per extractor the text (or null), the CPU ms and the error if any.
bench/extract_chooser_train.py and bench/extract_strategy_bench.py read it; rs-trafilatura's
outputs come from bench/extract_rs_trafilatura.py (its own interpreter) and are merged here.

    python bench/extract_candidates.py [--limit N] [--workers 2]
    python bench/extract_candidates.py --summary   # the table, from the cache

The summary (bench/results/extract_candidates.json): per extractor, its score on each
benchmark (the benchmark's own measure), per WCXB page type and per language group, CPU ms
mean and its ratio to trafilatura's on the same pages, wall ms median and p99, empty outputs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from importlib.util import find_spec
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extract_benchmarks import html_of, score  # noqa: E402
from extract_benchmarks import pages as benchmark_pages  # noqa: E402

from curate_pipeline.document.extract import ExtractTimeout, time_bound  # noqa: E402
from curate_pipeline.document.extractors import EXTRACTORS  # noqa: E402

OUT = ROOT / "bench" / "work" / "extract_candidates.jsonl.gz"
RS_OUT = ROOT / "bench" / "work" / "extract_rs_trafilatura.jsonl.gz"


def pages(limit: int | None = None) -> list[dict]:
    out = benchmark_pages()
    return out[:limit] if limit else out


def _boilerpy3(html: str, url: str) -> str | None:  # noqa: ARG001
    from boilerpy3 import extractors

    return extractors.ArticleExtractor(raise_on_failure=False).get_content(html)


def _inscriptis(html: str, url: str) -> str | None:  # noqa: ARG001
    from inscriptis import get_text

    return get_text(html)


def _goose3(html: str, url: str) -> str | None:  # noqa: ARG001
    from goose3 import Goose

    with Goose({"enable_image_fetching": False}) as g:
        return g.extract(raw_html=html).cleaned_text


def _html_text(html: str, url: str) -> str | None:  # noqa: ARG001
    import html_text

    return html_text.extract_text(html)


# the pipeline's extractors and others from the registries, measured for the record where
# installed (not project dependencies: pip install boilerpy3 inscriptis goose3 html-text)
EXTRA = {"boilerpy3": _boilerpy3, "inscriptis": _inscriptis, "goose3": _goose3,
         "html_text": _html_text}  # fmt: skip
CANDIDATES = {**EXTRACTORS, **{n: f for n, f in EXTRA.items() if find_spec(n) is not None}}


_warm = [False]


def run(page: dict) -> dict:
    html = html_of(page)
    if not _warm[0]:  # imports and first-call set-up are not a page's cost
        for fn in CANDIDATES.values():
            try:
                fn(html, page["url"])
            except Exception:  # noqa: BLE001, S110
                pass
        _warm[0] = True
    out = dict(page)
    out["html_bytes"] = len(html.encode("utf-8", "replace"))
    for name, fn in CANDIDATES.items():
        t0, w0 = time.process_time(), time.perf_counter()
        text, err = None, None
        try:
            with time_bound(10.0, 60.0):
                text = fn(html, page["url"])
        except ExtractTimeout:
            err = "timeout"
        except Exception as e:  # noqa: BLE001  a candidate's failure is a data point
            err = f"{type(e).__name__}: {e}"[:200]
        # CPU time ticks in 4 ms steps on these machines: wall time too (one process per core)
        out[name] = {"text": text, "ms": (time.process_time() - t0) * 1000,
                     "wall_ms": (time.perf_counter() - w0) * 1000, "error": err}  # fmt: skip
    return out


def load_rows() -> list[dict]:
    """The cache, with rs-trafilatura's outputs where measured (bench/extract_rs_trafilatura.py),
    each output scored by its benchmark's measure (`f1`) and each page's language group."""
    from extract_benchmarks import language_groups

    rows = [json.loads(line) for line in gzip.open(OUT, "rt")]
    rs = {}
    if RS_OUT.exists():
        rs = {r["id"]: r for r in map(json.loads, gzip.open(RS_OUT, "rt"))}
    for r in rows:
        if r["id"] in rs:
            r["rs_trafilatura"] = rs[r["id"]]
        for out in r.values():
            if isinstance(out, dict) and "text" in out:
                out["f1"] = score(r, out["text"])
    language_groups(rows)
    return rows


def summary() -> None:
    """Every candidate on every benchmark, per page type and language group, with its CPU."""
    import statistics
    from collections import defaultdict

    from extract_benchmarks import BENCHMARKS

    rows = load_rows()
    names = [n for n in rows[0] if isinstance(rows[0][n], dict) and "text" in rows[0][n]]
    table = {}
    for name in names:
        have = [r for r in rows if name in r]
        f1: dict = defaultdict(list)
        for r in have:
            f = r[name]["f1"]
            f1[r["bench"]].append(f)
            f1[f"lang {r['lang_group']}"].append(f)
            if r["bench"] == "wcxb":
                f1[f"wcxb {r['type']}"].append(f)
        by_bench = [statistics.mean(f1[b]) for b in BENCHMARKS if f1[b]]
        wall = sorted(r[name]["wall_ms"] for r in have)
        traf = statistics.mean(r["trafilatura"]["ms"] for r in have)
        table[name] = {
            "f1": {t: round(statistics.mean(v), 4) for t, v in sorted(f1.items())},
            "mean_of_benchmarks": round(statistics.mean(by_bench), 4),
            "cpu_ms_mean": round(statistics.mean(r[name]["ms"] for r in have), 2),
            "cpu_x_trafilatura": round(statistics.mean(r[name]["ms"] for r in have) / traf, 3),
            "wall_ms_median": round(statistics.median(wall), 2),
            "wall_ms_p99": round(wall[int(0.99 * (len(wall) - 1))], 1),
            "errors": sum(1 for r in have if r[name]["error"]),
            "empty": sum(1 for r in have if not (r[name]["text"] or "").strip()),
        }
        t = table[name]
        print(f"{name:24s} " + " ".join(f"{b} {t['f1'].get(b, float('nan')):.3f}"
                                        for b in BENCHMARKS)
              + f" mean {t['mean_of_benchmarks']:.3f} cpu x{t['cpu_x_trafilatura']:.2f} "
              f"empty {t['empty']}")  # fmt: skip
    out = ROOT / "bench" / "results" / "extract_candidates.json"
    pages_by = {b: sum(r["bench"] == b for r in rows) for b in BENCHMARKS}
    out.write_text(json.dumps({"pages": pages_by, "extractors": table}, indent=2) + "\n")
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args()
    if args.summary:
        summary()
        return
    todo = pages(args.limit)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with Pool(args.workers, maxtasksperchild=400) as pool, gzip.open(OUT, "wt") as f:
        for i, res in enumerate(pool.imap(run, todo, chunksize=4), 1):
            f.write(json.dumps(res) + "\n")
            if i % 200 == 0:
                print(f"{i}/{len(todo)} pages, {time.time() - t0:.0f} s", flush=True)
    print(f"wrote {OUT} ({len(todo)} pages, {len(CANDIDATES)} extractors)")


if __name__ == "__main__":
    main()
