"""Stream the records of one WARC file and decide, per record, whether it goes on.

Pure Python over a byte stream (no Spark). Every record read yields exactly one row: a
candidate HTML page (with its raw payload bytes) or a rejection with its reason. A file that
breaks mid-way yields one `corrupt_file` row for the unread rest, so nothing vanishes silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BUFF_SIZE, DecompressingBufferedReader

from pipeline.warc.splits import find_record_start

STAGE = "read"

# crawl_pos = file_index * 2**40 + byte offset: one sortable int64, files up to 1 TiB.
OFFSET_BITS = 40


def crawl_pos(file_index: int, offset: int) -> int:
    return (file_index << OFFSET_BITS) + offset


@dataclass(frozen=True)
class RecordPolicy:
    max_record_bytes: int
    html_content_types: tuple[str, ...]
    accept_status: tuple[int, ...]
    reject_truncated: bool = True
    max_header_bytes: int = 8 << 20

    @classmethod
    def from_conf(cls, read) -> RecordPolicy:
        """From the `read` config section (pipeline.config.ReadConf)."""
        return cls(
            max_record_bytes=read.max_record_bytes,
            html_content_types=tuple(read.html_content_types),
            accept_status=tuple(read.accept_status),
            reject_truncated=read.reject_truncated,
            max_header_bytes=read.max_header_bytes,
        )


def clean_uri(uri: str | None) -> str:
    """wget wraps `WARC-Target-URI` in <...>; strip that and whitespace."""
    if not uri:
        return ""
    uri = uri.strip()
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    return uri


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def make_doc_id(record_id: str | None, url: str, date: str, where: str) -> str:
    """The WARC-Record-ID without brackets, else a SHA-1 of URL + date (+ position)."""
    if record_id:
        return record_id.strip().strip("<>")
    return "sha1:" + hashlib.sha1(f"{url}\x00{date}\x00{where}".encode()).hexdigest()


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def sniff_html(head: bytes) -> bool:
    """Markup sniffing for records with no declared type (never libmagic guessing)."""
    h = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return h.startswith((b"<!doctype html", b"<html", b"<head", b"<!--", b"<body", b"<meta"))


def _base_row(file_index: int, path: str, rec: Any) -> dict[str, Any]:
    h = rec.rec_headers
    url = clean_uri(h.get_header("WARC-Target-URI"))
    return {
        "doc_id": h.get_header("WARC-Record-ID"),
        "url": url,
        "host": host_of(url),
        "warc_date": h.get_header("WARC-Date") or "",
        "warc_type": rec.rec_type or "",
        "warc_file": path,
        "warc_offset": None,
        "crawl_pos": None,
        "http_status": None,
        "content_type": None,
        "transfer_encoding": None,
        "content_encoding": None,
        "payload": None,
        "reject_stage": None,
        "reject_reason": None,
        "reject_detail": None,
    }


def _place(row: dict[str, Any], file_index: int, path: str, offset: int) -> None:
    row["warc_offset"] = offset
    row["crawl_pos"] = crawl_pos(file_index, offset)
    row["doc_id"] = make_doc_id(row["doc_id"], row["url"], row["warc_date"], f"{path}@{offset}")


def _reject(row: dict[str, Any], reason: str, detail: str = "") -> dict[str, Any]:
    row["reject_stage"] = STAGE
    row["reject_reason"] = reason
    row["reject_detail"] = detail
    return row


def _judge(rec: Any, row: dict[str, Any], policy: RecordPolicy) -> dict[str, Any]:
    """Fill `row` from the record and reject it, or keep it with its payload bytes."""
    if rec.rec_type != "response":
        return _reject(row, "not_response", rec.rec_type or "unknown")
    http = rec.http_headers
    if http is None or not http.protocol.upper().startswith("HTTP"):
        return _reject(row, "not_http", rec.rec_headers.get_header("Content-Type") or "")
    try:
        status = int(http.get_statuscode() or 0)
    except ValueError:
        status = 0
    row["http_status"] = status
    ctype = http.get_header("Content-Type") or ""
    row["content_type"] = ctype
    if status not in policy.accept_status:
        return _reject(row, "http_status", str(status))
    truncated = rec.rec_headers.get_header("WARC-Truncated")
    if truncated and policy.reject_truncated:
        return _reject(row, "truncated", truncated)
    mtype = media_type(ctype) or media_type(
        rec.rec_headers.get_header("WARC-Identified-Payload-Type")
    )
    if mtype and mtype not in policy.html_content_types:
        return _reject(row, "not_html", mtype)  # decided on headers: payload never read
    payload = rec.raw_stream.read(policy.max_record_bytes + 1)
    if len(payload) > policy.max_record_bytes:
        return _reject(row, "too_large", f"payload > {policy.max_record_bytes} bytes")
    if not mtype and not sniff_html(payload):
        return _reject(row, "not_html", "no content type, payload is not markup")
    if not payload.strip():
        return _reject(row, "empty_payload", "")
    row["transfer_encoding"] = http.get_header("Transfer-Encoding")
    row["content_encoding"] = http.get_header("Content-Encoding")
    row["payload"] = payload
    return row


class _CountingReader:
    """Counts the bytes warcio pulls (to spot a tail it could not parse as records), and
    stops at `limit` bytes, the end of this task's split."""

    def __init__(self, stream: Any, limit: int | None = None):
        self.stream = stream
        self.remaining = limit
        self.consumed = 0
        self.tail = b""

    def _room(self, n: int) -> int:
        if self.remaining is None:
            return n
        return self.remaining if n is None or n < 0 else min(n, self.remaining)

    def _count(self, data: bytes) -> bytes:
        self.consumed += len(data)
        if self.remaining is not None:
            self.remaining -= len(data)
        self.tail = (self.tail + data[-64:])[-64:]
        return data

    def read(self, n: int = -1) -> bytes:
        return self._count(self.stream.read(self._room(n)))

    def readline(self, n: int = -1) -> bytes:  # warcio reads uncompressed files by line too
        return self._count(self.stream.readline(self._room(n)))


