"""The back-off an executor's workers share (curate_pipeline/backoff.py): a throttled request in one
process pauses the next request of another to the same store, and of no other store."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from curate_pipeline import backoff
from curate_pipeline.location import patiently

ROOT = Path(__file__).resolve().parents[1]
# pyarrow's text for S3's throttle, as the throttled-store test's proxy makes it answer
SLOW_DOWN = ("When reading information for key 'seg/a.warc.gz' in bucket 'crawl': AWS Error "
             "SLOW_DOWN during GetObject operation: Please reduce your request rate.")  # fmt: skip

ASK = """
import sys, time
from curate_pipeline.location import patiently
print(patiently(time.time, sys.argv[1]))
"""


def test_what_counts_as_throttling():
    assert backoff.is_throttle(OSError(SLOW_DOWN))
    assert backoff.is_throttle(OSError("HTTP 429 Too Many Requests"))
    assert not backoff.is_throttle(OSError("Connection reset by peer"))
    assert not backoff.is_throttle(FileNotFoundError("no such key"))


def test_a_throttle_in_one_worker_pauses_the_others_asking_that_store(tmp_path, monkeypatch):
    monkeypatch.setenv(backoff.DIR_ENV, str(tmp_path))
    calls = []

    def throttled_once() -> str:
        calls.append(time.time())
        if len(calls) == 1:
            raise OSError(SLOW_DOWN)
        return "ok"

    assert patiently(throttled_once, "s3://crawl") == "ok"
    until = backoff.paused_until("s3://crawl")
    assert until > calls[0]  # the mark another worker reads
    # another worker of the executor (a process of its own) asks the same store: it waits
    # out the mark; one asking another store does not
    backoff.note_throttle("s3://crawl", 1.5)
    until = backoff.paused_until("s3://crawl")
    env = {**os.environ, backoff.DIR_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}
    started = time.time()
    same = subprocess.run([sys.executable, "-c", ASK, "s3://crawl"], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    other = subprocess.run([sys.executable, "-c", ASK, "s3://out"], env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert float(same.stdout) >= until
    assert float(other.stdout) - started < until - started + 1.0  # not paused a second time
    assert backoff.paused_until("s3://out") == 0.0


def test_a_lost_mark_costs_nothing_but_the_shared_pause(tmp_path, monkeypatch):
    monkeypatch.setenv(backoff.DIR_ENV, str(tmp_path / "file-not-folder"))
    (tmp_path / "file-not-folder").write_text("x")  # no folder can be made there
    backoff.note_throttle("s3://crawl", 5)
    assert backoff.paused_until("s3://crawl") == 0.0
    assert patiently(lambda: 42, "s3://crawl") == 42
