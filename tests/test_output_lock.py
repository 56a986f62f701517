"""One run at a time per output directory (pipeline/run/output_lock.py)."""

from __future__ import annotations

import os

import pytest

from pipeline.run.output_lock import LOCK_NAME, OutputBusy, hold


def test_a_second_holder_is_refused_and_named(tmp_path):
    with hold(tmp_path):
        with pytest.raises(OutputBusy, match=rf"another curate run \(pid {os.getpid()}\)"):
            with hold(tmp_path):
                pass
    with hold(tmp_path):  # released when the first holder let go
        assert (tmp_path / LOCK_NAME).is_file()
    assert not (tmp_path / LOCK_NAME).exists()  # no leftover once the run is over


@pytest.mark.spark
def test_run_refuses_an_output_another_run_is_writing(spark, cfg, sample_warc, tmp_path):
    from pipeline.run.orchestrate import run

    out = tmp_path / "out"
    out.mkdir()
    with hold(out), pytest.raises(OutputBusy, match="choose another folder"):
        run(cfg, [str(sample_warc)], out, spark)
    assert list(out.iterdir()) == []  # nothing was written (and the holder's lock is gone)
