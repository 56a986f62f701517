"""ARC header lines (Internet Archive ARC v1 and v2, Common Crawl 2008-2012).

An ARC record is one header line, then `length` bytes (for HTTP captures: the status line, the
headers and the body), then a newline. v1: `URL IP-address Archive-date Content-type
Archive-length`; v2 adds result code, checksum, location, offset and file name before the
length. The file opens with a `filedesc://` record whose length is not to be trusted (Common
Crawl's do not match their blocks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DATE = re.compile(rb"\d{12,14}")
_SCHEME = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*:")
MAX_LINE = 1 << 14  # an ARC header line longer than this is not one


@dataclass(frozen=True)
class ArcHeader:
    url: str
    ip: str
    date: str  # ISO 8601, as WARC-Date
    mime: str
    length: int

    @property
    def is_filedesc(self) -> bool:
        return self.url.startswith("filedesc:")


def iso_date(digits: bytes) -> str:
    d = digits.decode().ljust(14, "0")
    return f"{d[0:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}Z"


def parse_arc_line(line: bytes) -> ArcHeader | None:
    """The header of an ARC record, or None when `line` is not one."""
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        return None
    fields = line.split()
    if len(fields) < 5 or not fields[-1].isdigit() or not _SCHEME.match(fields[0]):
        return None
    if not _DATE.fullmatch(fields[2]):
        return None
    # v1 has 5 fields; v2 has 10 (mime is the 4th in both). A v1 mime may hold spaces.
    mime = fields[3] if len(fields) == 10 else b" ".join(fields[3:-1])
    try:
        return ArcHeader(
            url=fields[0].decode("utf-8", "replace"),
            ip=fields[1].decode("ascii", "replace"),
            date=iso_date(fields[2]),
            mime=mime.decode("ascii", "replace"),
            length=int(fields[-1]),
        )
    except ValueError:
        return None


def starts_arc_record(data: bytes) -> bool:
    """Does an ARC header line start at data[0]?"""
    end = data.find(b"\n", 0, MAX_LINE)
    return end > 0 and parse_arc_line(data[: end + 1]) is not None


def arc_record(url: str, block: bytes, date: str = "20080905120000", ip: str = "0.0.0.0",
               mime: str = "text/html", length: int | None = None) -> bytes:  # fmt: skip
    """One ARC v1 record: header line, block, newline (`length` may lie, as in damaged files)."""
    n = len(block) if length is None else length
    return f"{url} {ip} {date} {mime} {n}\n".encode() + block + b"\n"


def arc_filedesc(name: str, date: str = "20080905120000", length: int | None = None) -> bytes:
    """The `filedesc://` record ARC files open with (Common Crawl's lengths do not match)."""
    body = b"1 0 curate-pipeline\nURL IP-address Archive-date Content-type Archive-length\n"
    return arc_record(f"filedesc://{name}", body, date, "0.0.0.0", "text/plain", length)
