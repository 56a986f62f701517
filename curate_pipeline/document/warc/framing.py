"""Record framing: where each WARC or ARC record of a file begins and ends, and which bytes
between them are damage.

A file is a run of units: gzip members (Common Crawl writes one per record; ClueWeb and some
wget/Heritrix files are one member for the whole file) and plain bytes (uncompressed files, or
plain records between members). Records are parsed from each unit's bytes as they stream in:
WARC of any version (1.1, 1.0, 0.18, 0.17) and ARC v1/v2 header lines. Memory per file is
bounded by one record's headers, the payload a caller reads and `verify_bytes` of inflated data.

Damage never ends the file early:
- framing damage inside a unit (a line that is no record header, a block that goes on past its
  Content-Length, headers over the bound): the bytes up to the next record header in the same
  unit are one damaged stretch, and reading goes on there (or at the unit's end);
- a gzip member that cannot be inflated (bad compressed data, a cut member) or plain bytes that
  are no record: one damaged stretch up to the next record start found by scanning the raw
  file (warc/splits.py), where reading resumes. A record whose header was read before the
  member broke is yielded all the same: with the bytes before a cut (`Record.cut`; a cut
  followed by the next member is found where that member begins), or marked untrusted when
  zlib rejected the member's data (`Record.bad`).

warcio stops at the first bad gzip member (it prints the error and reports the end of the file),
reads a one-member gzip file only to its first record, and knows only WARC/1.x after damage,
hence this module; warcio still parses each header block (StatusAndHeadersParser).

A record's place is its unit's start in the file (`offset`, where a reader seeks to) and its
index among the records of that unit (`sub`, 0 unless a member holds several records).
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

from curate_pipeline.document.warc.arc import MAX_LINE, ArcHeader, parse_arc_line
from curate_pipeline.document.warc.splits import (
    GZIP_MAGIC,
    WARC_LINE,
    is_record_member,
    starts_record,
)

CHUNK = 1 << 16
INFLATE_CHUNK = 1 << 20  # inflated bytes per zlib call
_NEWLINES = b"\r\n"
# a record header at the start of a line: WARC of any version, or an ARC header line
_LINE_START = re.compile(rb"(?:^|(?<=\n))(?:WARC/\d|[A-Za-z][A-Za-z0-9+.-]*:)")
_WARC_PARSER = StatusAndHeadersParser([], verify=False)
_HTTP_PARSER = StatusAndHeadersParser([], verify=False)


class Damage(Exception):
    """Bytes that are not records. `scan_from`: where a raw scan for the next record start
    begins (None: reading goes on in the same unit or after it, no scan needed)."""

    def __init__(self, message: str, offset: int, sub: int = 0, scan_from: int | None = None):
        super().__init__(message)
        self.offset = offset
        self.sub = sub
        self.scan_from = scan_from


class _Bytes:
    """Bytes pulled from a source in chunks and read forward; `taken` counts bytes consumed."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.i = 0
        self.taken = 0
        self.ended = False

    def _pull(self) -> bytes:
        raise NotImplementedError

    def available(self) -> int:
        return len(self.buf) - self.i

    def _fill(self, n: int) -> bool:
        while len(self.buf) - self.i < n and not self.ended:
            data = self._pull()
            if not data:
                self.ended = True
                break
            if self.i > 4 * CHUNK and 2 * self.i > len(self.buf):  # amortised O(1)
                del self.buf[: self.i]
                self.i = 0
            self.buf += data
        return len(self.buf) - self.i >= n

    def at_end(self) -> bool:
        return not self._fill(1)

    def peek(self, n: int) -> bytes:
        self._fill(n)
        return bytes(self.buf[self.i : self.i + n])

    def read(self, n: int) -> bytes:
        self._fill(n)
        out = bytes(self.buf[self.i : self.i + n])
        self.i += len(out)
        self.taken += len(out)
        return out

    def skip(self, n: int) -> int:
        """Drop `n` bytes without keeping them; returns how many there were."""
        done = 0
        while done < n:
            avail = len(self.buf) - self.i
            if avail == 0:
                data = b"" if self.ended else self._pull()
                if not data:
                    self.ended = True
                    break
                self.buf, self.i = bytearray(data), 0
                continue
            k = min(avail, n - done)
            self.i += k
            done += k
        self.taken += done
        return done

    def skip_newlines(self) -> int:
        n = 0
        while self._fill(1) and self.buf[self.i] in _NEWLINES:
            self.i += 1
            n += 1
        self.taken += n
        return n

    def readline(self, limit: int) -> bytes:
        """A line with its newline, or what is left; raises ValueError past `limit` bytes."""
        searched = 0  # bytes after self.i already searched (indexes move when _fill compacts)
        while True:
            j = self.buf.find(b"\n", self.i + searched, self.i + limit)
            if j >= 0:
                return self.read(j + 1 - self.i)
            searched = len(self.buf) - self.i
            if searched >= limit:
                raise ValueError(f"a header line longer than {limit} bytes")
            if not self._fill(searched + 1):
                return self.read(searched)

    def skip_to_record_line(self) -> int:
        """Drop bytes up to the next line that starts a record header (or to the end)."""
        dropped = 0
        while self._fill(1):
            m = _LINE_START.search(self.buf, self.i)
            while m is not None:
                rel = m.start() - self.i
                self._fill(rel + MAX_LINE)
                j = self.i + rel
                if starts_record(bytes(self.buf[j : j + MAX_LINE])):
                    self.i = j
                    self.taken += rel
                    return dropped + rel
                m = _LINE_START.search(self.buf, j + 1)
            k = self.buf.rfind(b"\n", self.i) + 1  # start of the last, partial line
            partial = len(self.buf) - self.i
            if k <= self.i and partial < MAX_LINE and not self.ended:
                # the line at self.i may still become a header: read on before dropping it
                if self._fill(partial + 1):
                    continue
            cut = k if k > self.i else len(self.buf)
            dropped += cut - self.i
            self.taken += cut - self.i
            self.i = cut
        return dropped


