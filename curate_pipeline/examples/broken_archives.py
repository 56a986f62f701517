"""Broken inputs, written on purpose: one file (or listing, or URL) per way the open web and
damaged storage break WARCs. The reliability tests run every case through the pipeline and
check that the run completes, the damage is in the ledger with its reason, the good records
beside it are still processed, and `read == kept + rejected`.

`curate broken-warcs --output DIR` writes them for a look by hand.
"""

from __future__ import annotations

import gzip
import io
import random
import socket
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import brotli
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curate_pipeline.document.warc.arc import arc_filedesc, arc_record
from curate_pipeline.document.warc.records import make_doc_id
from curate_pipeline.examples.sample import ARTICLE_BREAD, ARTICLE_RIVER, page

DATE = "2026-11-02T10:00:00Z"
HTML = "text/html; charset=utf-8"


@dataclass
class Case:
    """One broken input: where it is, which ledger reasons it must produce, and the doc_ids
    of the good records beside the damage that must still get through the read stage."""

    name: str
    path: str
    reasons: set[str]  # "stage:reason" expected in the ledger for this file
    good: list[str] = field(default_factory=list)


def record_id(case: str, n: int) -> str:
    return f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'broken/{case}/{n}')}"


class _Records:
    """Builds one WARC record at a time as bytes (a gzip member each, as Common Crawl)."""

    def __init__(self, case: str, gz: bool = True):
        self.case = case
        self.gz = gz
        self.n = 0

    def response(
        self,
        body: bytes,
        headers: list[tuple[str, str]] | None = None,
        http: bool = True,
        url: str | None = None,
    ) -> tuple[str, bytes]:
        """(doc_id, record bytes) of a response record holding `body`."""
        self.n += 1
        rid = record_id(self.case, self.n)
        buf = io.BytesIO()
        w = WARCWriter(buf, gzip=self.gz)
        url = url or f"https://{self.case.replace('_', '-')}.example.org/page/{self.n}"
        http_headers = (
            StatusAndHeaders("200 OK", headers or [("Content-Type", HTML)], protocol="HTTP/1.1")
            if http
            else None
        )
        rec = w.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            http_headers=http_headers,
            warc_headers_dict={"WARC-Record-ID": f"<{rid}>", "WARC-Date": DATE},
            warc_content_type=None if http else "application/http; msgtype=response",
        )
        w.write_record(rec)
        return rid, buf.getvalue()

    def good(self) -> tuple[str, bytes]:
        """A record of an ordinary English article, unique to this case and position."""
        article = ARTICLE_RIVER if self.n % 2 else ARTICLE_BREAD
        body = page(article + f"<p>Note {self.case} {self.n}.</p>", self.case)
        return self.response(body.encode("utf-8"))


def _raw_warc_record(rid: str, block: bytes, length: int, extra: str = "") -> bytes:
    """An uncompressed response record whose Content-Length says `length`, whatever the
    block really holds."""
    head = (
        "WARC/1.0\r\n"
        "WARC-Type: response\r\n"
        f"WARC-Record-ID: <{rid}>\r\n"
        f"WARC-Date: {DATE}\r\n"
        f"WARC-Target-URI: https://broken.example.org/{rid[-6:]}\r\n"
        "Content-Type: application/http; msgtype=response\r\n"
        f"{extra}"
        f"Content-Length: {length}\r\n\r\n"
    )
    return head.encode() + block + b"\r\n\r\n"


