"""Text datasets as input: JSONL (plain or gzipped) and Parquet files of documents with `id`
and `text`, read to the same rows as archive records, with the text in `payload` (UTF-8) and
`warc_type` "text", so they skip extraction and go through every later stage.

`id` stays the document id (run-wide uniqueness is settled by stages/unique_ids.py, as for
WARC-Record-IDs), `url` and `date` fill those columns where present, and every other field is
kept as a JSON object in `input_metadata`. A line or row that is no document (not JSON, no
text, a text that is not a string, no id) is a ledger row (read:bad_text_record) naming the
file and the line or row; a file whose rows cannot have a text (no `text` column) is one
(read:unreadable_file). A record's offset is its line (JSONL) or row (Parquet) number: its
place in the crawl order.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from typing import Any

from curate_pipeline.document.warc.records import (
    STAGE,
    UNSET_ROW,
    crawl_pos,
    file_error_row,
    host_of,
)
from curate_pipeline.document.warc.streams import TransportError

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
CHUNK = 1 << 20  # bytes read at a time
PARQUET_SUFFIXES = (".parquet",)
TEXT_SUFFIXES = JSONL_SUFFIXES + PARQUET_SUFFIXES
TEXT_TYPES = ("text", "conversion")  # rows whose payload is text already (WET: conversion)
_OWN = ("id", "text", "url", "date")


def is_text_input(path: str) -> bool:
    return path.lower().split("?", 1)[0].endswith(TEXT_SUFFIXES)


def is_parquet(path: str) -> bool:
    return path.lower().split("?", 1)[0].endswith(PARQUET_SUFFIXES)


def _bad(file_index: int, path: str, n: int, what: str, detail: str) -> dict[str, Any]:
    row = file_error_row(file_index, path, "bad_text_record", f"{what} {n}: {detail}"[:500], n)
    row["warc_type"] = "text"
    return row


def text_row(file_index: int, path: str, n: int, item: Any, max_bytes: int,
             what: str = "line") -> dict[str, Any]:  # fmt: skip
    """The row of document `item` (a decoded JSON object or Parquet row), `n` its line or
    row number in the file."""
    if not isinstance(item, dict):
        return _bad(file_index, path, n, what, f"not an object ({type(item).__name__})")
    text, doc_id = item.get("text"), item.get("id")
    if not isinstance(text, str):
        got = "no `text`" if text is None else f"`text` is a {type(text).__name__}"
        return _bad(file_index, path, n, what, got)
    if doc_id is None or str(doc_id) == "":
        return _bad(file_index, path, n, what, "no `id`")
    url = item.get("url") if isinstance(item.get("url"), str) else ""
    rest = {k: v for k, v in item.items() if k not in _OWN}
    row = {
        **UNSET_ROW,
        "doc_id": str(doc_id),
        "url": url,
        "host": host_of(url) if url else "",
        "warc_date": str(item.get("date") or ""),
        "warc_type": "text",
        "warc_file": path,
        "warc_offset": n,
        "crawl_pos": crawl_pos(file_index, n),
        "content_type": "text/plain; charset=utf-8",
        "input_metadata": json.dumps(rest, ensure_ascii=False, default=str) if rest else None,
    }
    payload = text.encode("utf-8", "replace")  # a lone surrogate (JSON allows it) -> "?"
    if len(payload) > max_bytes:
        row.update(reject_stage=STAGE, reject_reason="too_large",
                   reject_detail=f"text > {max_bytes} bytes")  # fmt: skip
    elif not text.strip():
        row.update(reject_stage=STAGE, reject_reason="empty_payload", reject_detail="")
    else:
        row["payload"] = payload
    return row


def _lines(stream: Any) -> Iterator[bytes]:
    """The lines of a stream that only has read(n), a chunk at a time (a gzip stream's
    read1: what one read of its input gives, so the lines before a cut are all yielded)."""
    read = getattr(stream, "read1", stream.read)
    rest = b""
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        *lines, rest = (rest + chunk).split(b"\n")
        yield from lines
    if rest:
        yield rest


def iter_jsonl_rows(stream: Any, file_index: int, path: str, max_bytes: int) -> Iterator[dict]:
    """One row per line of a JSONL stream (gzipped when the name ends in .gz), streamed."""
    gzipped = path.lower().split("?", 1)[0].endswith(".gz")
    seen = False
    n = -1
    try:
        for n, line in enumerate(_lines(gzip.GzipFile(fileobj=stream) if gzipped else stream)):
            if n == 0 and line[:2] == b"\x1f\x8b":
                yield file_error_row(file_index, path, "unreadable_file", "gzip data in a "
                                     "file not named .gz: rename it .jsonl.gz")  # fmt: skip
                return
            if not line.strip():
                continue
            seen = True
            if len(line) > max_bytes * 2 + 1024:  # JSON escapes: a text near the bound fits
                yield _bad(file_index, path, n, "line", f"{len(line)} bytes, over the bound")
                continue
            try:
                item = json.loads(line)
            except ValueError as e:
                yield _bad(file_index, path, n, "line", f"not JSON ({e})")
                continue
            yield text_row(file_index, path, n, item, max_bytes)
    except TransportError:
        raise  # the network, not the data: the task fails and Spark reruns it
    except (OSError, EOFError, zlib.error) as e:  # damaged gzip: the rest of the file is lost
        detail = f"after line {n}: {type(e).__name__}: {e}"[:500]
        yield file_error_row(file_index, path, "corrupt_file", detail, n + 1)
        return
    if not seen:
        yield file_error_row(file_index, path, "unreadable_file", "the file is empty")


def iter_parquet_rows(pf: Any, file_index: int, path: str, max_bytes: int, split: int = 0,
                      nsplits: int = 1, batch_rows: int = 256) -> Iterator[dict]:  # fmt: skip
    """One row per row of a `pyarrow.parquet.ParquetFile`, the row groups `i % nsplits ==
    split` of it, a batch at a time."""
    names = pf.schema_arrow.names
    if "text" not in names:
        if split == 0:
            detail = f"no `text` column (columns: {', '.join(names)})"[:500]
            yield file_error_row(file_index, path, "unreadable_file", detail)
        return
    meta = pf.metadata
    if meta.num_rows == 0 and split == 0:
        yield file_error_row(file_index, path, "unreadable_file", "the file has no rows")
        return
    first = 0
    for group in range(meta.num_row_groups):
        rows = meta.row_group(group).num_rows
        if group % nsplits == split:
            n = first
            for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[group]):
                for item in batch.to_pylist():
                    yield text_row(file_index, path, n, item, max_bytes, "row")
                    n += 1
        first += rows
