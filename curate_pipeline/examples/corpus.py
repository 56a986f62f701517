"""Test and benchmark corpora as WARC files: pages (synthetic or real HTML) plus duplicates
under other URLs, half byte-identical and half with a small edit, in a seeded crawl order.

The reliability tests use a few hundred synthetic pages; `bench/e2e_bench.py` uses the real
pages of the shared extraction set. Both get the same duplicate mix, so exact and near
deduplication have work to do.
"""

from __future__ import annotations

import gzip
import io
import random
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curate_pipeline.examples.quality_texts import BAD_SENTENCES, GOOD_SENTENCES
from curate_pipeline.examples.sample import page

DATE = "2026-11-02T10:00:00Z"


@dataclass(frozen=True)
class Page:
    url: str
    html: bytes
    content_type: str = "text/html; charset=utf-8"


def synthetic_pages(n: int, seed: int = 0, bad_share: float = 0.2) -> list[Page]:
    """`n` English article pages drawn from the example sentence pools; about `bad_share` of
    them are crawl junk (shop listings, calls to action) for the filters to catch."""
    rng = random.Random(seed)
    pages = []
    for i in range(n):
        pool = BAD_SENTENCES if rng.random() < bad_share else GOOD_SENTENCES
        sentences = rng.sample(pool, rng.randint(6, 12))  # no sentence twice in a page
        paras = [" ".join(sentences[k : k + 3]) for k in range(0, len(sentences), 3)]
        paras.append(f"This is article number {i} of the series, written in plain English.")
        body = "".join(f"<p>{p}</p>" for p in paras)
        host = f"site{rng.randint(1, max(2, n // 10))}.example.org"
        pages.append(Page(f"https://{host}/articles/{i}", page(body, f"Article {i}").encode()))
    return pages


_PARAGRAPH = re.compile(rb"<p(?:\s[^>]*)?>([^<>]{120,})<", re.IGNORECASE)
_TEXT_RUN = re.compile(rb">([^<>]{120,})<")


def small_edit(html: bytes, rng: random.Random) -> bytes:
    """The page with one word of its longest paragraph (else text run) replaced: a near
    duplicate."""
    runs = list(_PARAGRAPH.finditer(html)) or list(_TEXT_RUN.finditer(html))
    if not runs:
        return html.replace(b"</body>", b"<p>Edited copy.</p></body>", 1)
    m = max(runs, key=lambda m: len(m.group(1)))
    words = m.group(1).split(b" ")
    k = rng.randrange(len(words))
    words[k] = b"indeed"
    return html[: m.start(1)] + b" ".join(words) + html[m.end(1) :]


def with_duplicates(pages: list[Page], share: float = 0.15, seed: int = 0) -> list[Page]:
    """`pages` plus about `share` more copies of some of them under mirror URLs (half exact,
    half with a small edit), shuffled into a seeded crawl order."""
    rng = random.Random(seed)
    n_dups = round(len(pages) * share)
    out = list(pages)
    for k, src in enumerate(rng.sample(pages, min(n_dups, len(pages)))):
        html = src.html if k % 2 == 0 else small_edit(src.html, rng)
        path = src.url.split("://", 1)[-1].split("/", 1)[-1]
        out.append(Page(f"https://mirror{k % 7}.example.net/{path}", html, src.content_type))
    rng.shuffle(out)
    return out


def folder_pages(folder: str | Path) -> list[Page]:
    """The HTML files of a folder (`*.html`, `*.htm`, also gzipped), in name order, as pages:
    URLs from its `urls.tsv` (file name, tab, URL) where it has one, else made from the file
    name. The content type is declared without a charset: the pipeline sniffs it."""
    folder = Path(folder)
    urls: dict[str, str] = {}
    listing = folder / "urls.tsv"
    if listing.is_file():
        for line in listing.read_text(encoding="utf-8").splitlines():
            name, _, url = line.partition("\t")
            if url:
                urls[name] = url.strip()
    pages = []
    for f in sorted(folder.iterdir()):
        name = f.name.lower()
        if not f.is_file() or not name.removesuffix(".gz").endswith((".html", ".htm")):
            continue
        html = f.read_bytes()
        if name.endswith(".gz"):
            html = gzip.decompress(html)
        url = urls.get(f.name) or f"https://{folder.name or 'pages'}.example/{f.name}"
        pages.append(Page(url, html, "text/html"))
    return pages


def write_pages_warc(path: str | Path, pages: list[Page], tag: str = "corpus") -> int:
    """A gzipped WARC (one member per record, as Common Crawl) of response records."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for i, p in enumerate(pages):
            rid = uuid.uuid5(uuid.NAMESPACE_URL, f"{tag}/{i}/{p.url}")
            http = StatusAndHeaders("200 OK", [("Content-Type", p.content_type)], "HTTP/1.1")
            rec = w.create_warc_record(
                p.url,
                "response",
                payload=io.BytesIO(p.html),
                http_headers=http,
                warc_headers_dict={
                    "WARC-Record-ID": f"<urn:uuid:{rid}>",
                    "WARC-Date": DATE,
                    # as Common Crawl: readers that trust it need not sniff the payload
                    "WARC-Identified-Payload-Type": p.content_type.split(";")[0],
                },
            )
            w.write_record(rec)
    return len(pages)
