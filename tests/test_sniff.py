"""Inputs probed before Spark starts (curate_pipeline/document/sniff.py, run/preflight.py): real
archives and datasets pass, a file that is certainly something else is named, damage is
left to the reader's ledger."""

from __future__ import annotations

import gzip
import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate_pipeline.document.sniff import HEAD_BYTES, looks_like, mismatch
from curate_pipeline.run.inputs import InputError
from curate_pipeline.run.preflight import check_inputs


def _head(path) -> bytes:
    return path.read_bytes()[:HEAD_BYTES]


def test_every_real_archive_and_dataset_passes(shared_data, sample_warc, tmp_path):
    files = sorted((shared_data / "warc").iterdir()) + sorted((shared_data / "text").iterdir())
    table = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["a"], "text": ["hello"]}), table)
    assert len(files) >= 10
    for f in [*files, sample_warc, table]:
        assert mismatch(str(f), _head(f)) is None, (f, looks_like(_head(f)))


# (file name, bytes, what the refusal says it looks like)
WRONG = [
    ("table.warc", b"name,age\nalice,30\n", "text (first line: 'name,age')"),
    ("page.warc.gz", b"<!DOCTYPE html>\n<html><head><title>x</title>", "HTML document"),
    ("scan.warc.gz", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "Portable Document Format"),
    ("logo.warc.gz", b"\x89PNG\r\n\x1a\n" + bytes(64), "Portable Network Graphics"),
    ("empty.warc.gz", b"", "an empty file"),
    ("empty2.warc.gz", gzip.compress(b"", mtime=0), "an empty gzip file"),
    (
        "rows.warc.gz",
        gzip.compress(b'{"id": 1, "text": "x"}\n', mtime=0),
        "gzip-compressed JSON lines",
    ),
    ("docs.jsonl", gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n", mtime=0), "WARC records"),
    ("docs.parquet", b'{"id": 1}\n', "JSON lines"),
]


@pytest.mark.parametrize(("name", "data", "what"), WRONG)
def test_a_wrong_input_is_named_with_what_it_looks_like(name, data, what):
    why = mismatch(name, data)
    assert why is not None and what in why, why


def test_a_first_document_longer_than_the_head_is_still_json_lines():
    long = json.dumps({"id": "a", "text": "word " * 40_000}).encode() + b"\n{}\n"
    assert len(long) > HEAD_BYTES
    assert mismatch("docs.jsonl", long[:HEAD_BYTES]) is None
    assert mismatch("docs.jsonl.gz", gzip.compress(long)[:HEAD_BYTES]) is None
    assert mismatch("docs.warc.gz", gzip.compress(long)[:HEAD_BYTES]) is not None


def test_bytes_a_damaged_archive_may_hold_are_left_to_the_reader():
    # binary with no known signature (a plain WARC cut inside an image payload), and gzip
    # that does not inflate (a corrupt first member): the reader ledgers the damage
    assert mismatch("cut.warc", bytes(range(256)) * 4) is None
    assert mismatch("bad.warc.gz", b"\x1f\x8b\x08\x00" + bytes(range(200, 256)) * 8) is None
    # a record header after a cut first record: an archive
    assert mismatch("cut2.warc", b"tail of a page</html>\r\n\r\nWARC/1.0\r\nWARC-Type: x") is None


def _files(tmp_path, sample_warc, n_bad: int, n_good: int) -> list[str]:
    tmp_path.mkdir()
    out = []
    for i in range(n_bad):
        p = tmp_path / f"bad-{i}.warc"
        p.write_text("name,age\nalice,30\n")
        out.append(str(p))
    for i in range(n_good):
        p = tmp_path / f"good-{i}.warc.gz"
        p.write_bytes(sample_warc.read_bytes())
        out.append(str(p))
    return out


def test_the_run_stops_only_where_it_would_fail_for_them_anyway(cfg, sample_warc, tmp_path, caplog):
    c = cfg.model_copy(deep=True)
    c.input.max_unreadable_files = 2
    # a few among good ones: logged, then the ledger's (read:unreadable_file)
    with caplog.at_level(logging.WARNING, logger="curate_pipeline.run.preflight"):
        check_inputs(c, _files(tmp_path / "a", sample_warc, 2, 3))
    assert sum("goes to the ledger" in r.getMessage() for r in caplog.records) == 2
    # every input: nothing to read
    with pytest.raises(InputError, match="no input can be read: .*bad-0.warc"):
        check_inputs(c, _files(tmp_path / "b", sample_warc, 1, 0))
    # more than input.max_unreadable_files: the run would fail at its end
    with pytest.raises(InputError, match=r"3 of the first 4 inputs .*max_unreadable_files \(2\)"):
        check_inputs(c, _files(tmp_path / "c", sample_warc, 3, 1))
    # input.on_unreadable: fail: any of them
    c.input.on_unreadable = "fail"
    with pytest.raises(InputError, match="on_unreadable: fail"):
        check_inputs(c, _files(tmp_path / "d", sample_warc, 1, 3))
    # input.probe_files: 0 (or remote inputs): nothing is read before Spark starts
    c.input.probe_files = 0
    check_inputs(c, _files(tmp_path / "e", sample_warc, 1, 0))
