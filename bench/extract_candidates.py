"""Every candidate extractor on every page with ground truth: texts and CPU time, cached.

The raw material of the extraction chooser (issue 36): for each WCXB dev page (1,476 with a
`main_content`) and each scrapinghub AEB page (181), the page is decoded as the pipeline does
(pipeline.document.warc.decode) and every extractor in CANDIDATES runs on it, timed in CPU
seconds (time.process_time, one process per core) under the pipeline's own time bound. Writes
bench/work/extract_candidates.jsonl.gz: one line per page with its id, type, truth, and per
extractor the text (or null), the CPU ms and the error if any. bench/extract_chooser_train.py
and bench/extract_strategy_bench.py read it.

    python bench/extract_candidates.py [--limit N] [--workers 2]
    python bench/extract_candidates.py --summary   # the table, from the cache

The summary (bench/results/extract_candidates.json): per extractor, mean bag-of-words F1 on
WCXB dev and per page type, on AEB, CPU ms mean, wall ms median and p99.
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

from pipeline.document.extract import ExtractTimeout, time_bound  # noqa: E402
from pipeline.document.extractors import EXTRACTORS  # noqa: E402
from pipeline.document.warc.decode import decode_body, to_unicode  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "extraction"
OUT = ROOT / "bench" / "work" / "extract_candidates.jsonl.gz"


def pages(limit: int | None = None) -> list[dict]:
    out = []
    for gt in sorted((DATA / "wcxb_dev" / "ground-truth").glob("*.json")):
        d = json.loads(gt.read_text())
        html = DATA / "wcxb_dev" / "html" / f"{gt.stem}.html.gz"
        if html.exists() and "main_content" in d["ground_truth"]:  # 2 pages have none
            out.append({"id": f"wcxb/{gt.stem}", "html": str(html), "url": d.get("url", ""),
                        "type": d.get("_internal", {}).get("page_type", {}).get("primary", "?"),
                        "truth": d["ground_truth"]["main_content"] or ""})  # fmt: skip
    aeb = json.loads((DATA / "scrapinghub_aeb" / "ground-truth.json").read_text())
    for sha, item in sorted(aeb.items()):
        out.append({"id": f"aeb/{sha[:12]}", "html": str(DATA / "scrapinghub_aeb" / "html" /
                    f"{sha}.html"), "url": item["url"], "type": "aeb",
                    "truth": item["articleBody"]})  # fmt: skip
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


def html_of(page: dict) -> str:
    raw = Path(page["html"]).read_bytes()
    if page["html"].endswith(".gz"):
        raw = gzip.decompress(raw)
    body = decode_body(raw, None, None, 64 << 20)
    return to_unicode(body, "text/html", 0.3)[0]


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
    out = {k: page[k] for k in ("id", "type", "url", "truth")}
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


def summary() -> None:
    import statistics
    from collections import defaultdict

    from extract_bench import prf

    rows = [json.loads(line) for line in gzip.open(OUT, "rt")]
    table = {}
    for name in CANDIDATES:
        f1: dict = defaultdict(list)
        for r in rows:
            f = prf(r[name]["text"] or "", r["truth"])[2]
            f1[r["type"]].append(f)
            if r["type"] != "aeb":
                f1["WCXB dev"].append(f)
        wall = sorted(r[name]["wall_ms"] for r in rows)
        table[name] = {
            "f1": {t: round(statistics.mean(v), 4) for t, v in sorted(f1.items())},
            "cpu_ms_mean": round(statistics.mean(r[name]["ms"] for r in rows), 2),
            "wall_ms_median": round(statistics.median(wall), 2),
            "wall_ms_p99": round(wall[int(0.99 * (len(wall) - 1))], 1),
            "errors": sum(1 for r in rows if r[name]["error"]),
        }
        t = table[name]
        print(f"{name:24s} dev {t['f1']['WCXB dev']:.3f} aeb {t['f1']['aeb']:.3f} "
              f"cpu {t['cpu_ms_mean']:6.1f} wall p50 {t['wall_ms_median']:6.1f} "
              f"p99 {t['wall_ms_p99']:6.0f}")  # fmt: skip
    out = ROOT / "bench" / "results" / "extract_candidates.json"
    out.write_text(json.dumps({"pages": len(rows), "extractors": table}, indent=2) + "\n")
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