class _BoundedReader(DecompressingBufferedReader):
    """warcio's reader with header reading bounded. warcio reads a header line whole, and a
    gzip member can inflate to gigabytes with no newline: lines come in pieces of at most
    `max_header` bytes, and one record's header lines may not add up to more."""

    def __init__(self, stream: Any, max_header: int):
        super().__init__(stream, block_size=BUFF_SIZE)
        self.max_header = max_header
        self.header_bytes = 0

    def readline(self, length: int | None = None) -> bytes:
        if length is None or length < 0 or length > self.max_header:
            length = self.max_header
        line = super().readline(length)
        self.header_bytes += len(line)
        if self.header_bytes > self.max_header:
            raise ValueError(
                f"record headers longer than {self.max_header} bytes (read.max_header_bytes)"
            )
        return line


def _block_check(rec: Any, it: ArchiveIterator, errs_before: int) -> str | None:
    """Why the record's Content-Length is wrong, or None. Reads the rest of the block (warcio
    would read it anyway to find the next record)."""
    stream = rec.raw_stream
    while stream.read(1 << 16):
        pass
    missing = getattr(stream, "limit", 0)
    if missing > 0:
        return f"the block ends {missing} byte(s) before its Content-Length: record cut short"
    it.get_record_offset()  # makes warcio look for the blank lines after the block
    if it.err_count > errs_before:
        return "the block goes on past its Content-Length (no blank line after it)"
    return None