def _http_block(body: bytes, ctype: str = HTML, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _write(path: Path, parts: list[bytes]) -> str:
    path.write_bytes(b"".join(parts))
    return str(path)


def _truncated_member(d: Path) -> Case:
    r = _Records("truncated_member")
    a, b = r.good(), r.good()
    _, cut = r.good()
    c, e = r.good(), r.good()
    path = _write(d / "truncated_member.warc.gz", [a[1], b[1], cut[: len(cut) // 2], c[1], e[1]])
    return Case("truncated_member", path, {"read:truncated", "read:corrupt_file"},
                [a[0], b[0], c[0], e[0]])  # fmt: skip


def _cut_single_response(d: Path) -> Case:
    """A single-response WARC whose gzip stream ends early, its headers intact: the record
    keeps its row (`read:truncated`, with the bytes present), the cut bytes are a stretch."""
    r = _Records("cut_single")
    _, whole = r.response(page(ARTICLE_RIVER * 40, "cut single").encode())
    path = _write(d / "cut_single_response.warc.gz", [whole[: len(whole) * 3 // 4]])
    return Case("cut_single_response", path, {"read:truncated", "read:corrupt_file"}, [])


def _garbage_between(d: Path) -> Case:
    r = _Records("garbage_between")
    a, b, c = r.good(), r.good(), r.good()
    junk = random.Random(9).randbytes(3000)
    path = _write(d / "garbage_between.warc.gz", [a[1], junk, b[1], c[1]])
    return Case("garbage_between", path, {"read:corrupt_file"}, [a[0], b[0], c[0]])


def _garbage_between_plain(d: Path) -> Case:
    r = _Records("garbage_plain", gz=False)
    a, b, c = r.good(), r.good(), r.good()
    junk = b"this is not a WARC record\r\n" * 40
    path = _write(d / "garbage_between_plain.warc", [a[1], junk, b[1], c[1]])
    return Case("garbage_between_plain", path, {"read:corrupt_file"}, [a[0], b[0], c[0]])


def _content_length(d: Path, name: str, delta: int, reasons: set[str]) -> Case:
    r = _Records(name)
    a, b = r.good(), r.good()
    block = _http_block(page(ARTICLE_RIVER, name).encode())
    rid = record_id(name, 99)
    bad = _gz(_raw_warc_record(rid, block, len(block) + delta))
    path = _write(d / f"{name}.warc.gz", [a[1], bad, b[1]])
    return Case(name, path, reasons, [a[0], b[0]])


def _header_only(d: Path) -> Case:
    r = _Records("header_only")
    a, b = r.good(), r.good()
    rid = record_id("header_only", 99)
    bad = _gz(_raw_warc_record(rid, b"", 0))
    path = _write(d / "header_only.warc.gz", [a[1], bad, b[1]])
    return Case("header_only", path, {"read:not_http"}, [a[0], b[0]])


def _non_http_payload(d: Path) -> Case:
    r = _Records("non_http")
    a, b = r.good(), r.good()
    rid = record_id("non_http", 99)
    block = b"Hello! This block is a plain letter, no status line, no headers.\r\n" * 20
    bad = _gz(_raw_warc_record(rid, block, len(block)))
    path = _write(d / "non_http.warc.gz", [a[1], bad, b[1]])
    return Case("non_http", path, {"read:not_http"}, [a[0], b[0]])


def _binary_as_html(d: Path) -> Case:
    r = _Records("binary_html")
    a = r.good()
    _, bad = r.response(random.Random(7).randbytes(200_000))
    b = r.good()
    path = _write(d / "binary_html.warc.gz", [a[1], bad, b[1]])
    return Case("binary_html", path, {"decode:binary_payload"}, [a[0], b[0]])


def _huge_line(d: Path) -> Case:
    r = _Records("huge_line")
    a = r.good()
    line = b"<html><body><p>" + b"word " * (20_000_000 // 5) + b"</p></body></html>"
    _, bad = r.response(line)
    b = r.good()
    path = _write(d / "huge_line.warc.gz", [a[1], bad, b[1]])
    return Case("huge_line", path, {"read:too_large"}, [a[0], b[0]])


def _deep_nesting(d: Path) -> Case:
    r = _Records("deep_nesting")
    a = r.good()
    depth = 100_000
    body = b"<html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"
    _, bad = r.response(body)
    b = r.good()
    path = _write(d / "deep_nesting.warc.gz", [a[1], bad, b[1]])
    return Case("deep_nesting", path, {"extract:extract_empty"}, [a[0], b[0]])


def _invalid_utf8(d: Path) -> Case:
    r = _Records("invalid_utf8")
    a = r.good()
    noise = random.Random(3)
    raw = bytearray(page(ARTICLE_RIVER, "invalid").encode())
    for i in sorted(noise.sample(range(200, len(raw) - 200), 30)):
        raw[i] = 0xFF  # never valid in UTF-8
    rid, bad = r.response(bytes(raw))
    b = r.good()
    path = _write(d / "invalid_utf8.warc.gz", [a[1], bad, b[1]])
    return Case("invalid_utf8", path, set(), [a[0], rid, b[0]])


def _lying_charset(d: Path) -> Case:
    from curate_pipeline.examples.sample import ARTICLE_RU

    r = _Records("lying_charset")
    a = r.good()
    body = page(ARTICLE_RU, "Реки").encode("cp1251")  # declared UTF-8 below: a lie
    rid, bad = r.response(body, [("Content-Type", "text/html; charset=utf-8")])
    b = r.good()
    path = _write(d / "lying_charset.warc.gz", [a[1], bad, b[1]])
    return Case("lying_charset", path, set(), [a[0], rid, b[0]])


def _hostile_names(d: Path) -> Case:
    """Good pages whose URL and headers try to become a path: never used as a file name."""
    r = _Records("hostile_names")
    body = page(ARTICLE_BREAD + "<p>Names that are paths.</p>", "hostile").encode()
    headers = [("Content-Type", HTML), ("Content-Disposition", 'attachment; filename="../../x"')]
    a = r.response(body, headers, url="https://evil.example.org/../../../etc/passwd")
    b = r.response(body + b" ", headers, url="https://evil.example.org/%2e%2e/%2e%2e/etc/shadow")
    path = _write(d / "hostile_names.warc.gz", [a[1], b[1]])
    return Case("hostile_names", path, set(), [a[0], b[0]])


def _hostile_records(d: Path) -> Case:
    """Pages declaring charsets that are Python codecs but no text encoding (`undefined`
    raises on use; base64, hex, zip are bytes-to-bytes), and a URL whose host does not parse
    (`http://[www.example.com]/`: urlsplit raises on it). Each one once aborted the pass."""
    r = _Records("hostile_records")
    parts, ids = [], []
    for n, charset in enumerate(["undefined", "base64", "hex", "zip", "rot13", "punycode"]):
        body = page(ARTICLE_RIVER + f"<p>Charset {charset}.</p>", f"charset {n}").encode()
        rid, rec = r.response(body, [("Content-Type", f"text/html; charset={charset}")])
        parts.append(rec)
        ids.append(rid)
    body = page(ARTICLE_BREAD + "<p>An unparsable host.</p>", "bad host").encode()
    rid, rec = r.response(body, url="http://[www.example.com]/bread")
    path = _write(d / "hostile_records.warc.gz", [*parts, rec])
    return Case("hostile_records", path, set(), [*ids, rid])


def _bomb(d: Path, encoding: str) -> Case:
    name = f"{encoding}_bomb"
    r = _Records(name)
    a = r.good()
    zeros = b"<html><body>" + b"\x00" * 300_000_000
    if encoding == "gzip":
        c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        payload = c.compress(zeros) + c.flush()
    else:
        payload = brotli.compress(zeros, quality=5)
    _, bad = r.response(payload, [("Content-Type", HTML), ("Content-Encoding", encoding)])
    b = r.good()
    path = _write(d / f"{name}.warc.gz", [a[1], bad, b[1]])
    return Case(name, path, {"decode:decompression_bomb"}, [a[0], b[0]])


def _header_bomb(d: Path) -> Case:
    """A gzip member inflating to a 400 MB header line with no newline (389 KB on disk)."""
    r = _Records("header_bomb")
    a, b = r.good(), r.good()
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = b"WARC/1.0\r\nWARC-Type: response\r\nX-Junk: "
    bomb = c.compress(head + b"A" * 400_000_000) + c.flush()
    path = _write(d / "header_bomb.warc.gz", [a[1], bomb, b[1]])
    return Case("header_bomb", path, {"read:corrupt_file"}, [a[0], b[0]])


def _empty_file(d: Path) -> Case:
    return Case("zero_bytes", _write(d / "zero_bytes.warc.gz", []), {"read:unreadable_file"})


def _not_a_warc(d: Path) -> Case:
    path = _write(d / "not_a_warc.warc", [b"name,age\nalice,30\nbob,41\n" * 50])
    return Case("not_a_warc", path, {"read:unreadable_file"})


def _missing_in_listing(d: Path) -> Case:
    listing = d / "missing.paths"
    listing.write_text(f"{d / 'crawl' / 'does-not-exist.warc.gz'}\n")
    return Case("missing_in_listing", str(listing), {"read:unreadable_file"})


def _bad_member_data(d: Path) -> Case:
    """A few flipped bits inside one member of a 50-record file (zlib: invalid data or an
    incorrect data check): warcio stops there as if the file ended."""
    r = _Records("bad_member_data")
    recs = [r.good() for _ in range(50)]
    bad = bytearray(recs[6][1])
    mid = len(bad) // 2
    for k in (0, 7, 300):
        bad[mid + k] ^= 0x5A
    parts = [b for _, b in recs]
    parts[6] = bytes(bad)
    path = _write(d / "bad_member_data.warc.gz", parts)
    good = [rid for i, (rid, _) in enumerate(recs) if i != 6]
    return Case("bad_member_data", path, {"read:corrupt_record", "read:corrupt_file"}, good)


def _one_stream_gzip(d: Path) -> Case:
    """A whole WARC as one gzip member (ClueWeb, some wget/Heritrix files)."""
    r = _Records("one_stream", gz=False)
    recs = [r.good() for _ in range(12)]
    path = _write(d / "one_stream.warc.gz", [_gz(b"".join(b for _, b in recs))])
    return Case("one_stream_gzip", path, set(), [rid for rid, _ in recs])


def _warc_018(rid: str, block: bytes, length: int) -> bytes:
    """A WARC/0.18 response record (ClueWeb09's version): LF line ends, as its files have."""
    head = (
        "WARC/0.18\n"
        "WARC-Type: response\n"
        f"WARC-Target-URI: https://clueweb.example.org/{rid[-6:]}\n"
        f"WARC-Date: {DATE}\n"
        f"WARC-Record-ID: <{rid}>\n"
        "Content-Type: application/http;msgtype=response\n"
        f"Content-Length: {length}\n\n"
    )
    return head.encode() + block + b"\n\n"


def _clueweb_like(d: Path) -> Case:
    """WARC/0.18 in one gzip stream, one Content-Length off by one (ClueWeb09), and garbage
    in the middle of the stream: everything after the damage is still read."""
    name = "clueweb_like"
    ids, parts = [], []
    for n in range(10):
        rid = record_id(name, n)
        block = _http_block(page(ARTICLE_RIVER + f"<p>ClueWeb {n}.</p>", name).encode())
        parts.append(_warc_018(rid, block, len(block) - (1 if n == 3 else 0)))
        ids.append(rid)
        if n == 5:
            parts.append(b"<<< twenty bytes of junk, then more junk >>>\n" * 30)
    path = _write(d / "clueweb_like.warc.gz", [_gz(b"".join(parts))])
    return Case(name, path, {"read:corrupt_file"}, ids)


def _damaged_018_plain(d: Path) -> Case:
    """WARC/0.18, plain: garbage between records, then 24 more records."""
    name = "damaged_018"
    ids, parts = [], []
    for n in range(30):
        rid = record_id(name, n)
        block = _http_block(page(ARTICLE_BREAD + f"<p>Old {n}.</p>", name).encode())
        parts.append(_warc_018(rid, block, len(block)))
        ids.append(rid)
        if n == 5:
            parts.append(random.Random(5).randbytes(2000))
    path = _write(d / "damaged_018.warc", parts)
    return Case(name, path, {"read:corrupt_file"}, ids)


def _truncated_and_cut(d: Path) -> Case:
    """A record marked WARC-Truncated whose member is also cut mid-block: damage shows."""
    r = _Records("truncated_cut")
    a, b = r.good(), r.good()
    block = _http_block(page(ARTICLE_RIVER, "cut").encode())
    rid = record_id("truncated_cut", 99)
    whole = _raw_warc_record(rid, block, len(block), extra="WARC-Truncated: length\r\n")
    cut = _gz(whole[: len(whole) // 2])  # a whole member holding half a record
    path = _write(d / "truncated_and_cut.warc.gz", [a[1], cut, b[1]])
    return Case("truncated_and_cut", path, {"read:corrupt_record"}, [a[0], b[0]])


def _empty_200(d: Path) -> Case:
    r = _Records("empty_200")
    a = r.good()
    _, empty = r.response(b"", [("Content-Length", "0")])
    b = r.good()
    path = _write(d / "empty_200.warc.gz", [a[1], empty, b[1]])
    return Case("empty_200", path, {"read:empty_payload"}, [a[0], b[0]])


def _concatenated(d: Path) -> Case:
    """A file concatenated with itself: every WARC-Record-ID twice. Ids stay unique and the
    same whatever the splitting; the second copies are exact duplicates of the first."""
    r = _Records("concatenated")
    recs = [r.good() for _ in range(10)]
    once = b"".join(b for _, b in recs)
    path = _write(d / "concatenated.warc.gz", [once, once])
    return Case("concatenated", path, set(), [rid for rid, _ in recs])


def _arc_case(name: str, path: Path, n: int, gz: bool, junk_after: int | None = None) -> Case:
    """A Common Crawl 2008-style ARC: a filedesc whose length is wrong, then `n` captures,
    one with `Server:nginx` (no space) and one a gzip Content-Encoding over a decoded body;
    `junk_after`: bytes that are no record after that capture."""
    parts = [arc_filedesc(path.name, length=5)]
    urls: list[str | None] = [None]
    for i in range(n):
        url = f"http://{name.replace('_', '-')}.example.com/page/{i}"
        body = page((ARTICLE_RIVER if i % 2 else ARTICLE_BREAD) + f"<p>ARC {i}.</p>", name)
        extra = "Server:nginx\r\n" if i == 1 else "Content-Encoding: gzip\r\n" if i == 2 else ""
        parts.append(arc_record(url, _http_block(body.encode(), extra=extra), ip="192.0.2.7"))
        urls.append(url)
        if i == junk_after:
            parts.append(b"\x00\x01 this is no ARC record \xff\xfe\n" * 20)
            urls.append(None)
    if gz:
        parts = [_gz(p) for p in parts]
    ids, offset = [], 0
    for url, part in zip(urls, parts, strict=True):
        if url:
            ids.append(make_doc_id(None, url, "2008-09-05T12:00:00Z", f"{path}@{offset}"))
        offset += len(part)
    reasons = {"read:not_response"} | ({"read:corrupt_file"} if junk_after is not None else set())
    return Case(name, _write(path, parts), reasons, ids)


def _cc_arc(d: Path) -> Case:
    return _arc_case("cc_arc", d / "cc2008.arc.gz", 8, gz=True)


def _arc_plain_damaged(d: Path) -> Case:
    return _arc_case("arc_plain_damaged", d / "damaged.arc", 8, gz=False, junk_after=3)


def refused_url() -> str:
    """An http:// URL on a local port that nothing listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/crawl/refused.warc.gz"


CASES: list[Callable[[Path], Case]] = [
    _truncated_member,
    _cut_single_response,
    _garbage_between,
    _garbage_between_plain,
    lambda d: _content_length(d, "content_length_long", 4000, {"read:corrupt_record"}),
    # too short: the record ends early, and the rest of its block is not a record
    lambda d: _content_length(
        d, "content_length_short", -300, {"read:corrupt_record", "read:corrupt_file"}
    ),
    _header_only,
    _non_http_payload,
    _binary_as_html,
    _huge_line,
    _deep_nesting,
    _invalid_utf8,
    _lying_charset,
    _hostile_names,
    _hostile_records,
    lambda d: _bomb(d, "gzip"),
    lambda d: _bomb(d, "br"),
    _header_bomb,
    _empty_file,
    _not_a_warc,
    _missing_in_listing,
    _bad_member_data,
    _one_stream_gzip,
    _clueweb_like,
    _damaged_018_plain,
    _truncated_and_cut,
    _empty_200,
    _cc_arc,
    _arc_plain_damaged,
    _concatenated,
]


def write_broken_inputs(directory: str | Path) -> list[Case]:
    """Write every broken case under `directory`. (A URL that refuses connections is no case
    here: it is a network failure, which fails the task for Spark to retry, not damage.)"""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    cases = [make(d) for make in CASES]
    return cases
