"""Stream the records of one WARC or ARC file and decide, per record, whether it goes on.

Pure Python over a byte stream (no Spark). Every record in the file yields exactly one row: a
candidate HTML page (with its raw payload bytes) or a rejection with its reason; every damaged
stretch between records yields one `corrupt_file` row, and reading goes on after it
(warc/framing.py finds the records and the damage).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from curate_pipeline.document.warc.framing import Damage, Framer, Record
from curate_pipeline.document.warc.splits import find_record_start
from curate_pipeline.document.warc.streams import TransportError

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
    verify_member_bytes: int = 32 << 20
    length_slack: int = 2

    @classmethod
    def from_conf(cls, read) -> RecordPolicy:
        """From the `read` config section (curate_pipeline.config.ReadConf)."""
        return cls(
            max_record_bytes=read.max_record_bytes,
            html_content_types=tuple(read.html_content_types),
            accept_status=tuple(read.accept_status),
            reject_truncated=read.reject_truncated,
            max_header_bytes=read.max_header_bytes,
            verify_member_bytes=read.verify_member_bytes,
            length_slack=read.length_slack_bytes,
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


# Every column a reader row has (the document schema's first columns), unset.
UNSET_ROW: dict[str, Any] = dict.fromkeys((
    "doc_id", "url", "host", "warc_date", "warc_type", "warc_file", "warc_offset", "crawl_pos",
    "http_status", "content_type", "skipped_bytes", "transfer_encoding", "content_encoding",
    "payload", "reject_stage", "reject_reason", "reject_detail", "input_metadata",
))  # fmt: skip


def _base_row(path: str, rec: Record) -> dict[str, Any]:
    h = rec.headers
    url = clean_uri(h.get_header("WARC-Target-URI"))
    return {
        **UNSET_ROW,
        "doc_id": h.get_header("WARC-Record-ID"),
        "url": url,
        "host": host_of(url),
        "warc_date": (h.get_header("WARC-Date") or "").strip(),
        "warc_type": rec.rec_type,
        "warc_file": path,
    }


def _place(row: dict[str, Any], file_index: int, path: str, offset: int, sub: int) -> None:
    """A record's offset is its unit's start (where a reader seeks to); its crawl position adds
    its index among the records of a gzip member that holds several (a one-stream file)."""
    row["warc_offset"] = offset
    row["crawl_pos"] = crawl_pos(file_index, offset + sub)
    where = f"{path}@{offset}" + (f"+{sub}" if sub else "")
    row["doc_id"] = make_doc_id(row["doc_id"], row["url"], row["warc_date"], where)


def _reject(row: dict[str, Any], reason: str, detail: str = "") -> dict[str, Any]:
    row["reject_stage"] = STAGE
    row["reject_reason"] = reason
    row["reject_detail"] = detail
    return row


def _judge(rec: Record, row: dict[str, Any], policy: RecordPolicy) -> dict[str, Any]:
    """Fill `row` from the record and reject it, or keep it with its payload bytes."""
    if rec.rec_type == "conversion":  # WET: the text Common Crawl extracted, no HTTP
        return _judge_text(rec, row, policy)
    if rec.rec_type != "response":
        return _reject(row, "not_response", rec.rec_type or "unknown")
    http = rec.http_headers(policy.max_header_bytes)
    if http is None or not http.protocol.upper().startswith("HTTP"):
        return _reject(row, "not_http", rec.headers.get_header("Content-Type") or "")
    try:
        status = int(http.get_statuscode() or 0)
    except ValueError:
        status = 0
    row["http_status"] = status
    ctype = http.get_header("Content-Type") or ""
    row["content_type"] = ctype
    if status not in policy.accept_status:
        return _reject(row, "http_status", str(status))
    truncated = rec.headers.get_header("WARC-Truncated")
    if truncated and policy.reject_truncated:
        return _reject(row, "truncated", truncated)
    if rec.block.remaining == 0:
        return _reject(row, "empty_payload", "")
    mtype = media_type(ctype) or media_type(rec.headers.get_header("WARC-Identified-Payload-Type"))
    if mtype and mtype not in policy.html_content_types:
        return _reject(row, "not_html", mtype)  # decided on headers: payload never read
    payload = rec.block.read(policy.max_record_bytes + 1)
    if len(payload) > policy.max_record_bytes:
        return _reject(row, "too_large", f"payload > {policy.max_record_bytes} bytes")
    if not payload.strip():
        return _reject(row, "empty_payload", "")
    if not mtype and not sniff_html(payload):
        return _reject(row, "not_html", "no content type, payload is not markup")
    row["transfer_encoding"] = http.get_header("Transfer-Encoding")
    row["content_encoding"] = http.get_header("Content-Encoding")
    row["payload"] = payload
    return row


def _judge_text(rec: Record, row: dict[str, Any], policy: RecordPolicy) -> dict[str, Any]:
    """A conversion record (WET): its block is the page's text (UTF-8), kept as the payload;
    the extract stage takes it as it is."""
    row["content_type"] = rec.headers.get_header("Content-Type") or "text/plain"
    payload = rec.block.read(policy.max_record_bytes + 1)
    if len(payload) > policy.max_record_bytes:
        return _reject(row, "too_large", f"payload > {policy.max_record_bytes} bytes")
    if not payload.strip():
        return _reject(row, "empty_payload", "")
    row["payload"] = payload
    return row


def _record_row(
    rec: Record, framer: Framer, file_index: int, path: str, policy: RecordPolicy
) -> dict[str, Any]:
    """The record's row, judged after its whole block is read: damage wins over every other
    reason (a cut record that also says WARC-Truncated is damage first). A record whose gzip
    member breaks keeps its row: one the file ends inside is a truncated record with the
    bytes there were; one whose member fails zlib's checks is corrupt (no byte of it trusted)."""
    row = _base_row(path, rec)
    try:
        row = _judge(rec, row, policy) if rec.bad is None else row
        problem = framer.finish(rec)
    except TransportError:
        raise  # the network, not the record: the task fails and Spark reruns it
    except Exception as e:  # a malformed record, not the whole file
        framer.finish(rec)
        problem = f"{type(e).__name__}: {' '.join(str(e).split())}"[:300]
    if rec.bad is not None:
        row = _reject(row, "corrupt_record", f"{rec.bad}: no byte of the member is trusted")
    elif rec.cut is not None and problem is not None and problem == rec.problem:
        row = _cut(row, rec, policy)
    elif problem:
        before = row["reject_reason"]
        also = f"; also {before}: {row['reject_detail']}" if before else ""
        cut = f"; {rec.cut}" if rec.cut is not None else ""
        row = _reject(row, "corrupt_record", f"{problem}{cut}{also}"[:500])
        row["payload"] = None
    _place(row, file_index, path, rec.offset, rec.sub)
    return row


