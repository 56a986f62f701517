"""One run at a time per output directory (pipeline/run/output_lock.py)."""

from __future__ import annotations

import os
import threading
import time

import pytest

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
    with hold(out), pytest.raises(OutputBusy, match="choose another folder"):
        run(cfg, [str(sample_warc)], out, spark)
    assert list(out.iterdir()) == []  # nothing was written (and the holder's lock is gone)