class _Raw(_Bytes):
    """The file's raw bytes from `base`; `pos` is the file offset of the next byte."""

    def __init__(self, stream, base: int) -> None:
        super().__init__()
        self.stream = stream
        self.base = base

    @property
    def pos(self) -> int:
        return self.base + self.taken

    def _pull(self) -> bytes:
        return self.stream.read(CHUNK)

    def take_chunk(self) -> bytes:
        """What is buffered, else the next chunk of the stream (for an inflater)."""
        if self.i < len(self.buf):
            data = bytes(self.buf[self.i :])
            self.buf, self.i = bytearray(), 0
        else:
            data = self.stream.read(CHUNK)
        self.taken += len(data)
        return data

    def unread(self, data: bytes) -> None:
        self.buf = bytearray(data) + self.buf[self.i :]
        self.i = 0
        self.taken -= len(data)


def _salvage(d, data: bytes) -> bytes:
    """What `d` inflates from `data` before the byte zlib rejects."""
    out = []
    for i in range(len(data)):
        try:
            out.append(d.decompress(data[i : i + 1]))
        except zlib.error:
            break
    return b"".join(out)


_HEAD = 512  # raw bytes after a place a member may begin, enough to inflate its first line


@dataclass
class _Mark:
    """A place inside a gzip member where another member may begin (see _Member._mark)."""

    at: int  # its file offset
    state: Any  # zlib's state before `prefix`
    prefix: bytes  # the raw bytes from that state up to `at`
    made: int  # bytes inflated before `prefix`
    head: bytearray  # the raw bytes from `at`, up to _HEAD


