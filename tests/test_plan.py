"""`curate plan` on a whole snapshot's listing (sizes only, no data): every stage keeps the
cluster's cores busy without a flood of tasks, no exchange moves the documents' text but the
shards' global shuffle, output files are sized by bytes, chunks stay within the stated bound,
and the driver's memory does not follow the corpus."""

from __future__ import annotations

import gzip
import math

import pytest

from curate_pipeline.cli import main
from curate_pipeline.config import Config
from curate_pipeline.run.inputs import expand_inputs
from curate_pipeline.run.plan import make_plan

CORES = 1600
FILE_BYTES = 1_100_000_000  # a Common Crawl WARC


def _listing(path, n: int) -> str:
    with gzip.open(path, "wt") as f:
        for i in range(n):
            f.write(f"crawl-data/CC-MAIN-2024-22/segments/{i // 1000}/warc/CC-{i:05d}.warc.gz\n")
    return str(path)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> list[str]:
    listing = _listing(tmp_path_factory.mktemp("plan") / "warc.paths.gz", 90_000)
    return expand_inputs([listing], Config().input.listing_prefix)


def test_a_snapshot_on_1600_cores(snapshot):
    cfg = Config()
    p = make_plan(cfg, snapshot, CORES, FILE_BYTES)
    total = 90_000 * FILE_BYTES
    assert p["inputs"] == {"files": 90_000, "bytes": total, "sizes_assumed": 90_000}
    # chunks: docs/running.md's bound, ceil(input bytes / (cores x chunks.bytes_per_core)) + 1
    bound = math.ceil(total / (CORES * cfg.chunks.bytes_per_core)) + 1
    assert p["chunks"]["count"] <= bound <= 70
    # requests to read a 1.1 GB WARC: at least one per 32 MiB range, at most a few more (a
    # HEAD per split, the run-on into the next split): not the ~140 of 8 MiB ranges
    rq = p["read_requests"]
    assert math.ceil(FILE_BYTES / (32 << 20)) <= rq["per_file_min"] <= rq["per_file_max"] <= 45
    assert rq["total"] <= 45 * 90_000
    # data/ files within 2x of bytes / target size; rejected/ one per core (its write reads
    # the whole documents store's reject columns), none below 32 MiB
    o = p["outputs"]["data"]
    ideal = o["bytes"] / cfg.output.file_bytes
    assert ideal / 2 <= o["files"] <= max(1, 2 * ideal), (o, ideal)
    o = p["outputs"]["rejected"]
    assert o["files"] == CORES and o["bytes"] / o["files"] >= 32 << 20, o
    # every stage that computes keeps the cores busy, none makes 4x the tasks it needs
    for s in p["stages"]:
        if s.get("sized_by") == "output files":
            continue  # one task per published file
        low = s.get("tasks_per_chunk_min", s["tasks"])
        high = s.get("tasks_per_chunk_max", s["tasks"])
        assert CORES <= low and high <= 4 * s["needed"], s
    for x in p["exchanges"]:
        assert CORES <= x["partitions"] <= 4 * x["needed"], x
        # the documents' text crosses no exchange but the global shuffle that is the product
        assert not x["text"] or x.get("product"), x
    assert [x["name"] for x in p["exchanges"] if x["text"]] == ["shards"]
    # the driver: a base and the run's file lists (~1.2 KB a file: inputs, the documents and
    # kept stores), nothing per record; a tenth of the snapshot needs ~3/4 as much
    small = make_plan(cfg, snapshot[:9_000], CORES, FILE_BYTES)
    assert p["driver_memory_bytes"] < 4e9
    assert p["driver_memory_bytes"] < 1.4 * small["driver_memory_bytes"]


def test_the_command_prints_the_plan(snapshot, tmp_path, capsys):
    listing = _listing(tmp_path / "few.paths.gz", 300)
    assert main(["plan", "--input", listing, "--cores", "64", "--file-bytes", "1.1e9"]) == 0
    out = capsys.readouterr().out
    assert "chunks" in out and "data/" in out and "core-hours" in out
    assert main(["plan", "--input", listing, "--cores", "0"]) == 2


def test_the_plan_of_adding_1_percent_to_an_output(snapshot, tmp_path, capsys):
    """`curate plan --output DIR` over a listing that extends DIR's current version: the plan
    of the added files alone, and the scan of the earlier documents' dedup index."""
    import json

    from curate_pipeline.outputs.publish import versions
    from curate_pipeline.run import sizing

    out = tmp_path / "out"
    done = snapshot[:89_100]
    versions.folder(out, 7).mkdir()
    (versions.folder(out, 7) / "manifest.json").write_text(json.dumps({"inputs": done}))
    versions.commit(out, 7, {"counts": {"kept": 250_000_000}})
    listing = _listing(tmp_path / "warc.paths.gz", 90_000)  # the snapshot's, expanded alike
    assert main(["plan", "--input", listing, "--cores", str(CORES), "--file-bytes",
                 str(FILE_BYTES), "--output", str(out), "--json"]) == 0  # fmt: skip
    p = json.loads(capsys.readouterr().out)
    whole = make_plan(Config(), snapshot, CORES, FILE_BYTES)
    scan = 250_000_000 * sizing.INDEX_SCAN_ROW_BYTES
    assert p["append"] == {"version": 7, "inputs_done": 89_100, "inputs_added": 900,
                           "index_rows": 250_000_000, "index_scan_bytes": scan}  # fmt: skip
    assert p["inputs"]["files"] == 900
    assert p["estimates"]["records"] == pytest.approx(whole["estimates"]["records"] / 100, 0.01)
    assert "prior_dedup" in {x["name"] for x in p["exchanges"]}
    assert p["core_hours"] < whole["core_hours"] / 50
    # not an extension of the version's inputs: the plan of a whole run
    elsewhere = str(tmp_path / "elsewhere")
    assert main(["plan", "--input", listing, "--cores", str(CORES), "--file-bytes",
                 str(FILE_BYTES), "--output", elsewhere, "--json"]) == 0  # fmt: skip
    assert "append" not in json.loads(capsys.readouterr().out)