class _Damage(Exception):
    """Bytes from `offset` could not be parsed as WARC records."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset = offset


def _iter_span(
    stream: Any,
    file_index: int,
    path: str,
    policy: RecordPolicy,
    base: int,
    limit: int | None,
    seen_ids: set[str],
) -> Iterator[dict[str, Any]]:
    """Rows of the records from byte `base`; raises _Damage where parsing breaks."""
    counted = _CountingReader(stream, limit)
    it = ArchiveIterator(counted)
    reader = it.reader = _BoundedReader(it.fh, policy.max_header_bytes)
    end = base
    n = 0
    try:
        for rec in it:
            reader.header_bytes = 0  # from here on: the next record's headers
            if n == 0 and base == 0 and rec.format != "warc":
                # warcio falls back to parsing ARC, and reads any text file as ARC records.
                yield file_error_row(
                    file_index,
                    path,
                    "unreadable_file",
                    "not a WARC file (no WARC/1.x record header at byte 0; ARC is not read)",
                )
                return
            row = _base_row(file_index, path, rec)
            errs = it.err_count
            try:
                row = _judge(rec, row, policy)
                bad_length = _block_check(rec, it, errs)
            except Exception as e:  # a malformed record, not the whole file
                bad_length = f"{type(e).__name__}: {e}"[:500]
            if bad_length and row["reject_reason"] is None:
                row = _reject(row, "corrupt_record", bad_length)
                row["payload"] = None
            # Only now: warcio has read the record to its end and knows its offset.
            offset = max(base + it.get_record_offset(), end)
            # warcio reports a negative length for a single-member gzip file.
            end = max(offset + (it.get_record_length() or 0), offset)
            _place(row, file_index, path, offset)
            if row["doc_id"] in seen_ids:  # wget has been seen to reuse a WARC-Record-ID
                row["doc_id"] = f"{row['doc_id']}#{offset}"
            seen_ids.add(row["doc_id"])
            n += 1
            yield row
    except Exception as e:
        raise _Damage(end, f"{type(e).__name__}: {' '.join(str(e).split())}") from e
    leftover = base + counted.consumed - end
    if n == 0:
        if base == 0 and counted.consumed == 0:
            raise _Damage(0, "the file is empty")
        raise _Damage(base, "no WARC record " + ("in the file" if base == 0 else "here"))
    if leftover > 0 and counted.tail[-min(leftover, 64) :].strip(b"\r\n\x00 "):
        raise _Damage(end, f"{leftover} byte(s) after the last complete record")


def iter_warc_rows(
    stream: Any,
    file_index: int,
    path: str,
    policy: RecordPolicy,
    base: int = 0,
    limit: int | None = None,
    reopen: Callable[[int], Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """One row per WARC record of `stream`; each damaged stretch becomes one ledger row.

    `stream` starts at byte `base` of the file (a split, see warc/splits.py) and is read for
    at most `limit` bytes; offsets in the rows are offsets in the file. Where parsing breaks
    (a cut gzip member, garbage between records, a wrong Content-Length), `reopen(offset)`,
    when given, opens the file again so reading resumes at the next record start.
    """
    stop = None if limit is None else base + limit
    seen_ids: set[str] = set()
    pos = base
    rows = 0
    opened: list[Any] = []
    try:
        while True:
            span_limit = None if stop is None else stop - pos
            try:
                for row in _iter_span(stream, file_index, path, policy, pos, span_limit, seen_ids):
                    rows += 1
                    yield row
                return
            except _Damage as d:
                at = max(d.offset, pos)  # never behind where this span began: progress
                resume = None
                if reopen is not None and (stop is None or at + 1 < stop):
                    with reopen(at + 1) as fh:
                        resume = find_record_start(fh, at + 1, stop)
                # A split's end is the next split's first record: the same row either way.
                upto = resume if resume is not None else stop
                whole_file = at == 0 and upto is None and rows == 0
                reason = "unreadable_file" if whole_file else "corrupt_file"
                detail = (
                    f"not a WARC file: {d}"
                    if reason == "unreadable_file"
                    else f"bytes {at} to the end are not WARC records ({d}): "
                    "file truncated or damaged"
                    if upto is None
                    else f"bytes {at} to {upto} are not WARC records ({d}); "
                    f"reading resumed at byte {upto}"
                )
                rows += 1
                yield file_error_row(file_index, path, reason, detail[:500], offset=at)
                if resume is None:
                    return
                stream = reopen(resume)  # type: ignore[misc]
                opened.append(stream)
                pos = resume
    finally:
        for fh in opened:
            fh.close()


def file_error_row(
    file_index: int, path: str, reason: str, detail: str, offset: int = 0
) -> dict[str, Any]:
    """A ledger row for a file, or a stretch of it, that yielded no records. Its id and
    position depend on the file and the offset only, so any split of the file gives the
    same row."""
    doc_id = "file:" + hashlib.sha1(f"{path}\x00{offset}".encode()).hexdigest()
    return {
        "doc_id": doc_id,
        "url": path,
        "host": "",
        "warc_date": "",
        "warc_type": "",
        "warc_file": path,
        "warc_offset": offset,
        "crawl_pos": crawl_pos(file_index, offset),
        "http_status": None,
        "content_type": None,
        "transfer_encoding": None,
        "content_encoding": None,
        "payload": None,
        "reject_stage": STAGE,
        "reject_reason": reason,
        "reject_detail": detail,
    }