class _Member(_Bytes):
    """The inflated bytes of the gzip member that starts at the raw stream's position. zlib
    checks the member's CRC and length at its end: a bit flip anywhere raises there.

    A member that breaks (bad data, or the file ends inside it) ends where it broke: reads
    return what was inflated before that byte and `damage()` says what happened, so a record
    whose header was read keeps its row with the bytes present (the framer raises the damage
    once that record is finished)."""

    def __init__(self, raw: _Raw) -> None:
        super().__init__()
        self.raw = raw
        self.start = raw.pos
        self.broken: str | None = None  # why it ended early (zlib's error, or a cut)
        self.cut = False  # it ended early because the file did: what came before is sound
        self.d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.finished = False
        self.big = False  # longer than the verify bound: records stream unverified
        self.sub = 0  # records begun in this member so far
        self.made = 0  # inflated bytes so far
        self.marks: list[_Mark] = []  # where another member may begin inside this one
        self._last: tuple = (None, b"", 0)  # (zlib state before it, chunk, made) last fed

    def _mark(self, data: bytes) -> None:
        """Note every place in the raw chunk `data` (about to be fed to zlib) where a gzip
        member could begin, with what it takes to know how much this member inflates before
        it: if the member turns out cut there (the next record's member follows), the bytes
        it inflated past that place are the next member's read as deflate data, not its own.
        A magic may straddle two chunks: the last chunk is kept until the next comes."""
        at = self.raw.pos - len(data)  # file offset of data[0]
        joined = self._last[1][-2:] + data
        first = at - (len(joined) - len(data))
        for mk in self.marks:
            if len(mk.head) < _HEAD:
                mk.head += data[: _HEAD - len(mk.head)]
        k = joined.find(GZIP_MAGIC)
        while k >= 0:
            if first + k > self.start:
                if k < len(joined) - len(data):  # begins in the last chunk
                    state, chunk, made = self._last
                    prefix = chunk[: len(chunk) - (len(joined) - len(data)) + k]
                else:
                    state, chunk, made = self.d.copy(), data, self.made
                    prefix = data[: k - (len(joined) - len(data))]
                self.marks.append(_Mark(first + k, state, prefix, made,
                                        bytearray(joined[k : k + _HEAD])))  # fmt: skip
            k = joined.find(GZIP_MAGIC, k + 1)
        self._last = (self.d.copy(), data, self.made)

    def _cut_at_next_member(self) -> None:
        """Once the member broke: the first noted place where a record's member begins is
        where this member was cut. What it inflated past that place is dropped (while still
        unread), and it counts as cut short there: what came before is sound."""
        for mk in self.marks:
            while len(mk.head) < _HEAD:  # the same head whatever the chunking: read on
                more = self.raw.read(_HEAD - len(mk.head))
                if not more:
                    break
                mk.head += more
            if not is_record_member(bytes(mk.head)):
                continue
            try:
                sound = mk.made + len(mk.state.decompress(mk.prefix))
            except zlib.error:
                return  # broken before that place: not a cut
            extra = self.made - sound
            if 0 <= extra <= len(self.buf) - self.i:
                del self.buf[len(self.buf) - extra :]
                self.made = sound
            self.cut = True
            self.broken = (
                f"the gzip member at byte {self.start} is cut short at byte {mk.at}, where "
                "another record's member begins"
            )
            return

    def damage(self) -> Damage | None:
        if self.broken is None:
            return None
        return Damage(self.broken, self.start, self.sub, scan_from=self.start + 1)

    def _pull(self) -> bytes:
        """The next inflated bytes; nothing once zlib has failed or the file ended inside
        the member."""
        while not self.finished and self.broken is None:
            data = self.d.unconsumed_tail
            if not data:
                data = self.raw.take_chunk()
                if not data:
                    # a cut member can swallow whole members after it (a stored block reads
                    # any bytes): the raw scan from its start looks for records in it
                    self.broken = (
                        f"the file ends inside the gzip member at byte {self.start} (cut short)"
                    )
                    self.cut = True
                    self._cut_at_next_member()
                    return b""
                self._mark(data)
            before = self.d.copy()
            try:
                out = self.d.decompress(data, INFLATE_CHUNK)
            except zlib.error as e:
                # zlib drops what the failing call had inflated, so how much of the member
                # is used would depend on how the input happened to be cut into reads (a
                # split's start, the buffer): inflate the same input again a byte at a time,
                # up to the bad byte.
                self.broken = f"the gzip member at byte {self.start} cannot be inflated ({e})"
                out = _salvage(before, data)
            if self.d.eof:
                self.finished = True
                self.marks.clear()
                if self.d.unused_data:
                    self.raw.unread(self.d.unused_data)
            self.made += len(out)
            if self.broken is not None:
                self.buf += out  # so a cut drops what was inflated past it
                out = b""
                self._cut_at_next_member()
            if out:
                return out
        return b""

    def verify(self, limit: int) -> None:
        """Inflate to the member's end (so its CRC is checked, before any of its records is
        used) when it is under `limit` bytes; a longer member streams unverified."""
        while not self.finished and not self.big:
            if len(self.buf) - self.i >= limit:
                self.big = True
            elif not self._fill(len(self.buf) - self.i + CHUNK):
                break


class Block:
    """A record's block: at most `length` bytes of its unit, read forward."""

    def __init__(self, src: _Bytes, length: int) -> None:
        self.src = src
        self.remaining = length

    def read(self, n: int = -1) -> bytes:
        n = self.remaining if n is None or n < 0 else min(n, self.remaining)
        data = self.src.read(n)
        self.remaining -= len(data)
        return data

    def readline(self, limit: int) -> bytes:
        if not self.remaining:
            return b""
        try:
            line = self.src.readline(min(limit, self.remaining))
        except ValueError:
            if self.remaining > limit:
                raise
            line = self.src.read(self.remaining)  # the block ends inside the line
        self.remaining -= len(line)
        return line


