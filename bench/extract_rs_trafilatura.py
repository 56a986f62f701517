"""rs-trafilatura on every benchmark page, in a Python its wheel installs on (3.12 only).

rs-trafilatura 0.1.1 (PyPI, Rust) has one wheel, for CPython 3.12; the project runs 3.11, so it
is measured here in its own interpreter and merged into the candidates' cache as the
extractor `rs_trafilatura` (bench/extract_candidates.py reads this file). Same decoding of
the page as the pipeline's, same time measure (CPU per page), one process per core.

    python3.12 -m venv bench/work/rs312
    bench/work/rs312/bin/pip install rs-trafilatura==0.1.1 brotli charset-normalizer lxml
    EXTRACT_REPOS=... bench/work/rs312/bin/python bench/extract_rs_trafilatura.py
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from extract_benchmarks import html_of, pages  # noqa: E402

OUT = ROOT / "bench" / "work" / "extract_rs_trafilatura.jsonl.gz"


def run(page: dict) -> dict:
    import rs_trafilatura

    html = html_of(page)
    t0, w0 = time.process_time(), time.perf_counter()
    text, err = None, None
    try:
        text = rs_trafilatura.extract(html, url=page["url"] or None).main_content
    except Exception as e:  # noqa: BLE001  a candidate's failure is a data point
        err = f"{type(e).__name__}: {e}"[:200]
    return {"id": page["id"], "text": text, "ms": (time.process_time() - t0) * 1000,
            "wall_ms": (time.perf_counter() - w0) * 1000, "error": err,
            "version": rs_trafilatura.__version__}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    todo = pages()
    with Pool(args.workers) as pool:
        pool.map(run, todo[:4])  # warm: imports are not a page's cost
        rows = pool.map(run, todo, chunksize=8)
    with gzip.open(OUT, "wt") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"wrote {OUT} ({len(rows)} pages)")


if __name__ == "__main__":
    main()
