"""Broken inputs (curate_pipeline/examples/broken_archives.py), each through the read, decode and
extract path in plain Python and all of them through the whole pipeline on Spark: the run
completes, each break is in the ledger with its reason, the good records beside it go on, and
read == kept + rejected."""

from __future__ import annotations

import re
from collections import defaultdict

import pyarrow.parquet as pq
import pytest
from run_outputs import version_rows

from curate_pipeline.config import SourceRule
from curate_pipeline.document.extract import process_record
from curate_pipeline.document.warc.streams import TransportError
from curate_pipeline.examples.broken_archives import refused_url, write_broken_inputs
from curate_pipeline.run.inputs import expand_inputs
from curate_pipeline.stages.read import UnreadableInput, read_file_rows


@pytest.fixture(scope="module")
def bcfg(cfg):
    c = cfg.model_copy(deep=True)
    c.input.http_retries = 0  # the refused URL: fail fast
    c.input.max_unreadable_files = 100
    c.input.http_timeout_s = 5
    c.input.on_unreadable = "record"
    # a host rule: the source step parses every URL's host (hostile_records has one that
    # does not parse)
    c.sources.rules = [SourceRule(source="wiki", hosts=["wikipedia.org"])]
    return c


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return write_broken_inputs(tmp_path_factory.mktemp("broken"))


def _rows(path: str, cfg, nsplits: int) -> list[dict]:
    """The rows of every split of `path`, after decode and extract."""
    return [
        process_record(r, cfg.extract, cfg.read)
        for k in range(nsplits)
        for r in read_file_rows(0, path, cfg, k, nsplits)
    ]


def _key(row: dict) -> tuple:
    return row["doc_id"], row["warc_offset"], row["reject_stage"], row["reject_reason"]


def test_each_case_is_ledgered_and_its_good_records_go_on(cases, bcfg):
    for case in cases:
        files = expand_inputs([case.path], bcfg.input.listing_prefix)
        whole = [r for f in files for r in _rows(f, bcfg, 1)]
        got = {f"{r['reject_stage']}:{r['reject_reason']}" for r in whole if r["reject_reason"]}
        assert case.reasons <= got, (case.name, got)
        if not case.reasons:  # invalid UTF-8, a lying charset: read as well as they can be
            assert not got, (case.name, got)
        passed = {r["doc_id"] for r in whole if r["reject_reason"] is None}
        assert set(case.good) <= passed, (case.name, set(case.good) - passed)
        for r in whole:
            if r["reject_reason"]:
                assert r["reject_detail"] is not None, (case.name, r)
        # Three byte-range splits give the very same rows as one whole read.
        split = [r for f in files for r in _rows(f, bcfg, 3)]
        assert sorted(map(_key, split), key=str) == sorted(map(_key, whole), key=str), case.name


def test_a_lying_charset_is_seen_through(cases, bcfg):
    (case,) = [c for c in cases if c.name == "lying_charset"]
    rows = {r["doc_id"]: r for r in _rows(case.path, bcfg, 1)}
    lied = rows[case.good[1]]
    assert "Река" in lied["text"] and "utf-8" not in lied["charset"]


def test_damage_details_say_where_and_what(cases, bcfg):
    by_name = {c.name: c for c in cases}
    garbage = _rows(by_name["garbage_between"].path, bcfg, 1)
    (bad,) = [r for r in garbage if r["reject_reason"] == "corrupt_file"]
    assert "are damaged" in bad["reject_detail"]
    assert "reading resumed at byte" in bad["reject_detail"]
    (empty,) = _rows(by_name["zero_bytes"].path, bcfg, 1)
    assert "empty" in empty["reject_detail"]
    (missing,) = _rows(expand_inputs([by_name["missing_in_listing"].path], "")[0], bcfg, 1)
    assert "does-not-exist.warc.gz" in missing["reject_detail"]
    # a refused connection is the network, not the data: no row, the task fails (and Spark
    # retries it), naming the URL
    url = refused_url()
    with pytest.raises(TransportError, match=url.split("//")[1]):
        _rows(url, bcfg, 1)


