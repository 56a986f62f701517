"""A multilingual folder of real-looking pages from ../shared/data, for the language
pre-filter and the end-to-end benchmark (`bench/e2e_bench.py --pages DIR`).

- the 670 non-empty Common Crawl documents of ../shared/data/text (53 languages), each put
  into a real page template: a WCXB dev page whose <p> elements are replaced by the
  document's paragraphs (its navigation, headings, sidebars and footer stay, mostly English,
  as on real sites of other languages);
- the WCXB dev pages (English, 1,497) and the scrapinghub pages (English news, 181) as they
  are, up to `--english` of them.

Writes DIR/NNNNN.html and DIR/urls.tsv (file name, URL).

    python bench/multilingual_pages.py bench/work/multilingual [--english 1200]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import lxml.html

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from curate_pipeline.config import ExtractConf  # noqa: E402
from curate_pipeline.document.extract import extract_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
WCXB = DATA / "extraction" / "wcxb_dev"
AEB = DATA / "extraction" / "scrapinghub_aeb"


def wcxb_pages() -> list[tuple[str, bytes]]:
    out = []
    for p in sorted((WCXB / "html").glob("*.html.gz")):
        gt = json.loads((WCXB / "ground-truth" / p.name.replace(".html.gz", ".json")).read_text())
        url = gt.get("url") or f"https://wcxb.example/{p.name}"
        out.append((url, gzip.decompress(p.read_bytes())))
    return out


def aeb_pages() -> list[tuple[str, bytes]]:
    truth = json.loads((AEB / "ground-truth.json").read_text())
    return [(v["url"], (AEB / "html" / f"{k}.html").read_bytes()) for k, v in sorted(truth.items())]


def cc_documents() -> list[dict]:
    docs = []
    for f in sorted((DATA / "text").glob("dolma_*.jsonl")):
        for line in f.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                d = json.loads(line)
                if d["text"].strip():
                    docs.append(d)
    return docs


def in_template(template: bytes, text: str) -> bytes | None:
    """`template` with its paragraphs replaced by `text`'s (None: no <p> to replace)."""
    try:
        root = lxml.html.fromstring(template)
    except (ValueError, lxml.etree.ParserError):
        return None
    paras = root.findall(".//p")
    if not paras:
        return None
    first = paras[0]
    parent = first.getparent()
    at = parent.index(first)
    for p in paras:
        p.getparent().remove(p)
    for k, line in enumerate(x for x in text.split("\n") if x.strip()):
        el = lxml.html.Element("p")
        el.text = line
        parent.insert(at + k, el)
    title = root.find(".//title")
    if title is not None:
        title.text = text.strip().split("\n")[0][:120]
    return lxml.html.tostring(root, encoding="utf-8", doctype="<!DOCTYPE html>")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--english", type=int, default=1200)
    ap.add_argument("--other-copies", type=int, default=1,
                    help="each document not in English this many times (other templates and "
                    "URLs), for a crawl as multilingual as Common Crawl's")  # fmt: skip
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    templates = wcxb_pages()
    pages: list[tuple[str, bytes]] = []
    ex = ExtractConf(strategy="single", favor_precision=True, include_comments=False)
    docs = cc_documents()
    if args.other_copies > 1:
        from curate_pipeline.document.langid import load_fasttext, predict_languages

        model = load_fasttext(str(ROOT / "models" / "lid.176.ftz"))
        labels = predict_languages(model, [d["text"] for d in docs])
        extra = [{**d, "id": f"{d['id']}-{k}", "copy": k}
                 for k in range(1, args.other_copies)
                 for d, (lang, _) in zip(docs, labels, strict=True) if lang != "en"]  # fmt: skip
        docs += extra
    for i, d in enumerate(docs):
        # the next template whose main text trafilatura finds in its paragraphs: the page's
        # main content is then the document, as on a real site in its language
        probe = max(d["text"].split("\n"), key=len).strip()[:60]
        html = None
        for k in range(40):
            candidate = in_template(templates[(i * 7 + k) % len(templates)][1], d["text"])
            if candidate is None:
                continue
            html = html or candidate
            got = extract_text(candidate.decode("utf-8", "replace"), "", ex) or ""
            if probe in got and len(got) < 2 * len(d["text"]) + 500:
                html = candidate
                break
        url = d["metadata"].get("warc_url") or f"https://cc.example/{d['id']}"
        if d.get("copy"):
            url = f"{url.rstrip('/')}/copy-{d['copy']}"
        pages.append((url, html))
    english = (aeb_pages() + templates)[: args.english]
    pages += english
    lines = []
    for n, (url, html) in enumerate(pages):
        name = f"{n:05d}.html"
        (out / name).write_bytes(html)
        lines.append(f"{name}\t{url}")
    (out / "urls.tsv").write_text("\n".join(lines) + "\n")
    print(f"{len(pages)} pages in {out} ({len(pages) - len(english)} Common Crawl documents in "
          f"page templates, {len(english)} English pages)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
