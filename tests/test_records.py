"""Record selection over real WARC bytes, no Spark."""

import gzip
import io
from collections import Counter

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curate_pipeline.document.warc.records import (
    OFFSET_BITS,
    RecordPolicy,
    iter_warc_rows,
    sniff_html,
)

POLICY = RecordPolicy(
    max_record_bytes=1_000_000,
    html_content_types=("text/html", "application/xhtml+xml"),
    accept_status=(200,),
)


def rows_of(path, policy=POLICY, index=0):
    with open(path, "rb") as fh:
        return list(iter_warc_rows(fh, index, str(path), policy))


def test_sample_reasons(sample_warc):
    rows = rows_of(sample_warc)
    assert len(rows) == 25  # one row per record, nothing skipped
    reasons = Counter((r["reject_reason"], r["reject_detail"]) for r in rows)
    assert reasons[("not_response", "request")] == 11
    assert reasons[("not_response", "warcinfo")] == 1
    assert reasons[("not_response", "revisit")] == 1
    assert reasons[("not_response", "metadata")] == 1
    assert reasons[("http_status", "404")] == 1
    assert reasons[("not_html", "image/png")] == 1
    assert reasons[("empty_payload", "")] == 1
    assert reasons[("truncated", "length")] == 1
    kept = [r for r in rows if r["reject_reason"] is None]
    assert len(kept) == 7 and all(r["payload"] for r in kept)
    encodings = {r["url"]: (r["transfer_encoding"], r["content_encoding"]) for r in kept}
    assert encodings["https://bread.example.com/home-baking"] == (None, "gzip")
    assert encodings["https://br.example.com/bread"] == (None, "br")
    assert encodings["https://chunked.example.net/rivers"] == ("chunked", None)


def test_ids_and_crawl_order(sample_warc):
    rows = rows_of(sample_warc, index=3)
    assert all(r["doc_id"].startswith("urn:uuid:") for r in rows)
    assert len({r["doc_id"] for r in rows}) == len(rows)
    pos = [r["crawl_pos"] for r in rows]
    assert pos == sorted(pos) and len(set(pos)) == len(pos)
    assert all(p >> OFFSET_BITS == 3 for p in pos)
    assert rows[0]["warc_offset"] == 0


def test_size_cap(sample_warc):
    small = RecordPolicy(1024, POLICY.html_content_types, POLICY.accept_status)
    rows = rows_of(sample_warc, small)
    too_large = [r for r in rows if r["reject_reason"] == "too_large"]
    assert {r["url"] for r in too_large} >= {"https://rivers.example.org/valleys"}
    assert len(rows) == 25


def _warc(records) -> bytes:
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    for uri, headers, body in records:
        http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.0")
        w.write_record(
            w.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=http)
        )
    return buf.getvalue()


def test_missing_content_type_is_sniffed_not_guessed():
    data = _warc(
        [
            ("http://a.example/", [], b"<!DOCTYPE html><html><body>hi</body></html>"),
            ("http://b.example/", [], b"%PDF-1.4 binary"),
        ]
    )
    rows = list(iter_warc_rows(io.BytesIO(data), 0, "mem", POLICY))
    assert rows[0]["reject_reason"] is None
    assert rows[1]["reject_reason"] == "not_html"
    assert sniff_html(b"\xef\xbb\xbf  <html>") and not sniff_html(b"{json}")


def test_corrupt_tail_is_one_ledger_row_and_earlier_records_survive(sample_warc):
    data = sample_warc.read_bytes()
    cut = data[: int(len(data) * 0.67)]  # ends inside a gzip member
    rows = list(iter_warc_rows(io.BytesIO(cut), 0, "cut.warc.gz", POLICY))
    assert rows[-1]["reject_reason"] == "corrupt_file"
    assert "cut.warc.gz" == rows[-1]["warc_file"]
    assert "to the end are damaged" in rows[-1]["reject_detail"]
    assert "cut short" in rows[-1]["reject_detail"]
    assert len(rows) > 10  # the records before the damage are all there


def test_not_a_warc_at_all():
    rows = list(iter_warc_rows(io.BytesIO(b"hello, I am a text file\n" * 10), 0, "x.txt", POLICY))
    assert [r["reject_reason"] for r in rows] == ["unreadable_file"]


def test_plain_gzip_text_is_unreadable():
    rows = list(iter_warc_rows(io.BytesIO(gzip.compress(b"not a warc")), 0, "x.gz", POLICY))
    assert [r["reject_reason"] for r in rows] == ["unreadable_file"]


def test_wget_angle_bracket_uris(shared_data):
    rows = rows_of(shared_data / "warc" / "dolma_wget_sample-0000.warc.gz")
    urls = [r["url"] for r in rows if r["warc_type"] == "response"]
    assert urls and all(u.startswith("http") and not u.startswith("<") for u in urls)
    assert all(r["host"] for r in rows if r["warc_type"] == "response")
