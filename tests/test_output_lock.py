"""One run at a time per output directory (curate_pipeline/run/output_lock.py)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from curate_pipeline.config import ConfigError
from curate_pipeline.location import Location
from curate_pipeline.run.output_lock import LOCK_NAME, Lease, OutputBusy, hold


def _released(folder) -> bool:
    """Every generation file left is marked released (generations stay: never reused)."""
    import json

    files = list((folder / LOCK_NAME).iterdir())
    return bool(files) and all(json.loads(f.read_text()).get("released") for f in files)


def test_a_second_holder_is_refused_and_named(tmp_path):
    with hold(tmp_path) as first:
        with pytest.raises(OutputBusy, match=rf"another curate run \(pid {os.getpid()} on "):
            with hold(tmp_path):
                pass
        first.check()  # the refused one took nothing from the holder
    with hold(tmp_path) as second:  # released when the first holder let go
        assert len(list((tmp_path / LOCK_NAME).iterdir())) == 1
        assert second.generation == first.generation + 1  # numbers go on
    assert _released(tmp_path)  # one file, marked released, once the run is over


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
    stale.renew()  # the stale holder wakes up: it sees the newer generation, writes nothing
    with pytest.raises(OutputBusy, match="lost its lock"):
        stale.check()
    stale.release()  # deletes nothing of the successor's
    successor.renew()
    successor.check()
    successor.release()
    assert _released(tmp_path)


def test_a_lease_passed_by_the_holders_own_clock_stops_its_writes(tmp_path):
    """Nobody took the lock over, but the holder did not renew in time (paused, or the store
    unreachable): its next check refuses by its own clock, without asking anyone."""
    lease = Lease(Location.of(tmp_path), seconds=0.3)
    lease.acquire()
    lease.check()
    time.sleep(0.35)
    with pytest.raises(OutputBusy, match=r"0.3 s lease passed by this process's clock"):
        lease.check()


def test_generations_are_never_reused_so_a_stale_holder_never_takes_a_later_one(tmp_path):
    """ABA: a holder paused past its lease while others take and release the lock (as
    `curate serve` does every cycle) finds a later generation, never its own number reissued,
    and overwrites nobody's lease."""
    import json

    stale = Lease(Location.of(tmp_path), seconds=0.2)
    stale.acquire()
    time.sleep(0.25)
    for _ in range(3):  # serve cycles: take, release
        with hold(tmp_path, lease_seconds=60) as cycle:
            cycle.check()
    current = Lease(Location.of(tmp_path), seconds=60)
    current.acquire()
    assert current.generation == stale.generation + 4
    held = (tmp_path / LOCK_NAME / f"{current.generation:012d}.json").read_text()
    stale.renew()  # woken: sees generation 5 is not its 1, writes nothing
    with pytest.raises(OutputBusy, match="another run took it over"):
        stale.check()
    assert (tmp_path / LOCK_NAME / f"{current.generation:012d}.json").read_text() == held
    # a token that is not ours, under our own number, is refused too
    forged = Lease(Location.of(tmp_path), seconds=60)
    forged.generation, forged.valid_until = current.generation, time.monotonic() + 60
    with pytest.raises(OutputBusy, match="no longer this run's"):
        forged.check()
    current.check()
    current.release()
    assert json.loads(held)["token"] == current.token


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
    from curate_pipeline.run.orchestrate import run

    out = tmp_path / "out"
    out.mkdir()
    # refused by the checks before anything starts (ConfigError), or by the lock itself
    # when the other run took it after the checks (OutputBusy)
    with hold(out), pytest.raises((ConfigError, OutputBusy), match="choose another folder"):
        run(cfg, [str(sample_warc)], out, spark)
    # nothing was written (the holder's lock is released: its generation stays)
    assert [p.name for p in out.iterdir()] == [LOCK_NAME] and _released(out)


