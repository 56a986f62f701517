"""Text datasets as input (JSONL plain or gzipped, Parquet, WET conversion records): rows with
the document's own id and text, other fields as metadata, extraction skipped; every line or
row kept or in the ledger, counted here by json/pyarrow/warcio, not by the reader."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from run_outputs import version_rows
from warcio.archiveiterator import ArchiveIterator

from curate_pipeline.config import Config
from curate_pipeline.document.extract import process_record
from curate_pipeline.document.text_inputs import iter_jsonl_rows, iter_parquet_rows
from curate_pipeline.document.warc.records import RecordPolicy, iter_warc_rows
from curate_pipeline.run.inputs import expand_inputs

LINES = [
    {
        "id": "a1",
        "text": "First document.\nSecond line.",
        "url": "https://a.example/1",
        "date": "2024-01-01",
        "dump": "CC-MAIN-2024-10",
        "language_score": 0.93,
    },
    "not json {",
    {"id": "a3", "url": "https://a.example/3"},  # no text
    {"text": "no id here"},
    {"id": 5, "text": "An integer id stays the id.", "token_count": 7},
    {"id": "a6", "text": "   \n  "},  # empty
    ["not", "an", "object"],
]


def _write_jsonl(path, gz: bool):
    body = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in LINES) + "\n\n"
    path.write_bytes(gzip.compress(body.encode()) if gz else body.encode())


@pytest.mark.parametrize("gz", [False, True])
def test_jsonl_lines_become_rows_or_ledger_entries(tmp_path, gz):
    path = tmp_path / ("docs.jsonl.gz" if gz else "docs.jsonl")
    _write_jsonl(path, gz)
    with path.open("rb") as fh:
        rows = list(iter_jsonl_rows(fh, 3, str(path), 1000))
    assert len(rows) == len(LINES)  # one row per non-empty line
    by_line = {r["warc_offset"]: r for r in rows}
    ok = by_line[0]
    assert (ok["doc_id"], ok["url"], ok["warc_date"], ok["warc_type"]) == (
        "a1",
        "https://a.example/1",
        "2024-01-01",
        "text",
    )
    assert json.loads(ok["input_metadata"]) == {"dump": "CC-MAIN-2024-10", "language_score": 0.93}
    assert ok["payload"].decode() == LINES[0]["text"] and ok["reject_reason"] is None
    assert by_line[4]["doc_id"] == "5"
    reasons = {n: (r["reject_reason"], r["reject_detail"]) for n, r in by_line.items()
               if r["reject_reason"]}  # fmt: skip
    assert reasons[1][0] == "bad_text_record" and reasons[1][1].startswith("line 1: not JSON")
    assert reasons[2] == ("bad_text_record", "line 2: no `text`")
    assert reasons[3] == ("bad_text_record", "line 3: no `id`")
    assert reasons[5][0] == "empty_payload"
    assert reasons[6] == ("bad_text_record", "line 6: not an object (list)")
    assert len({r["crawl_pos"] for r in rows}) == len(rows)


def test_a_gzip_file_without_its_name_and_a_cut_one(tmp_path):
    body = gzip.compress(json.dumps(LINES[0]).encode() * 1)
    misnamed = tmp_path / "docs.jsonl"
    misnamed.write_bytes(body)
    with misnamed.open("rb") as fh:
        (row,) = iter_jsonl_rows(fh, 0, str(misnamed), 1000)
    assert (
        row["reject_reason"] == "unreadable_file" and "rename it .jsonl.gz" in row["reject_detail"]
    )
    whole = gzip.compress(("\n".join(json.dumps({"id": i, "text": f"doc {i} " * 50})
                                     for i in range(2000))).encode())  # fmt: skip
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with cut.open("rb") as fh:
        rows = list(iter_jsonl_rows(fh, 0, str(cut), 1000))
    assert rows[-1]["reject_reason"] == "corrupt_file"
    assert all(r["reject_reason"] is None for r in rows[:-1]) and len(rows) > 100


def test_parquet_row_groups_shared_by_splits(tmp_path):
    n = 1000
    table = pa.table({"id": [f"p{i}" for i in range(n)], "text": [f"text {i}" for i in range(n)],
                      "url": [f"https://p.example/{i}" for i in range(n)],
                      "score": [i / n for i in range(n)]})  # fmt: skip
    path = tmp_path / "docs.parquet"
    pq.write_table(table, path, row_group_size=128)
    want = pq.ParquetFile(path).metadata.num_rows
    for nsplits in (1, 3, 8):
        rows = []
        for split in range(nsplits):
            with pq.ParquetFile(path) as pf:
                rows += list(iter_parquet_rows(pf, 0, str(path), 1000, split, nsplits))
        assert len(rows) == want
        assert sorted((r["warc_offset"], r["doc_id"]) for r in rows) == [
            (i, f"p{i}") for i in range(n)
        ]  # each row once, its offset its row number
    assert json.loads(rows[0]["input_metadata"]).keys() == {"score"}
    no_text = tmp_path / "no_text.parquet"
    pq.write_table(pa.table({"id": ["x"], "body": ["y"]}), no_text)
    with pq.ParquetFile(no_text) as pf:
        (row,) = iter_parquet_rows(pf, 0, str(no_text), 1000)
    assert row["reject_reason"] == "unreadable_file" and "no `text` column" in row["reject_detail"]


def test_wet_conversion_records_are_documents(shared_data):
    path = shared_data / "warc" / "CC-MAIN-2024-22_whirlwind.warc.wet.gz"
    with path.open("rb") as fh:
        want = [r.content_stream().read() for r in ArchiveIterator(fh)
                if r.rec_type == "conversion"]  # fmt: skip
    policy = RecordPolicy.from_conf(Config().read)
    with path.open("rb") as fh:
        rows = list(iter_warc_rows(fh, 0, str(path), policy))
    kept = [r for r in rows if r["reject_reason"] is None]
    assert [r["payload"] for r in kept] == want and want
    doc = process_record(kept[0], Config().extract, Config().read)
    assert doc["text"] == want[0].decode("utf-8")  # as it is: no extraction
    assert doc["extractor"] == "none (conversion record)"


def test_folders_list_text_datasets(tmp_path):
    (tmp_path / "a.jsonl.gz").write_bytes(b"")
    (tmp_path / "b.parquet").write_bytes(b"")
    (tmp_path / "notes.txt").write_bytes(b"")
    assert [p.rsplit("/", 1)[1] for p in expand_inputs([str(tmp_path)], "")] == [
        "a.jsonl.gz",
        "b.parquet",
    ]


@pytest.mark.spark
def test_text_inputs_through_every_stage(spark, cfg, shared_data, tmp_path):
    from curate_pipeline.run.orchestrate import run

    src = next((shared_data / "text").glob("dolma_*.jsonl"))
    lines = [json.loads(x) for x in src.read_text().split("\n") if x.strip()]
    jsonl = tmp_path / "in" / "dolma.jsonl.gz"
    jsonl.parent.mkdir()
    jsonl.write_bytes(gzip.compress(src.read_bytes()))
    aeb = json.loads((shared_data / "extraction" / "scrapinghub_aeb" / "ground-truth.json")
                     .read_text())  # fmt: skip
    rows = [{"id": f"aeb-{k[:12]}", "text": v["articleBody"], "url": v["url"], "origin": "aeb"}
            for k, v in sorted(aeb.items())]  # fmt: skip
    parquet = tmp_path / "in" / "aeb.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet, row_group_size=50)
    wet = shared_data / "warc" / "CC-MAIN-2014-35_npm-warc-fixture.wet"
    with wet.open("rb") as fh:
        wet_records = sum(1 for _ in ArchiveIterator(fh))
    out = tmp_path / "out"
    run(cfg, [str(jsonl), str(parquet), str(wet)], out, spark)
    data = version_rows(out, "data")
    ledger = version_rows(out, "rejected")
    assert len(data) + len(ledger) == len(lines) + len(rows) + wet_records
    original = {x["id"]: x["text"] for x in lines} | {r["id"]: r["text"] for r in rows}
    by_file: dict[str, list] = {}
    for d in data:
        by_file.setdefault(d["metadata"]["warc_file"].rsplit("/", 1)[-1], []).append(d)
        assert d["text"] == original[d["id"]]  # the dataset's own id and text, unextracted
        assert d["metadata"]["extractor"] == "none (text record)"
        assert d["metadata"]["charset"] == "utf-8 (text input)"
    assert len(by_file["dolma.jsonl.gz"]) > 100 and len(by_file["aeb.parquet"]) > 100
    assert {d["metadata"]["input_metadata"] for d in by_file["aeb.parquet"]} == {
        '{"origin": "aeb"}'
    }
    # WET conversion records are documents now, not `read:not_response`
    assert not [r for r in ledger if r["reason"] == "not_response" and r["detail"] ==
                "conversion"]  # fmt: skip
    assert {r["reason"] for r in ledger if r["stage"] == "extract"} <= {"extract_empty"}