def _cut(row: dict[str, Any], rec: Record, policy: RecordPolicy) -> dict[str, Any]:
    """A record the file ends inside: a truncated record (read.reject_truncated decides, as
    for WARC-Truncated), its detail naming the cut and the bytes present. Kept, the bytes
    present go on to extraction like any truncated page's."""
    what = f"{rec.cut}: {rec.present:,} of {rec.length:,} block bytes present"
    before = row["reject_reason"]
    if before is None and not policy.reject_truncated:
        return row
    row["payload"] = None
    if before is not None and before != "truncated":
        # decided on its headers (not a response, a 404, an image): that reason stands
        row["reject_detail"] = f"{row['reject_detail']}; {what}"[:500]
        return row
    also = f"; also WARC-Truncated: {row['reject_detail']}" if before == "truncated" else ""
    return _reject(row, "truncated", f"{what}{also}"[:500])


class _Counted:
    """A stream that counts the bytes read from it (where a scan that found nothing ended)."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.n = 0

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n)
        self.n += len(data)
        return data


@dataclass
class _Stretch:
    """Consecutive damage with no record header between: one ledger row."""

    offset: int
    sub: int
    first: str  # what the first piece of it was
    pieces: int = 1
    skipped: int | None = None  # file bytes, where a raw scan measured them
    upto: int | None = None  # where reading resumed (None: the end of the file or split)

    inside: bool = False  # it began inside a gzip member that inflated (framing damage)

    def row(self, file_index: int, path: str, whole_file: bool) -> dict[str, Any]:
        more = f"; {self.pieces} damaged pieces in a row" if self.pieces > 1 else ""
        resumed = f"; reading resumed at byte {self.upto}" if self.upto is not None else ""
        if whole_file:
            reason, detail = "unreadable_file", f"not a WARC or ARC file: {self.first}{more}"
        elif self.inside:
            reason = "corrupt_file"
            where = f"record {self.sub} of " if self.sub else ""
            detail = f"damage at {where}the gzip member at byte {self.offset}: {self.first}{more}"
            detail += resumed if self.upto != self.offset else ""
        elif self.upto is None:
            reason = "corrupt_file"
            detail = f"bytes {self.offset} to the end are damaged ({self.first}{more})"
        else:
            reason = "corrupt_file"
            detail = f"bytes {self.offset} to {self.upto} are damaged ({self.first}{more}){resumed}"
        row = file_error_row(file_index, path, reason, detail[:500], self.offset, self.sub)
        row["skipped_bytes"] = self.skipped
        return row


def iter_warc_rows(
    stream: Any,
    file_index: int,
    path: str,
    policy: RecordPolicy,
    base: int = 0,
    limit: int | None = None,
    reopen: Callable[[int], Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """One row per record of `stream`; each damaged stretch becomes one ledger row.

    `stream` starts at byte `base` of the file (a split, see warc/splits.py) and is read for
    the units (gzip members, plain records) that start before `base + limit`; offsets in the
    rows are offsets in the file. Where the raw bytes break (a member that cannot be inflated,
    garbage that is no record), `reopen(offset)`, when given, opens the file again so reading
    resumes at the next record start.

    Damage pieces with no record header between them make one stretch; a stretch ends where
    a record header is found (a place a split may begin), so any split gives the same rows.
    """
    stop = None if limit is None else base + limit
    framer = Framer(stream, base, stop, policy.max_header_bytes, policy.verify_member_bytes,
                    policy.length_slack)  # fmt: skip
    records = 0
    pending: _Stretch | None = None
    headers_at_pending = -1
    opened: list[Any] = []

    def add(d: Damage) -> Iterator[dict[str, Any]]:
        nonlocal pending, headers_at_pending
        if pending is not None and framer.headers_seen == headers_at_pending:
            pending.pieces += 1
            return
        if pending is not None:
            yield pending.row(file_index, path, False)
        pending = _Stretch(d.offset, d.sub, str(d), inside=d.scan_from is None)
        headers_at_pending = framer.headers_seen

    try:
        while True:
            broken: Damage | None = None
            for item in framer:
                if isinstance(item, Damage):
                    yield from add(item)
                    if item.scan_from is not None:
                        broken = item
                        break
                    continue
                # a member that breaks under its record ends there (the record keeps its row);
                # the framer yields that damage next
                row = _record_row(item, framer, file_index, path, policy)
                if pending is not None:
                    pending.upto = row["warc_offset"]
                    yield pending.row(file_index, path, False)
                    pending = None
                records += 1
                yield row
            if broken is None:
                if pending is not None and framer.stopped:
                    pending.upto = stop  # where the next split's first record is
                break
            resume = None
            scan_from = broken.scan_from
            assert pending is not None and scan_from is not None
            if reopen is not None and (stop is None or scan_from < stop):
                with reopen(scan_from) as fh:
                    counted = _Counted(fh)
                    resume = find_record_start(counted, scan_from, stop)
                    end = scan_from + counted.n if resume is None and stop is None else None
            else:
                end = None
            # A split's end is the next split's first record: the same row either way.
            upto = resume if resume is not None else stop
            last = upto if upto is not None else end
            if last is not None:
                pending.skipped = (pending.skipped or 0) + last - broken.offset
            if resume is None:
                pending.upto = stop
                break
            # reading resumes at a record start: the stretch ends there
            pending.upto = resume
            yield pending.row(file_index, path, False)
            pending = None
            stream = reopen(resume)  # type: ignore[misc]
            opened.append(stream)
            framer.restart(stream, resume)
        if pending is not None:
            whole = records == 0 and base == 0 and pending.offset == 0 and pending.upto is None
            yield pending.row(file_index, path, whole)
        elif records == 0 and base == 0:
            yield file_error_row(file_index, path, "unreadable_file",
                                 "the file is empty (no record in it)")  # fmt: skip
    finally:
        for fh in opened:
            fh.close()


def file_error_row(
    file_index: int, path: str, reason: str, detail: str, offset: int = 0, sub: int = 0
) -> dict[str, Any]:
    """A ledger row for a file, or a stretch of it, that yielded no records. Its id and
    position depend on the file and the place only, so any split of the file gives the
    same row."""
    doc_id = "file:" + hashlib.sha1(f"{path}\x00{offset}\x00{sub}".encode()).hexdigest()
    return {
        **UNSET_ROW,
        "doc_id": doc_id,
        "url": path,
        "host": "",
        "warc_date": "",
        "warc_type": "",
        "warc_file": path,
        "warc_offset": offset,
        "crawl_pos": crawl_pos(file_index, offset + sub),
        "reject_stage": STAGE,
        "reject_reason": reason,
        "reject_detail": detail,
    }