def test_a_second_cli_run_into_a_locked_output_is_refused_at_once(sample_warc, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "out"
    out.mkdir()
    with hold(out):
        r = subprocess.run(
            [sys.executable, "-m", "curate_pipeline.cli", "run", "--input", str(sample_warc),
             "--output", str(out)], capture_output=True, text=True,
            cwd=Path(__file__).resolve().parents[1],
        )  # fmt: skip
    assert r.returncode == 2
    assert "another curate run" in r.stderr and "--verbose" not in r.stderr
    # refused by the checks before Spark starts (it took 16.8 s when only the run's own lock
    # refused it): no Spark log line, no run log line
    assert "input file(s)" not in r.stderr and "Spark" not in r.stderr


@pytest.mark.spark
@pytest.mark.parametrize("frozen", ["near_dedup", "documents"])
def test_a_driver_paused_past_its_lease_writes_nothing_when_woken(spark, tmp_path, frozen):
    """Run A is frozen (SIGSTOP) as its near-dedup stage starts, or while its documents pass
    writes a chunk, past its lease; run B takes the lock over and finishes (B's chunk write
    goes to a folder of its own: A's task files never join it); A, woken (SIGCONT), stops
    with one line saying it lost its lock and exits non-zero: the published versions (data/,
    rejected/, shards/, tokens/, manifest, budget), their commits, the card and every stage
    marker are B's, byte for byte, and equal a clean run's."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import yaml
    from run_outputs import run_outputs

    from curate_pipeline.config import load_config
    from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc
    from curate_pipeline.run.orchestrate import run

    root = Path(__file__).resolve().parents[1]
    warcs = []
    for i in range(2):
        warcs.append(tmp_path / f"in-{i}.warc.gz")
        write_pages_warc(warcs[-1], with_duplicates(synthetic_pages(60, seed=40 + i)))
    c = load_config(root / "conf" / "default.yaml")
    c.output.lock_lease_seconds = 10
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(c.model_dump(mode="json")))
    out = tmp_path / "out"

    def start(log: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "curate_pipeline.cli", "run", "--config", str(config), "--input",
             *map(str, warcs), "--output", str(out)], cwd=root, start_new_session=True,
            stdout=open(tmp_path / f"{log}.out", "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
        )  # fmt: skip

    a = start("a")

    def at_the_point() -> bool:
        if frozen == "near_dedup":
            return (out / "_stages" / "exact_dedup" / "_STAGE.json").exists()
        return any((out / "_stages" / "documents").glob("chunk-*/w-*/_temporary"))

    deadline = time.monotonic() + 400
    while not at_the_point() and a.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert a.poll() is None, (tmp_path / "a.out").read_text()[-3000:]
    os.killpg(a.pid, signal.SIGSTOP)  # the driver and its JVM, as a VM pause would
    try:
        time.sleep(c.output.lock_lease_seconds + 2)
        b = start("b")
        assert b.wait(timeout=600) == 0, (tmp_path / "b.out").read_text()[-3000:]
        published = ("versions", "_versions")  # every version's files and commits
        markers = ("README.md", "_STAGE.json")
        kept = {
            str(p.relative_to(out)): p.read_bytes()
            for p in sorted(out.rglob("*"))
            if p.is_file() and (p.name in markers or p.parts[len(out.parts)] in published)
        }
    finally:
        os.killpg(a.pid, signal.SIGCONT)
    assert a.wait(timeout=300) != 0
    said = (tmp_path / "a.out").read_text()
    assert "lost its lock" in said and "Traceback" not in said, said[-3000:]
    after = {k: (out / k).read_bytes() for k in kept if (out / k).is_file()}
    assert after == kept  # every file B published, untouched by A
    clean = tmp_path / "clean"  # the same config, run here on the tests' session
    run(c, list(map(str, warcs)), clean, spark)
    assert run_outputs(out) == run_outputs(clean)


def test_an_output_that_cannot_be_locked_is_refused_unless_single_writer():
    """A scheme with no atomic create anywhere (ftp://) is refused before Spark starts,
    naming the flag; gs://, hdfs://, abfs:// wait for Spark (their connector can lock)."""
    from pathlib import Path

    from curate_pipeline.config import load_config
    from curate_pipeline.run.preflight import check_lockable

    cfg = load_config(Path(__file__).resolve().parents[1] / "conf" / "default.yaml")
    with pytest.raises(ConfigError, match=r"no atomic create.*output.single_writer: true"):
        check_lockable(cfg, "ftp://host/run")
    for out in ("gs://bucket/run", "hdfs://nn:8020/run", "abfs://c@a.dfs.core.windows.net/r",
                "s3://bucket/run", "/tmp/run"):  # fmt: skip
        check_lockable(cfg, out)
    cfg.output.single_writer = True
    check_lockable(cfg, "ftp://host/run")


@pytest.mark.spark
def test_a_store_without_a_connector_here_is_refused_once_spark_runs(spark, cfg, s3_here):
    """gs:// on a cluster without the GCS connector (this one): refused with the flag named;
    with output.single_writer the run goes on unlocked."""
    from curate_pipeline.run.orchestrate import lock_files_for

    out = Location.of("gs://bucket/run")
    with pytest.raises(ConfigError, match=r"no Hadoop connector.*output.single_writer: true"):
        lock_files_for(spark, cfg, out)
    c = cfg.model_copy(deep=True)
    c.output.single_writer = True
    assert lock_files_for(spark, c, out) is None
    s3_here.create_bucket(Bucket="lockable")  # a store that refuses a second create
    assert lock_files_for(spark, cfg, Location.of("s3://lockable/run")) is None  # pyarrow's


@pytest.mark.spark
def test_the_lock_through_hadoops_filesystem_api(spark, tmp_path):
    """The lock's files through the driver JVM's Hadoop FileSystem (what gs://, hdfs://,
    abfs:// use): create without overwrite refuses an existing file; a second holder is
    refused, the holder checks, renews and releases; a newer generation fences the old."""
    from curate_pipeline.engine.storage import HadoopLockFiles

    files = HadoopLockFiles(spark)
    out = Location.of(tmp_path / "out")
    f = out / "x.json"
    assert files.create(f, b"one") and not files.create(f, b"two")
    assert files.read(f) == b"one" and files.names(out) == ["x.json"]
    with pytest.raises(FileNotFoundError):
        files.read(out / "missing.json")
    with hold(out / "run", 30, files) as first:
        with pytest.raises(OutputBusy, match="another curate run"):
            with hold(out / "run", 30, files):
                pass
        first.check()
        first.renew()
        first.check()
    with hold(out / "run", 30, files) as second:
        assert second.generation == first.generation + 1  # never reused
        stale = Lease(out / "run", 30, files)
        stale.generation, stale.token = first.generation, first.token
        stale.valid_until = time.monotonic() + 30
        with pytest.raises(OutputBusy, match="another run took it over"):
            stale.check()
