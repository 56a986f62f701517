"""The project's own sample WARC: real HTTP records covering every path of the read stage.

`make run` curates it. It holds pages in three charsets (one declared only in `<meta>`),
payloads stored gzip-, brotli- and chunk-encoded, and the records a crawl also contains that
must end in the ledger: warcinfo, request, metadata, revisit, a 404, an image, an empty page,
a truncated page and a navigation-only page.
"""

from __future__ import annotations

import gzip
import io
import uuid
from pathlib import Path

import brotli
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

DATE = "2026-11-02T10:00:00Z"

ARTICLE_RIVER = """
<h1>How a river shapes its valley</h1>
<p>A river is never finished with its valley. Every spring the melt water carries sand and
gravel from the hills, and every summer the slower current drops them again on the inside of
each bend. Over many years the bends wander across the plain, and the old channels that the
water has left behind become quiet lakes where herons wait for fish.</p>
<p>Geologists who study these plains read the layers of mud and gravel like the pages of a
diary. A thick layer of coarse stones tells of a great flood, while thin bands of clay record
the calm seasons in between. By counting and measuring the layers, they can say how often the
river has changed its course and how fast the land around it is sinking or rising.</p>
<p>The people who farm along the river have always known that the floods bring both harm and
good. The water that drowns a field in April leaves behind a fresh skin of fertile silt, and
the best harvests often follow the worst floods. That is why so many old towns stand on low
hills at the edge of the plain, close enough to use the river and far enough to stay dry.</p>
"""

ARTICLE_BREAD = """
<h1>Baking bread at home without a machine</h1>
<p>Good bread needs only flour, water, salt and yeast, but it also needs time. When the dough
rests for a long while, the yeast has the chance to produce the gases that lift the loaf and
the acids that give the crust its flavour. A dough that is rushed will rise, but it will taste
of little more than flour.</p>
<p>Start the evening before you want to bake. Mix the flour with most of the water and leave
it covered for half an hour, then add the salt, the yeast and the rest of the water, and fold
the dough over itself a few times. Leave it in a cool place overnight, and in the morning shape
it gently so that you keep the bubbles that have formed.</p>
<p>Bake the loaf in a very hot oven with a tray of water on the lowest shelf. The steam keeps
the surface soft for the first minutes, so that the bread can grow before the crust sets. When
the loaf sounds hollow as you tap the bottom, let it cool on a rack for an hour before you cut
it, however hard that is to do.</p>
"""

ARTICLE_RU = """
<h1>Как река формирует долину</h1>
<p>Река никогда не заканчивает работу над своей долиной. Каждую весну талая вода несёт песок
и гравий с холмов, а летом более медленное течение снова оставляет их на внутренней стороне
каждого изгиба. За многие годы излучины смещаются по равнине, а старые русла превращаются в
тихие озёра, где цапли ждут рыбу.</p>
<p>Геологи читают слои ила и гравия, как страницы дневника. Толстый слой крупных камней
рассказывает о большом наводнении, а тонкие полосы глины отмечают спокойные годы между ними.</p>
"""

ARTICLE_ZH = """
<h1>河流如何塑造山谷</h1>
<p>河流从来不会停止塑造它的山谷。每年春天，融化的雪水从山上带来沙子和砾石；到了夏天，
缓慢的水流又把它们留在每个河湾的内侧。许多年以后，河湾在平原上慢慢移动，被河水遗弃的旧河道
变成了安静的湖泊，苍鹭在那里等待着鱼儿。</p>
<p>研究这些平原的地质学家像阅读日记一样阅读泥土和砾石的层次。厚厚的粗石层讲述了一场大洪水，
而薄薄的黏土层记录了其间平静的季节。沿河耕种的人们一直知道，洪水既带来灾害，也带来好处。</p>
"""

NAV_ONLY = """<nav><a href="/">Home</a> | <a href="/about">About us</a> |
<a href="/contact">Contact</a> | <a href="/privacy">Privacy policy</a> |
<a href="/login">Log in</a></nav>"""


