"""The demo's seven-page crawl: pages, their WARC, and the verdict per page. Each page shows
one stage at work: a kept article, a French page, a navigation bar, a product list, a copy
differing in case and spacing, a scraper's near copy and the article it copied.

The pages are written in crawl order 1, 2, 3, 4, 5, 7, 6: the scraper copy (page 6) was
crawled after the article it copies (page 7), so "keep the first" keeps the original.
"""

from __future__ import annotations

import io
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curate_pipeline.examples.sample import ARTICLE_BREAD, ARTICLE_RIVER

FRENCH = """
<h1>Comment une rivière façonne sa vallée</h1>
<p>Une rivière n'en a jamais fini avec sa vallée. Chaque printemps, l'eau de fonte emporte le
sable et le gravier des collines, et chaque été le courant plus lent les dépose de nouveau à
l'intérieur de chaque méandre. Au fil des années, les méandres se déplacent dans la plaine.</p>
<p>Les géologues lisent les couches de boue et de gravier comme les pages d'un journal intime.
Une couche épaisse de pierres grossières raconte une grande crue, tandis que de fines bandes
d'argile gardent la mémoire des saisons calmes.</p>
"""
NAV_BAR = "<p>Home | About us | Contact | Privacy policy | Log in</p>"
SKU_LIST = (
    "<p>SKU-4431 X99 blk/wht 12pk</p><p>SKU-4432 X99 red/blu 6pk</p>"
    "<p>SKU-4439 Z10 gry/blk 24pk</p>"
)
SCRAPER_SUFFIX = "<p>Read more on our site</p>"

# Page 1 again, differing only in case and whitespace (a shouting title, capitalised words,
# other line breaks). All capitals throughout would not do: lid.176 reads an all-caps English
# page as low-confidence noise, and language ID runs before deduplication.
MIRROR = (
    ARTICLE_RIVER.replace("How a river shapes its valley", "HOW A RIVER SHAPES ITS VALLEY")
    .replace(" river ", " River ")
    .replace("\n", "  \n\n ")
)

# (page number, URL, body, the verdict the demo shows)
PAGES = [
    (1, "https://rivers.example.org/valleys", ARTICLE_RIVER, "kept"),
    (2, "https://riviere.example.fr/vallee", FRENCH, "dropped by language ID"),
    (3, "https://shop.example.com/nav", NAV_BAR, "dropped by the quality rules"),
    (4, "https://shop.example.com/skus", SKU_LIST, "dropped: low-confidence language or rules"),
    (5, "https://mirror.example.net/valleys", MIRROR, "exact duplicate of page 1"),
    (6, "https://scraper.example.biz/bread", ARTICLE_BREAD + SCRAPER_SUFFIX,
     "near duplicate of page 7"),
    (7, "https://bread.example.com/home-baking", ARTICLE_BREAD, "kept"),
]  # fmt: skip
CRAWL_ORDER = [1, 2, 3, 4, 5, 7, 6]


def _html(body: str, title: str) -> bytes:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><main>{body}</main></body></html>"
    ).encode()


def write_demo_warc(path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    by_number = {p[0]: p for p in PAGES}
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for n in CRAWL_ORDER:
            _, url, body, _ = by_number[n]
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            rec = w.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(_html(body, f"Page {n}")),
                http_headers=http,
                warc_headers_dict={
                    "WARC-Record-ID": f"<urn:uuid:00000000-0000-0000-0000-00000000000{n}>",
                    "WARC-Date": "2026-11-02T10:00:00Z",
                },
            )
            w.write_record(rec)
    return path


def verdicts(out_dir: str | Path) -> list[dict]:
    """Per page, in page order: kept, or the stage, reason and detail that dropped it
    (`out_dir`: the run's output, whose current version is read)."""
    from curate_pipeline.outputs.publish.versions import read_rows

    kept = {r["url"] for r in read_rows(out_dir, "data", ["url"])}
    ledger = {r["url"]: r for r in read_rows(out_dir, "rejected")}
    rows = []
    for n, url, _, expected in PAGES:
        if url in kept:
            rows.append({"page": n, "url": url, "verdict": "kept", "expected": expected})
        else:
            r = ledger[url]
            rows.append({"page": n, "url": url, "verdict": "dropped", "stage": r["stage"],
                         "reason": r["reason"], "detail": r["detail"],
                         "expected": expected})  # fmt: skip
    return rows
