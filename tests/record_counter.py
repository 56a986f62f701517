"""An independent count of the records in an archive file, for the reader's tests.

Deliberately simple and sharing no code with curate_pipeline/document/warc: inflate every gzip
member
with the standard library, then walk the bytes: a `WARC/` line starts a record whose header
block ends at the first blank line and whose Content-Length says how much to skip; an ARC header
line (`URL IP DATE MIME LENGTH`) says the same in its last field.
"""

from __future__ import annotations

import gzip
import re
import zlib

_CONTENT_LENGTH = re.compile(rb"^content-length:[ \t]*(\d+)[ \t]*\r?$", re.I | re.M)
_NEXT_ARC_LINE = re.compile(rb"\n(?=\S+://\S* \S+ \d{12,14} )")
_ARC_ANY = re.compile(rb"\S+:\S* \S+ \d{12,14} .*?(\d+)\r?\n")


def inflate(data: bytes) -> bytes:
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def count_records(data: bytes) -> int:
    """Records in an intact WARC (any version) or ARC file, plain or gzipped."""
    raw = inflate(data)
    i, n = 0, 0
    while True:
        while i < len(raw) and raw[i] in b"\r\n":
            i += 1
        if i >= len(raw):
            return n
        if raw.startswith(b"WARC/", i):
            end = raw.find(b"\r\n\r\n", i)
            end2 = raw.find(b"\n\n", i)
            if end < 0 or (0 <= end2 < end):
                head_end = end2 + 2
            else:
                head_end = end + 4
            m = _CONTENT_LENGTH.search(raw, i, head_end)
            assert m, f"no Content-Length in the record at {i}"
            i = head_end + int(m.group(1))
        else:
            m = _ARC_ANY.match(raw, i)
            assert m, f"neither WARC nor ARC at {i}: {raw[i : i + 60]!r}"
            if raw.startswith(b"filedesc:", i):
                # its length is not to be trusted: skip to the next record line
                j = _NEXT_ARC_LINE.search(raw, m.end())
                i = len(raw) if j is None else j.start() + 1
                n += 1
                continue
            i = m.end() + int(m.group(1))
        n += 1


def gzip_members(data: bytes) -> list[tuple[int, int, bytes]]:
    """(start, end, inflated) of each gzip member of an intact multi-member file."""
    out, pos = [], 0
    while pos < len(data):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        inflated = d.decompress(data[pos:])
        assert d.eof, f"the member at {pos} does not end"
        end = len(data) - len(d.unused_data)
        out.append((pos, end, inflated))
        pos = end
    return out


_RECORD_ID = re.compile(rb"^WARC-Record-ID:[ \t]*<?([^>\r\n]+)>?", re.I | re.M)


def record_ids(inflated: bytes) -> list[str]:
    return [m.group(1).decode().strip() for m in _RECORD_ID.finditer(inflated)]
