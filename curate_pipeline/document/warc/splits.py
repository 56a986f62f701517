"""Byte-range splits of a gzipped WARC file, so several tasks can share one large file.

Common Crawl WARCs (and ARCs) are a gzip member per record, so a record can be found from any
byte offset: scan for the gzip magic and keep the first member that inflates to a record
header (`WARC/x.y`, any version, or an ARC header line).
Split i covers the records whose member starts in [size*i/k, size*(i+1)/k); every record
falls in exactly one split. A file gzipped as a single member has no later member starts,
so split 0 reads it all and the other splits are empty.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from typing import BinaryIO

from curate_pipeline.document.warc.arc import MAX_LINE, starts_arc_record

GZIP_MAGIC = b"\x1f\x8b\x08"
_WINDOW = 1 << 16
_MAGIC_RE = re.compile(re.escape(GZIP_MAGIC))
WARC_LINE = re.compile(rb"WARC/\d{1,2}\.\d{1,3}\r?\n")
# gzip members, plain WARC headers, and (after a newline) the URL scheme of an ARC header line
_RECORD_RE = re.compile(
    re.escape(GZIP_MAGIC) + rb"|WARC/\d{1,2}\.\d{1,3}\r?\n|(?<=\n)(?:https?|ftp|filedesc|dns):"
)
_MAX_PATTERN = 16  # longest match of any pattern


def starts_record(data: bytes) -> bool:
    """Does a record header (WARC of any version, or ARC) start at data[0]?"""
    if data.startswith(b"WARC/"):
        return WARC_LINE.match(data) is not None
    return starts_arc_record(data)


def is_record_member(data: bytes) -> bool:
    """Does a gzip member starting at data[0] inflate to a WARC or ARC record header?"""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        head = d.decompress(data, MAX_LINE)
    except zlib.error:
        return False
    return starts_record(head)


def _scan(
    stream: BinaryIO,
    start: int,
    stop: int | None,
    pattern: re.Pattern,
    accept: Callable[[bytes], bool],
) -> int | None:
    """First offset in [start, stop) where `pattern` matches and `accept(window)` agrees.

    `stream` is positioned at `start`; reads forward in windows, never the whole file.
    """
    buf = b""
    pos = 0  # next index of buf to search; buf[0] is at absolute offset `start`
    eof = False
    while True:
        while not eof and len(buf) - pos < _WINDOW:
            data = stream.read(_WINDOW)
            eof = not data
            buf += data
        m = pattern.search(buf, pos)
        j = m.start() if m else -1
        if j >= 0 and stop is not None and start + j >= stop:
            return None
        if j < 0:
            if eof:
                return None
            j = max(pos, len(buf) - _MAX_PATTERN + 1)  # keep a possible partial match
            start, buf, pos = start + j, buf[j:], 0
            continue
        if accept(buf[j : j + _WINDOW]):
            return start + j
        pos = j + 1
        if pos > 4 * _WINDOW:  # drop what has been searched
            start, buf, pos = start + pos, buf[pos:], 0


def find_member_start(stream: BinaryIO, start: int, stop: int) -> int | None:
    """First offset in [start, stop) where a WARC record's gzip member begins.

    `stream` is positioned at `start`; None when no record begins in the range.
    """
    return _scan(stream, start, stop, _MAGIC_RE, is_record_member)


def is_plain_record(data: bytes) -> bool:
    """Does an uncompressed WARC (with a WARC-Type field) or ARC record start at data[0]?"""
    if data.startswith(b"WARC/"):
        return WARC_LINE.match(data) is not None and b"warc-type:" in data[:4096].lower()
    return starts_arc_record(data)


def find_record_start(stream: BinaryIO, start: int, stop: int | None) -> int | None:
    """First offset in [start, stop) where a WARC record begins, gzipped or plain: where
    reading resumes after damage."""
    return _scan(
        stream,
        start,
        stop,
        _RECORD_RE,
        lambda w: is_record_member(w) if w.startswith(GZIP_MAGIC) else is_plain_record(w),
    )


def split_range(size: int, split: int, nsplits: int) -> tuple[int, int]:
    return size * split // nsplits, size * (split + 1) // nsplits