@dataclass
class Record:
    fmt: str  # "warc" or "arc"
    version: str  # "WARC/1.0", "WARC/0.18", "ARC"
    headers: StatusAndHeaders  # WARC headers (an ARC record's are made up from its line)
    length: int  # the block length its header declares
    offset: int  # file offset of its unit (gzip member or plain record)
    sub: int  # its index among the records of that unit
    block: Block
    arc: ArcHeader | None = None
    problem: str | None = None  # what is wrong with its framing, once finished
    cut: str | None = None  # the file ends inside its block's gzip member (why), once finished
    bad: str | None = None  # its gzip member fails zlib's checks (why): its bytes are not trusted
    present: int | None = None  # block bytes there were, when fewer than `length`
    finished: bool = field(default=False, repr=False)

    @property
    def rec_type(self) -> str:
        return (self.headers.get_header("WARC-Type") or "").strip().lower()

    def http_headers(self, max_bytes: int) -> StatusAndHeaders | None:
        """The HTTP status line and headers at the start of the block, or None when the block
        does not start with one. Reads them (at most `max_bytes`) from the block."""
        if not self.block.src.peek(min(5, self.block.remaining)).upper().startswith(b"HTTP/"):
            return None
        lines = []
        total = 0
        while self.block.remaining:
            line = self.block.readline(max_bytes)
            total += len(line)
            if total > max_bytes:
                raise ValueError(f"HTTP headers longer than {max_bytes} bytes")
            lines.append(line)
            if not line.strip():
                break
        return _HTTP_PARSER.parse(io.BytesIO(b"".join(lines)))


def _parse_warc_headers(src: _Bytes, first: bytes, max_bytes: int) -> StatusAndHeaders:
    lines = [first]
    total = len(first)
    while True:
        line = src.readline(max_bytes)
        total += len(line)
        if total > max_bytes:
            raise ValueError(
                f"record headers longer than {max_bytes} bytes (read.max_header_bytes)"
            )
        if not line:
            raise ValueError("the file ends inside the record headers")
        lines.append(line)
        if not line.strip():
            return _WARC_PARSER.parse(io.BytesIO(b"".join(lines)))


def _arc_headers(h: ArcHeader, block_start: bytes) -> StatusAndHeaders:
    """WARC-style headers for an ARC record, so every later step reads one shape."""
    kind = "warcinfo" if h.is_filedesc else "response"
    headers = [
        ("WARC-Type", kind),
        ("WARC-Target-URI", h.url),
        ("WARC-Date", h.date),
        ("WARC-IP-Address", h.ip),
        ("Content-Length", str(h.length)),
    ]
    if h.mime and h.mime not in ("-", "no-type", "unk"):
        headers.append(("WARC-Identified-Payload-Type", h.mime))
    if block_start.upper().startswith(b"HTTP/"):
        headers.append(("Content-Type", "application/http; msgtype=response"))
    return StatusAndHeaders("ARC", headers, protocol="ARC")


