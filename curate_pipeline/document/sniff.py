"""What an input's first bytes are, so a wrong input is named before Spark starts.

An input is read as what its name says: a text dataset (`.jsonl(.gz)`, `.ndjson(.gz)`,
`.parquet`) or an archive (everything else: WARC, WET, WAT, ARC, gzipped or not). From the
first HEAD_BYTES of a file (inflated where they are gzip), `looks_like` tells what they are:
WARC or ARC records, JSON lines, Parquet, a format with a known signature (named by
puremagic: PNG, PDF, ZIP, ...), text, or binary bytes. `mismatch` says when that is not what
the name promises.

Only what is certainly something else is a mismatch. Bytes that could be a damaged archive
(binary, a gzip member that does not inflate) are left to the reader, whose ledger names
the damage (read:corrupt_file) instead of refusing the input.
"""

from __future__ import annotations

import json
import zlib

import puremagic

from curate_pipeline.document.text_inputs import is_parquet, is_text_input

HEAD_BYTES = 1 << 16  # a Common Crawl record's headers and more: one small read a file
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"

# kinds: what the bytes are, as the readers see them
WARC, ARC, JSONL, PARQUET = "warc", "arc", "jsonl", "parquet"
OTHER = "other"  # certainly not an input the run reads
UNKNOWN = "unknown"  # binary the reader may still find records in (damage)


def inflate(head: bytes) -> bytes | None:
    """The start of what gzip bytes inflate to (None: they do not)."""
    try:
        return zlib.decompressobj(wbits=31).decompress(head, HEAD_BYTES)
    except zlib.error:
        return None


def _text(head: bytes) -> str | None:
    """The bytes as text, or None where they are binary (control bytes, not UTF-8)."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:  # not a character cut by the end of the head
            return None
        text = head[: e.start].decode("utf-8")
    controls = sum(1 for c in text[:4096] if ord(c) < 32 and c not in "\t\r\n\f")
    return None if controls > 0 else text


def _json_object(line: str, cut: bool) -> bool:
    """Whether `line` is a JSON object; `cut`: the head may end inside it (a document longer
    than the head), so an object's start is all that can be seen."""
    if cut:
        return line.lstrip().startswith("{")
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def looks_like(head: bytes) -> tuple[str, str]:
    """(kind, description) of a file that begins with `head`."""
    if not head:
        return OTHER, "an empty file"
    if head.startswith(GZIP_MAGIC):
        inner = inflate(head)
        if inner is None:
            return UNKNOWN, "gzip data that does not inflate"
        kind, what = looks_like(inner)
        return kind, f"gzip-compressed {what}" if kind != OTHER or inner else "an empty gzip file"
    if head.startswith(PARQUET_MAGIC):
        return PARQUET, "a Parquet file"
    start = head.lstrip(b"\r\n")
    if start.startswith(b"WARC/"):
        return WARC, "WARC records"
    if start.startswith(b"filedesc://"):
        return ARC, "ARC records"
    text = _text(head)
    if text is not None:
        if "\nWARC/1." in text:  # a record header after a cut first record: an archive
            return WARC, "WARC records after some damage"
        line = next((ln for ln in text.splitlines() if ln.strip()), "")
        # no line end after it: the head (or the file) ends inside the first line
        if _json_object(line, cut="\n" not in text.lstrip("\r\n")):
            return JSONL, "JSON lines"
        first = line if len(line) <= 60 else line[:57] + "..."
        try:
            name = puremagic.magic_string(head)[0].name  # HTML, XML, JSON, ...
            return OTHER, f"{name.rstrip('.')} (first line: {first!r})"
        except (puremagic.PureError, IndexError, ValueError):
            return OTHER, f"text (first line: {first!r})"
    try:
        match = puremagic.magic_string(head)[0]
    except (puremagic.PureError, IndexError, ValueError):
        return UNKNOWN, f"binary data (first bytes {head[:8].hex(' ')})"
    return OTHER, f"{match.name.rstrip('.')} ({match.mime_type or match.extension})"


def expected(path: str) -> str:
    """What the run reads `path` as: 'parquet', 'jsonl' or 'archive'."""
    if is_parquet(path):
        return PARQUET
    return JSONL if is_text_input(path) else "archive"


def mismatch(path: str, head: bytes) -> str | None:
    """Why `path`, beginning with `head`, is certainly not what its name says it is (None:
    it is, or it may be a damaged one, which the reader's ledger names)."""
    kind, what = looks_like(head)
    want = expected(path)
    if want == "archive":
        if kind in (WARC, ARC, UNKNOWN):
            return None
        return f"not a WARC or ARC file: it looks like {what}"
    if want == PARQUET:
        return None if kind == PARQUET else f"not a Parquet file: it looks like {what}"
    if kind in (JSONL, UNKNOWN):
        return None
    return f"not JSON lines: it looks like {what}"
