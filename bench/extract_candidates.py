"""Every candidate extractor on every page with ground truth: texts and CPU time, cached.

The raw material of the extraction chooser (issue 36): for each WCXB dev page (1,476 with a
`main_content`) and each scrapinghub AEB page (181), the page is decoded as the pipeline does
(pipeline.document.warc.decode) and every extractor in CANDIDATES runs on it, timed in CPU
seconds (time.process_time, one process per core) under the pipeline's own time bound. Writes
bench/work/extract_candidates.jsonl.gz: one line per page with its id, type, truth, and per
extractor the text (or null), the CPU ms and the error if any. bench/extract_chooser_train.py
and bench/extract_strategy_bench.py read it.

    python bench/extract_candidates.py [--limit N] [--workers 2]
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


# the pipeline's extractors and others from the registries, measured for the record
CANDIDATES = {**EXTRACTORS, "boilerpy3": _boilerpy3, "inscriptis": _inscriptis,
              "goose3": _goose3, "html_text": _html_text}  # fmt: skip


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
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