class Framer:
    """The records of one file, or of the byte range [base, stop) of it, in file order.

    Iterate for `Record`s and `Damage`s. Before asking for the next item, a caller may read a
    record's block; `finish(record)` then drops the rest of it and checks what follows
    (`record.problem` says what is wrong, and must reach the ledger).
    """

    def __init__(
        self,
        stream,
        base: int = 0,
        stop: int | None = None,
        max_header: int = 8 << 20,
        verify_bytes: int = 32 << 20,
        length_slack: int = 2,
    ) -> None:
        self.raw = _Raw(stream, base)
        self.stop = stop
        self.max_header = max_header
        self.verify_bytes = verify_bytes
        self.length_slack = length_slack
        self.current: Record | None = None
        self.headers_seen = 0  # record headers parsed so far (damage between them is one stretch)
        self.stopped = False  # reading ended at `stop`, not at the end of the file

    def restart(self, stream, base: int) -> None:
        """Go on reading from `stream`, which starts at file offset `base` (after a scan)."""
        self.raw = _Raw(stream, base)
        self.current = None

    def __iter__(self) -> Iterator[Record | Damage]:
        while True:
            if self.current is not None and not self.current.finished:
                self.finish(self.current)
            self.raw.skip_newlines()
            pos = self.raw.pos
            if self.stop is not None and pos >= self.stop:
                self.stopped = True  # the next unit is the next split's
                return
            if self.raw.at_end():
                return
            if self.raw.peek(3) == GZIP_MAGIC:
                member = _Member(self.raw)
                try:
                    yield from self._member(member)
                except Damage as d:
                    self.current = None  # a record of the broken member goes with it
                    yield d
                    if d.scan_from is not None:
                        return  # the caller scans the raw file and restarts us
            else:
                try:
                    rec = self._header(self.raw, pos, 0)
                except Damage as d:
                    d.scan_from = pos + 1
                    yield d
                    return
                yield rec

    def _member(self, m: _Member) -> Iterator[Record | Damage]:
        while True:
            if self.current is not None and not self.current.finished:
                self.finish(self.current)
            m.skip_newlines()
            if m.at_end():
                broken = m.damage()
                if broken is not None:
                    raise broken
                return
            try:
                rec = self._header(m, m.start, m.sub)
            except Damage as d:
                broken = m.damage()
                if broken is not None:
                    raise broken from None  # the member broke inside the header: no record
                # framing damage inside the member: skip to its next record header
                dropped = d.args[0]
                skipped = m.skip_to_record_line()
                where = "to the next record header in it" if not m.at_end() else "to its end"
                yield Damage(
                    f"{dropped}; {skipped} inflated byte(s) skipped {where}",
                    m.start, m.sub,
                )  # fmt: skip
                m.sub += 1
                continue
            m.sub += 1
            m.verify(self.verify_bytes)
            if m.broken is not None and not m.cut:
                # zlib rejected the member's data (a bad check or code): no byte of it,
                # this record's included, is to be trusted; the record keeps its row
                rec.bad = m.broken
            yield rec

    def _header(self, src: _Bytes, offset: int, sub: int) -> Record:
        """The record whose header starts here (raises Damage when none does)."""
        try:
            line = src.readline(self.max_header)
        except ValueError as e:
            raise Damage(f"no record header ({e})", offset, sub) from e
        if line.startswith(b"WARC/") and WARC_LINE.match(line):
            try:
                headers = _parse_warc_headers(src, line, self.max_header)
            except ValueError as e:
                raise Damage(str(e), offset, sub) from e
            raw_len = (headers.get_header("Content-Length") or "").strip()
            if not raw_len.isdigit():
                raise Damage(f"a {line.strip().decode()} header without a valid "
                             f"Content-Length ({raw_len[:40]!r})", offset, sub)  # fmt: skip
            length = int(raw_len)
            rec = Record("warc", line.strip().decode(), headers, length, offset, sub,
                         Block(src, length))  # fmt: skip
        else:
            arc = parse_arc_line(line)
            if arc is None:
                shown = line[:40].decode("latin-1").encode("unicode_escape").decode()
                raise Damage(f"no record header (found '{shown}')", offset, sub)
            rec = Record("arc", "ARC", _arc_headers(arc, src.peek(5)), arc.length, offset, sub,
                         Block(src, arc.length), arc=arc)  # fmt: skip
        self.current = rec
        self.headers_seen += 1
        return rec

    def finish(self, rec: Record) -> str | None:
        """Drop the rest of the record's block and check what follows it."""
        if rec.finished:
            return rec.problem
        rec.finished = True
        src = rec.block.src
        if rec.arc is not None and rec.arc.is_filedesc:
            # its length is not to be trusted: its block ends where the next record begins
            src.skip_to_record_line()
            return None
        left = rec.block.remaining
        got = src.skip(left)
        rec.block.remaining = 0
        if got < left:
            rec.present = rec.length - (left - got)
            rec.problem = (
                f"the block ends {left - got} byte(s) before its Content-Length: record cut short"
            )
            if isinstance(src, _Member) and src.broken is not None:
                if src.cut:
                    rec.cut = src.broken  # the file ends inside its block: a cut record
                else:
                    rec.problem = f"{src.broken}; {rec.problem}"
        elif not self._followed_by_record(src, rec.fmt):
            rec.problem = "the block goes on past its Content-Length (no record header after it)"
        return rec.problem

    def _followed_by_record(self, src: _Bytes, fmt: str) -> bool:
        """After a block: its terminator (two newlines for WARC, one for ARC), or newlines and
        then the end of the unit or another record. Bytes after a whole terminator that are no
        record are damage of their own, not this record's. Up to `length_slack` stray bytes
        before the newline are tolerated (ClueWeb09's Content-Length is off by one) and
        dropped."""
        head = src.peek(4)
        if head.startswith((b"\r\n\r\n", b"\n\n")) or (fmt == "arc" and head[:1] == b"\n"):
            return True
        for stray in range(self.length_slack + 1):
            head = src.peek(stray + 4096)
            rest = head[stray:]
            body = rest.lstrip(_NEWLINES)
            if stray and len(body) == len(rest):
                continue  # stray bytes must be followed by a newline
            at_end = len(body) == 0 and len(head) < stray + 4096
            is_next = (
                at_end or starts_record(body) or (src is self.raw and body.startswith(GZIP_MAGIC))
            )
            if is_next:
                src.skip(stray + len(rest) - len(body))
                return True
        return False