def test_unopenable_input_can_fail_the_run_naming_the_path(cases, bcfg):
    strict = bcfg.model_copy(deep=True)
    strict.input.on_unreadable = "fail"
    for name in ("zero_bytes", "not_a_warc", "missing_in_listing"):
        (case,) = [c for c in cases if c.name == name]
        (path,) = expand_inputs([case.path], "")
        with pytest.raises(UnreadableInput, match="on_unreadable") as e:
            list(read_file_rows(0, path, strict))
        assert path in str(e.value)


@pytest.mark.spark
def test_pipeline_runs_through_every_broken_input(cases, bcfg, spark, tmp_path):
    from curate_pipeline.run.orchestrate import run

    out = tmp_path / "out"
    manifest = run(bcfg, [c.path for c in cases], out, spark)
    c = manifest["counts"]
    assert c["read"] == c["kept"] + sum(c["rejected"].values())
    ledger = version_rows(out, "rejected")
    data = version_rows(out, "data")
    assert c["kept"] == len(data) and sum(c["rejected"].values()) == len(ledger)
    reasons: dict[str, set[str]] = defaultdict(set)
    for r in ledger:
        reasons[r["warc_file"]].add(f"{r['stage']}:{r['reason']}")
    extracted = pq.read_table(out / "_stages" / "documents").to_pylist()
    got_through = {
        r["doc_id"] for r in extracted if r["reject_stage"] not in ("read", "decode", "extract")
    }
    for case in cases:
        files = expand_inputs([case.path], "")
        seen = set().union(*(reasons[_resolved(f)] for f in files))
        assert case.reasons <= seen, (case.name, seen)
        assert set(case.good) <= got_through, case.name
    # Ids are unique across the run, though a file concatenated with itself repeats them
    # all; no duplicate names itself as the copy kept.
    ids = [r["id"] for r in data] + [r["doc_id"] for r in ledger]
    assert len(ids) == len(set(ids))
    for r in ledger:
        if r["reason"] == "duplicate":
            assert r["detail"].split()[1] != r["doc_id"], r
    second = [r for r in ledger if "concatenated" in r["warc_file"] and "#" in r["doc_id"]]
    assert len(second) == 10 and all(r["stage"] != "read" for r in second)
    # Output file names come from the pipeline, never from URLs or record headers.
    for p in out.rglob("*"):
        rel = p.relative_to(out).as_posix()
        assert _OUTPUT_NAME.fullmatch(rel), rel


# Every name a run writes: fixed names, Spark part files, numbered shards, language folders.
_OUTPUT_NAME = re.compile(
    r"(README\.md|\.curate\.lock(/\d{12}\.json)?|quality_percentiles\.json"
    r"|_versions(/\d{12}\.json)?|versions(/\d{12})?"
    r"|(versions/\d{12}/)?(manifest\.json|report\.(html|json)|budget\.json)"
    r"|(versions/\d{12}/)?delta\.json"
    r"|(data|rejected)/_delta_log(/\d{20}\.json|/_last_checkpoint|/\d{20}\.checkpoint\.parquet)?"
    r"|((versions/\d{12}/)?(shards|tokens)|(data|rejected|index)(/\d{12})?"
    r"|_stages(/[a-z_]+)?(/chunk-\d{5})?(/w-[0-9a-f]{12})?)"
    r"(/([a-z]{2,3}(_[A-Z][a-z]{3})?|und|dgrp=\d+))?"
    r"(/(_SUCCESS|\._SUCCESS\.crc|_STAGE\.json|_CHUNKING\.json|index\.json|run\.json"
    r"|shard-\d+\.(parquet|bin|idx)"
    r"|\.?part-\d+-[0-9a-f-]{36}[.-]c000(\.[a-z]+)?\.parquet(\.crc)?))?)"
)


def _resolved(path: str) -> str:
    from pathlib import Path

    from curate_pipeline.document.warc.streams import is_url

    return path if is_url(path) else str(Path(path).resolve())
