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

from pipeline.sample import ARTICLE_BREAD, ARTICLE_RIVER, page

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
    return Case("truncated_member", path, {"read:corrupt_file"}, [a[0], b[0], c[0], e[0]])


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
    from pipeline.sample import ARTICLE_RU

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


def refused_url() -> str:
    """An http:// URL on a local port that nothing listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/crawl/refused.warc.gz"


CASES: list[Callable[[Path], Case]] = [
    _truncated_member,
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
    lambda d: _bomb(d, "gzip"),
    lambda d: _bomb(d, "br"),
    _header_bomb,
    _empty_file,
    _not_a_warc,
    _missing_in_listing,
]


def write_broken_inputs(directory: str | Path, with_url: bool = True) -> list[Case]:
    """Write every broken case under `directory`; the refused URL is an input, not a file."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    cases = [make(d) for make in CASES]
    if with_url:
        cases.append(Case("refused_url", refused_url(), {"read:unreadable_file"}))
    return cases
