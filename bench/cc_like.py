"""A Common-Crawl-like crawl built from the real data in ../shared/data, for measuring a run's
cost per record at realistic sizes (bench/per_record_bench.py).

What makes it like a Common Crawl WARC:
- page sizes and page structure: every HTML page is a real page (WCXB dev, 1,497 pages of
  seven types; scrapinghub, 181 news pages), its navigation, sidebars and footer kept; its
  <p> elements carry the document's text (multilingual_pages.in_template);
- the language mix: that of the 670 non-empty documents of a real Common Crawl WARC
  (../shared/data/text, CC-MAIN-2019-30: 53 languages), labelled by the project's fastText
  model; each page draws its language from that mix and its paragraphs from that language's
  pool (the English pool also holds the benchmarks' ground-truth texts), so no two pages
  share their text by construction;
- the non-HTML share: Common Crawl's responses are ~97% text/html or xhtml (its published
  MIME statistics); 3% here are real non-HTML payloads (CSS, JavaScript, images, PDF-like
  binaries) from the ukwa and dolma WARCs in ../shared/data/warc;
- duplicates: 10% more pages copied under mirror URLs (half exact, half one word edited).

Files are written once under bench/work/cc_like/ and reused (delete the folder to rebuild).
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from multilingual_pages import aeb_pages, cc_documents, in_template, wcxb_pages  # noqa: E402

from curate_pipeline.examples.corpus import Page, with_duplicates, write_pages_warc  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
WORK = ROOT / "bench" / "work" / "cc_like"
NON_HTML_SHARE = 0.03
DUPLICATE_SHARE = 0.10


def non_html_payloads() -> list[tuple[str, bytes, str]]:
    """(URL, payload, content type) of the real non-HTML responses in the sample WARCs."""
    out = []
    for f in sorted((DATA / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type != "response" or rec.http_headers is None:
                    continue
                ctype = rec.http_headers.get_header("Content-Type") or ""
                if not ctype or "html" in ctype.lower():
                    continue
                body = rec.content_stream().read()
                if body:
                    out.append((rec.rec_headers.get_header("WARC-Target-URI"), body, ctype))
    return out


def language_pools() -> tuple[dict[str, float], dict[str, list[str]]]:
    """The real crawl's language shares, and each language's paragraphs."""
    from curate_pipeline.document.langid import load_fasttext, predict_languages

    model = load_fasttext(str(ROOT / "models" / "lid.176.ftz"))
    docs = cc_documents()
    labels = [lang for lang, _ in predict_languages(model, [d["text"] for d in docs])]
    shares = {k: v / len(docs) for k, v in Counter(labels).items()}
    pools: dict[str, list[str]] = {}
    for d, lang in zip(docs, labels, strict=True):
        pools.setdefault(lang, []).extend(p for p in d["text"].split("\n") if len(p) > 30)
    truth = DATA / "extraction" / "wcxb_dev" / "ground-truth"
    for gt in sorted(truth.glob("*.json")):
        text = json.loads(gt.read_text()).get("ground_truth", {}).get("main_content") or ""
        pools["en"].extend(p for p in text.split("\n") if len(p) > 30)
    aeb = json.loads((DATA / "extraction" / "scrapinghub_aeb" / "ground-truth.json").read_text())
    for item in aeb.values():
        pools["en"].extend(p for p in (item.get("articleBody") or "").split("\n") if len(p) > 30)
    return shares, {k: v for k, v in pools.items() if v}


def _page(args: tuple[int, bytes, str]) -> bytes | None:
    _, template, text = args
    return in_template(template, text)


def build(files: int, per_file: int) -> list[str]:
    """`files` WARCs of `per_file` pages each (plus their duplicates); their paths."""
    paths = [WORK / f"cc-like-{k:03d}.warc.gz" for k in range(files)]
    meta = WORK / "built.json"
    want = {"files": files, "per_file": per_file}
    if meta.exists() and json.loads(meta.read_text()) == want and all(p.exists() for p in paths):
        return [str(p) for p in paths]
    WORK.mkdir(parents=True, exist_ok=True)
    templates = [h for _, h in aeb_pages() + wcxb_pages()]
    shares, pools = language_pools()
    langs = sorted(lang for lang in shares if lang in pools)  # a few have no paragraph
    weights = [shares[lang] for lang in langs]
    others = non_html_payloads()
    rng = random.Random(65)
    with ProcessPoolExecutor(2) as pool:
        for k, path in enumerate(paths):
            jobs, kinds = [], []
            for i in range(per_file):
                n = k * per_file + i
                if rng.random() < NON_HTML_SHARE:
                    kinds.append(("other", rng.choice(others)))
                    continue
                lang = rng.choices(langs, weights)[0]
                paras = pools[lang]
                text = "\n".join(rng.sample(paras, min(len(paras), rng.randint(3, 12))))
                kinds.append(("html", (lang, n)))
                jobs.append((n, templates[n % len(templates)], text))
            made = iter(pool.map(_page, jobs, chunksize=32))
            pages = []
            for kind, what in kinds:
                if kind == "other":
                    url, body, ctype = what
                    pages.append(Page(f"{url}?c={k}-{len(pages)}", body, ctype))
                    continue
                html = next(made)
                if html is None:
                    continue
                lang, n = what
                pages.append(Page(f"https://site{n % 997}.example.{lang}/p/{n}", html))
            write_pages_warc(path, with_duplicates(pages, DUPLICATE_SHARE, seed=k), tag=f"cc{k}")
            print(f"  {path.name}: {len(pages)} pages", flush=True)
    meta.write_text(json.dumps(want))
    return [str(p) for p in paths]


def describe(paths: list[str]) -> dict:
    """What the crawl holds: records, bytes, the non-HTML share, median page size."""
    sizes, non_html = [], 0
    for p in paths:
        with gzip.open(p, "rb") as fh:
            for rec in ArchiveIterator(fh, arc2warc=False):
                if rec.rec_type != "response":
                    continue
                ctype = rec.http_headers.get_header("Content-Type") or ""
                non_html += "html" not in ctype
                sizes.append(len(rec.content_stream().read()))
    sizes.sort()
    return {"records": len(sizes), "non_html_share": round(non_html / len(sizes), 4),
            "median_page_bytes": sizes[len(sizes) // 2],
            "p90_page_bytes": sizes[int(len(sizes) * 0.9)],
            "warc_mb": round(sum(Path(p).stat().st_size for p in paths) / 1e6, 1)}  # fmt: skip
