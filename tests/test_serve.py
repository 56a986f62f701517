"""`curate serve` as a user runs it: a process watching a folder. Files dropped in are curated
and shown by its web API; a kill (SIGKILL) and a restart lose nothing and redo nothing; SIGTERM
stops it cleanly."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from run_outputs import published

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]


class Serving:
    def __init__(self, conf: Path, watched: Path, out: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "curate_pipeline.cli", "serve", "--config", str(conf), "--input",
             str(watched), "--output", str(out), "--every", "1", "--port", "0"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        self.err: list[str] = []
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True).start()
        line = ""
        t0 = time.perf_counter()
        while "explore: http" not in line and time.perf_counter() - t0 < 120:
            line = self.proc.stdout.readline()
            assert line or self.proc.poll() is None, "".join(self.err)
        self.url = line.split("explore: ", 1)[1].split(" ", 1)[0].rstrip("/")

    def status(self) -> dict:
        with urllib.request.urlopen(self.url + "/api/status", timeout=10) as r:
            return json.loads(r.read())

    def wait_read(self, n: int, timeout: float = 300) -> dict:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout:
            s = self.status()
            if (s.get("counts") or {}).get("read") == n and s["serve"]["state"] == "watching":
                return s
            assert self.proc.poll() is None, "".join(self.err)
            time.sleep(0.5)
        raise AssertionError(f"not {n} records read in {timeout} s: {s}; {''.join(self.err)}")


def test_files_dropped_in_are_curated_and_a_kill_loses_nothing(sample_warc, tmp_path):
    watched, out = tmp_path / "incoming", tmp_path / "out"
    watched.mkdir()
    conf = tmp_path / "c.yaml"
    conf.write_text("chunks:\n  files: 1\n  parallel: 1\n")  # a chunk per file, one at a time
    per_file = 25  # the sample's records (tests/test_pipeline_spark.py counts them)

    def drop(name: str) -> None:
        shutil.copy(sample_warc, watched / name)

    first = Serving(conf, watched, out)
    try:
        drop("a.warc.gz")
        s = first.wait_read(per_file)
        assert s["serve"]["files_done"] == 1
        drop("b.warc.gz")
        first.wait_read(2 * per_file)
    finally:
        os.killpg(first.proc.pid, signal.SIGKILL)  # no goodbye: the output holds the state
        first.proc.wait(timeout=60)
    second = Serving(conf, watched, out)
    try:
        drop("c.warc.gz")
        second.wait_read(3 * per_file)
        m = json.loads((published(out) / "manifest.json").read_text())
        assert [c["status"] for c in m["chunks"]] == ["reused", "reused", "ran"]
        # the cycle appended: its corpus stages read the new file's rows only (the copies of
        # the earlier files' pages were dropped against the output's index)
        assert m["increment"]["counts"]["read"] == per_file
        rows = {st["name"]: st["rows"] for st in m["stages"]}
        assert rows["prior_dedup"] <= per_file and sum(
            n for k, n in m["increment"]["counts"]["rejected"].items()
            if k.startswith("prior_dup")) > 0  # fmt: skip
        with urllib.request.urlopen(second.url + "/api/documents?size=1", timeout=10) as r:
            assert json.loads(r.read())["total"] == 3 * per_file
        # SIGTERM while new files are being curated: the chunk in flight commits, no other
        # starts, no corpus stage runs, exit 0
        drop("d.warc.gz")
        drop("e.warc.gz")
        t0 = time.perf_counter()
        while not any("chunk-00003 ran" in line for line in second.err):
            assert time.perf_counter() - t0 < 300 and second.proc.poll() is None, second.err
            time.sleep(0.1)
        os.killpg(second.proc.pid, signal.SIGTERM)
        assert second.proc.wait(timeout=120) == 0
        stopped = [line for line in second.err if "curate serve: stopped; " in line]
        assert stopped and int(stopped[0].split("stopped; ")[1].split(" chunk")[0]) in (4, 5)
        assert len(json.loads((published(out) / "manifest.json").read_text())["inputs"]) == 3
    finally:
        if second.proc.poll() is None:
            os.killpg(second.proc.pid, signal.SIGKILL)
