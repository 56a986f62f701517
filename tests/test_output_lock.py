"""One run at a time per output directory (pipeline/run/output_lock.py)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from pipeline.config import ConfigError
from pipeline.location import Location
from pipeline.run.output_lock import LOCK_NAME, Lease, OutputBusy, hold


def test_a_second_holder_is_refused_and_named(tmp_path):
    with hold(tmp_path) as first:
        with pytest.raises(OutputBusy, match=rf"another curate run \(pid {os.getpid()} on "):
            with hold(tmp_path):
                pass
        first.check()  # the refused one took nothing from the holder
    with hold(tmp_path):  # released when the first holder let go
        assert len(list((tmp_path / LOCK_NAME).iterdir())) == 1
    assert not (tmp_path / LOCK_NAME).exists()  # no leftover once the run is over


def test_a_killed_runs_lock_lapses_and_a_late_holder_stops(tmp_path):
    """A holder that stops renewing (killed, or paused past its lease) loses the lock to the
    next run, and finds out before its next commit; the successor is never disturbed."""
    stale = Lease(Location.of(tmp_path), seconds=0.2)
    stale.acquire()  # never renewed, never released: a killed run
    with pytest.raises(OutputBusy):
        Lease(Location.of(tmp_path), seconds=60).acquire()  # still within its lease
    time.sleep(0.3)
    successor = Lease(Location.of(tmp_path), seconds=60)
    successor.acquire()
    assert successor.generation == stale.generation + 1
    stale.renew()  # the stale holder wakes up: it sees the newer generation
    with pytest.raises(OutputBusy, match="lapsed and another run took it over"):
        stale.check()
    stale.release()  # deletes nothing of the successor's
    successor.renew()
    successor.check()
    successor.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_racing_runs_get_one_lock(tmp_path):
    """Eight runs trying at once on a lapsed lock: exactly one wins (exclusive create)."""
    Lease(Location.of(tmp_path), seconds=0.01).acquire()
    time.sleep(0.05)
    barrier = threading.Barrier(8)
    won, lost = [], []

    def take() -> None:
        lease = Lease(Location.of(tmp_path), seconds=60)
        barrier.wait()
        try:
            lease.acquire()
            won.append(lease)
        except OutputBusy:
            lost.append(lease)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == 7


@pytest.mark.spark
def test_run_refuses_an_output_another_run_is_writing(spark, cfg, sample_warc, tmp_path):
    from pipeline.run.orchestrate import run

    out = tmp_path / "out"
    out.mkdir()
    # refused by the checks before anything starts (ConfigError), or by the lock itself
    # when the other run took it after the checks (OutputBusy)
    with hold(out), pytest.raises((ConfigError, OutputBusy), match="choose another folder"):
        run(cfg, [str(sample_warc)], out, spark)
    assert list(out.iterdir()) == []  # nothing was written (and the holder's lock is gone)


def test_a_second_cli_run_into_a_locked_output_is_refused_at_once(sample_warc, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "out"
    out.mkdir()
    with hold(out):
        r = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "run", "--input", str(sample_warc),
             "--output", str(out)], capture_output=True, text=True,
            cwd=Path(__file__).resolve().parents[1],
        )  # fmt: skip
    assert r.returncode == 2
    assert "another curate run" in r.stderr and "--verbose" not in r.stderr
    # refused by the checks before Spark starts (it took 16.8 s when only the run's own lock
    # refused it): no Spark log line, no run log line
    assert "input file(s)" not in r.stderr and "Spark" not in r.stderr
