"""Crawl-scale runs: chunks committed one by one, a killed run resumes at chunk boundaries
and mid-chunk, inputs added later extract only the new chunks, and a retune of per-document
settings reruns the steps from the stored text; each gives the output of a fresh run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from run_outputs import published, version_rows

from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc
from curate_pipeline.run.chunks import cut_chunks

ROOT = Path(__file__).resolve().parents[1]


def test_chunks_cut_by_files_and_bytes(tmp_path):
    files = []
    for i, size in enumerate([10, 10, 50, 10, 10, 10, 200, 10]):
        f = tmp_path / f"f{i}.warc.gz"
        f.write_bytes(b"x" * size)
        files.append(str(f))
    chunks = cut_chunks(files, max_files=3, max_bytes=60)
    assert [(c.first, len(c.files)) for c in chunks] == [(0, 2), (2, 2), (4, 2), (6, 1), (7, 1)]
    assert [c.name for c in chunks] == [f"chunk-0000{i}" for i in range(5)]
    # appending files never moves an earlier boundary
    more = cut_chunks([*files, *files[:3]], max_files=3, max_bytes=60)
    assert more[:4] == chunks[:4]
    urls = [f"https://data.example.org/{i}.warc.gz" for i in range(7)]
    assert [len(c.files) for c in cut_chunks(urls, 3, 60)] == [3, 3, 1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("chunked")
    pages = with_duplicates(synthetic_pages(160, seed=11), share=0.2, seed=11)
    per = len(pages) // 4
    files = []
    for k in range(4):
        f = d / f"crawl-{k}.warc.gz"
        write_pages_warc(f, pages[k * per : (k + 1) * per] if k < 3 else pages[3 * per :], f"c{k}")
        files.append(str(f))
    return files


@pytest.fixture(scope="module")
def ccfg(cfg):
    c = cfg.model_copy(deep=True)
    c.chunks.files = 1
    c.output.data_files = 2
    return c


def _run(spark, cfg, inputs, out: Path) -> dict:
    from curate_pipeline.run.orchestrate import run

    return run(cfg, inputs, out, spark)


def _content(out: Path) -> dict:
    manifest = json.loads((published(out) / "manifest.json").read_text())
    return {
        "data": sorted(version_rows(out, "data"), key=lambda d: d["id"]),
        "ledger": sorted(
            version_rows(out, "rejected"),
            key=lambda r: (r["doc_id"], r["stage"]),
        ),  # fmt: skip
        "counts": manifest["counts"],
        "tokens": manifest["tokens"],
    }


@pytest.fixture(scope="module")
def fresh(spark, ccfg, corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fresh") / "out"
    m = _run(spark, ccfg, corpus, out)
    assert [c["status"] for c in m["chunks"]] == ["ran"] * 4
    assert m["counts"]["rejected"].get("exact_dup:duplicate", 0) > 0
    return out


@pytest.mark.spark
def test_added_inputs_extract_only_the_new_chunks(spark, ccfg, corpus, fresh, tmp_path):
    """A whole new version (output.append off; appending: tests/test_append.py): the old
    chunks reused, dedup over the union, so earlier documents win, as in one run."""
    out = tmp_path / "out"
    whole = ccfg.model_copy(deep=True)
    whole.output.append = False
    _run(spark, whole, corpus[:2], out)
    m = _run(spark, whole, corpus, out)
    assert [c["status"] for c in m["chunks"]] == ["reused", "reused", "ran", "ran"]
    assert _content(out) == _content(fresh)  # dedup over the union: earlier documents win


@pytest.mark.spark
def test_retune_reruns_the_steps_from_the_stored_text(spark, ccfg, corpus, fresh, tmp_path):
    out = tmp_path / "out"
    _run(spark, ccfg, corpus, out)
    tuned = ccfg.model_copy(deep=True)
    tuned.langid.threshold = 0.9
    tuned.rules.gopher_quality.min_doc_words = 80
    m = _run(spark, tuned, corpus, out)
    assert [c["status"] for c in m["chunks"]] == ["retuned"] * 4
    assert m["documents_pass_task_seconds"]["extract"] == 0  # no page extracted again
    again = tmp_path / "fresh-tuned"
    _run(spark, tuned, corpus, again)
    assert _content(out) == _content(again)
    assert _content(out)["counts"] != _content(fresh)["counts"]  # the retune did change things


def _curate(config: Path, corpus: list[str], out: Path) -> tuple[subprocess.Popen, Path]:
    cmd = [str(Path(sys.executable).parent / "curate"), "run", "--config", str(config),
           "--input", *corpus, "--output", str(out)]  # fmt: skip
    path = out.parent / f"driver-{time.monotonic_ns()}.log"
    log = open(path, "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    return proc, path


def _kill_when(proc: subprocess.Popen, ready) -> None:
    deadline = time.monotonic() + 300
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None and ready(), "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
    proc.wait()


@pytest.mark.spark
def test_killed_at_a_chunk_boundary_and_mid_chunk_resumes(spark, ccfg, corpus, fresh, tmp_path):
    one_at_a_time = ccfg.model_copy(deep=True)
    one_at_a_time.chunks.parallel = 1
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(one_at_a_time.model_dump(mode="json")))
    out = tmp_path / "out"
    docs = out / "_stages" / "documents"
    # killed as chunk 1 is committed
    proc, _ = _curate(config, corpus, out)
    _kill_when(proc, lambda: (docs / "chunk-00001" / "_STAGE.json").exists())
    # killed inside chunk 2 of the rerun, once a task of its write has committed: Hadoop's
    # committer leaves that task's files in the chunk folder (_temporary/0/task_*), which a
    # job commit of the next write there would merge into its own (issue 61: the first
    # resume failed on them)
    proc, log = _curate(config, corpus, out)
    _kill_when(proc, lambda: "chunk-00001 reused" in log.read_text(errors="replace")
               and any((docs / "chunk-00002").glob("*/_temporary/0/task_*/*.parquet")))  # fmt: skip
    assert not (out / "_versions").exists()  # nothing published
    assert not (docs / "chunk-00002" / "_STAGE.json").exists()
    # the rerun that finishes (here, on the tests' session: the killed runs were the CLI's)
    m = _run(spark, one_at_a_time, corpus, out)
    assert [c["status"] for c in m["chunks"]] == ["reused", "reused", "ran", "ran"]
    assert _content(out) == _content(fresh)


@pytest.mark.spark
def test_a_file_missing_on_one_run_is_read_on_the_next(spark, ccfg, corpus, tmp_path):
    """An input that answered 404 is a ledger row (read:unreadable_file), not a verdict for
    ever: once it is there, the rerun runs its chunk again and reads it; the others reuse."""
    import functools
    import shutil
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(corpus[0], served / "a.warc.gz")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(served))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        inputs = [f"{base}/a.warc.gz", f"{base}/b.warc.gz"]
        out = tmp_path / "out"
        first = _run(spark, ccfg, inputs, out)
        assert first["counts"]["rejected"]["read:unreadable_file"] == 1
        shutil.copy(corpus[1], served / "b.warc.gz")  # the outage is over
        again = _run(spark, ccfg, inputs, out)
        assert [c["status"] for c in again["chunks"]] == ["reused", "ran"]
        assert "read:unreadable_file" not in again["counts"]["rejected"]
        assert again["counts"]["read"] > first["counts"]["read"]
    finally:
        server.shutdown()
