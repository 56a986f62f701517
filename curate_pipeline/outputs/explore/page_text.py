"""The visible text of a record's page, read again from its archive, to show beside what the
extractor kept: every text node a browser would render (navigation, footers, comments
included; scripts and styles not), by resiliparse's `extract_plain_text` with
`main_content=False`. The record is found at its offset (a seek, one record read), through
the same reader and decoding as the run; an archive that is gone says so."""

from __future__ import annotations

from resiliparse.extract.html2text import extract_plain_text

from curate_pipeline.config import ReadConf
from curate_pipeline.document.warc.decode import DecodeError, decode_body, to_unicode
from curate_pipeline.document.warc.records import RecordPolicy, iter_warc_rows
from curate_pipeline.document.warc.streams import open_stream

MAX_RECORDS = 64  # records read from the offset to find the one (sub-records of a member)


def visible_text(warc_file: str, offset: int, doc_id: str, read: ReadConf) -> dict:
    """{"text": the page's visible text} or {"error": why it cannot be shown}."""
    if not warc_file or offset is None or offset < 0:
        return {"error": "no archive record (a text input, or a file-level row)"}
    policy = RecordPolicy.from_conf(read)
    try:
        with open_stream(warc_file, retries=1, timeout_s=20, start=offset) as stream:
            rows = iter_warc_rows(stream, 0, warc_file, policy, base=offset)
            for _, row in zip(range(MAX_RECORDS), rows, strict=False):
                if row.get("doc_id") == doc_id.split("#", 1)[0]:
                    break
            else:
                return {"error": f"no record {doc_id} at byte {offset} of {warc_file}"}
    except OSError as e:
        return {"error": f"{warc_file} cannot be read now: {e}"}
    if not row.get("payload"):
        return {"error": "the record has no payload (not a page, or dropped before reading)"}
    try:
        body = decode_body(row["payload"], row.get("transfer_encoding"),
                           row.get("content_encoding"), read.max_decoded_bytes)  # fmt: skip
        html, _, _ = to_unicode(body, row.get("content_type"), read.max_control_share)
    except DecodeError as e:
        return {"error": f"the payload does not decode: {e.reason}"}
    return {"text": extract_plain_text(html, main_content=False, preserve_formatting=True)}