def page(body: str, title: str, meta_charset: str | None = None) -> str:
    meta = f'<meta charset="{meta_charset}">' if meta_charset else ""
    return (
        f"<!DOCTYPE html><html><head>{meta}<title>{title}</title></head>"
        f"<body><header>{NAV_ONLY}</header><article>{body}</article>"
        f"<footer>Copyright 2026 Example Media</footer></body></html>"
    )


def _chunk(data: bytes, size: int = 700) -> bytes:
    out = bytearray()
    for i in range(0, len(data), size):
        part = data[i : i + size]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return bytes(out + b"0\r\n\r\n")


def _record_id(n: int) -> str:
    return f"<urn:uuid:{uuid.UUID(int=0x5A3B1E << 96 | n)}>"


def write_sample_warc(path: str | Path) -> int:
    """Write the sample WARC (gzip) to `path`; returns the number of records written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = 0
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)

        def emit(uri, rec_type, payload=b"", http=None, extra=None, ctype=None):
            nonlocal records
            records += 1
            headers = {"WARC-Record-ID": _record_id(records), "WARC-Date": DATE}
            headers.update(extra or {})
            kwargs = {"warc_headers_dict": headers, "http_headers": http}
            if ctype:
                kwargs["warc_content_type"] = ctype
            rec = w.create_warc_record(uri, rec_type, payload=io.BytesIO(payload), **kwargs)
            w.write_record(rec)

        emit(
            "",
            "warcinfo",
            b"software: curate-pipeline sample\r\nformat: WARC/1.0\r\n",
            ctype="application/warc-fields",
        )

        def response(uri, body: bytes, headers, status="200 OK", extra=None):
            emit(
                uri,
                "request",
                f"GET / HTTP/1.1\r\nHost: {uri.split('/')[2]}\r\n\r\n".encode(),
                ctype="application/http; msgtype=request",
            )
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            emit(uri, "response", body, http=http, extra=extra)

        html = "text/html; charset=utf-8"
        river = page(ARTICLE_RIVER, "Rivers").encode("utf-8")
        bread = page(ARTICLE_BREAD, "Bread").encode("utf-8")
        response("https://rivers.example.org/valleys", river, [("Content-Type", html)])
        response(
            "https://bread.example.com/home-baking",
            gzip.compress(bread, mtime=0),
            [("Content-Type", html), ("Content-Encoding", "gzip")],
        )
        response(
            "https://br.example.com/bread",
            brotli.compress(bread),
            [("Content-Type", html), ("Content-Encoding", "br")],
        )
        response(
            "https://chunked.example.net/rivers",
            _chunk(river),
            [("Content-Type", html), ("Transfer-Encoding", "chunked")],
        )
        # windows-1251 declared only in <meta>; gb2312 declared only in the HTTP header.
        response(
            "https://reki.example.ru/dolina",
            page(ARTICLE_RU, "Реки", meta_charset="windows-1251").encode("cp1251"),
            [("Content-Type", "text/html")],
        )
        response(
            "https://heliu.example.cn/shangu",
            page(ARTICLE_ZH, "河流").encode("gb18030"),
            [("Content-Type", "text/html; charset=gb2312")],
        )
        # Records that must end in the ledger, each with its reason.
        response(
            "https://rivers.example.org/missing",
            b"<html>Not found</html>",
            [("Content-Type", "text/html")],
            status="404 Not Found",
        )
        response(
            "https://rivers.example.org/logo.png",
            b"\x89PNG\r\n\x1a\n" + b"\x00" * 64,
            [("Content-Type", "image/png")],
        )
        response("https://empty.example.org/", b"", [("Content-Type", "text/html")])
        response(
            "https://rivers.example.org/cut",
            river[: len(river) // 2],
            [("Content-Type", html)],
            extra={"WARC-Truncated": "length"},
        )
        response("https://nav.example.org/", page("", "Menu").encode(), [("Content-Type", html)])
        emit(
            "https://rivers.example.org/valleys",
            "revisit",
            http=StatusAndHeaders("200 OK", [("Content-Type", html)], protocol="HTTP/1.1"),
            extra={
                "WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
                "WARC-Refers-To-Target-URI": "https://rivers.example.org/valleys",
            },
        )
        emit(
            "https://rivers.example.org/valleys",
            "metadata",
            b"fetchTimeMs: 120\r\n",
            ctype="application/warc-fields",
        )
    return records
