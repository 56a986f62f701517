"""The same job on a real Spark standalone cluster (a master and two 1-core workers on this
machine), submitted with spark-submit, gives the same answer as local mode."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_outputs import full_outputs, published

from curate_pipeline.engine.cluster import cluster_down, cluster_up

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("cluster")
    try:
        info = cluster_up(run_dir, workers=2, cores=1, memory="1g")
        yield info
    finally:
        cluster_down(run_dir)  # stops exactly the pids it started, even if a test failed


SIZING = """
import sys
from pyspark.sql import SparkSession
from curate_pipeline.engine.capacity import capacity
master, ui = sys.argv[1], sys.argv[2]
for most, ask in ((None, ui), ("10000", ui), ("2147483647", ui), (None, "http://127.0.0.1:9")):
    b = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
         .config("spark.dynamicAllocation.enabled", "true")
         .config("spark.dynamicAllocation.shuffleTracking.enabled", "true")
         .config("spark.curate.masterUi", ask))
    if most:
        b = b.config("spark.dynamicAllocation.maxExecutors", most)
    spark = b.getOrCreate()
    try:
        print("SIZED", most, capacity(spark).cores, flush=True)
    except ValueError as e:
        print("REFUSED", most, str(e).splitlines()[0], flush=True)
    spark.stop()
"""


def test_dynamic_allocation_sizes_from_the_masters_cores_never_the_ceiling(cluster, tmp_path):
    """Issue 63: Spark started with dynamic allocation on and maxExecutors unset, 10000 or
    Int.MaxValue sizes for the cores the standalone master really has (2 workers of 1 core),
    read from its JSON; where the master cannot be read, the run refuses before any work."""
    script = tmp_path / "sizing.py"
    script.write_text(SIZING)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(script), cluster["master"], cluster["ui"]]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("SIZED", "REFUSED"))]
    assert proc.returncode == 0 and len(lines) == 4, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert lines[:3] == ["SIZED None 2", "SIZED 10000 2", "SIZED 2147483647 2"]
    assert lines[3].startswith("REFUSED None dynamic allocation is on")
    assert "chunks.cores" in lines[3]


def test_spark_submit_on_standalone_cluster_matches_local(cluster, spark, sample_warc, tmp_path):
    from curate_pipeline.run.orchestrate import run

    local = tmp_path / "local"
    run(_cluster_cfg(), [str(sample_warc)], local, spark)
    # the package goes to the executors as a zip; models travel with SparkFiles
    pyfiles = shutil.make_archive(str(tmp_path / "pipeline"), "zip", ROOT, "curate_pipeline")
    out = tmp_path / "cluster"
    cmd = _submit(cluster, pyfiles, [str(sample_warc)], out)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    quiet = "\n".join(line for line in proc.stderr.splitlines() if " INFO " not in line)
    assert proc.returncode == 0, proc.stdout[-3000:] + "\n----\n" + quiet[-6000:]
    manifest = json.loads((published(out) / "manifest.json").read_text())
    assert manifest["spark"]["master"] == cluster["master"]
    assert manifest["spark"]["shuffle_partitions"] == "7"
    said = proc.stdout + proc.stderr
    assert "executor check: 2 task(s) on 1 host(s)" in said  # passed: the run went on
    assert full_outputs(out) == full_outputs(local)


def _other_python() -> tuple[str, str] | None:
    """A Python of another minor version than this one (pyenv's, where the machine has it)."""
    import glob

    mine = "{}.{}".format(*sys.version_info[:2])
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1*/bin/python3.1*")))
    found += [p for p in (shutil.which(f"python3.{m}") for m in (12, 13, 10)) if p]
    for cand in found:
        try:
            code = "import sys; print('%d.%d' % sys.version_info[:2])"
            v = subprocess.run([cand, "-c", code], capture_output=True, text=True, timeout=30)
            v = v.stdout.strip()
        except OSError:
            continue
        if v and v != mine and not v.endswith("-config"):
            return cand, v
    return None


def _problems(stderr: str) -> list[str]:
    """The lines a refused executor check prints under its heading."""
    _, _, after = stderr.partition("curate: the executors cannot run this job")
    return [ln for ln in after.splitlines()[1:] if ln.startswith("  ")]


def _curate_on(cluster: dict, args: list[str], env: dict) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "curate_pipeline.cli", "run", "--master", cluster["master"],
           "--config", str(ROOT / "conf" / "cluster.yaml"), *args]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_executor_check_names_a_wrong_python(cluster, sample_warc, tmp_path):
    """Issue 63: an executor whose Python is another minor version than the driver's: the run
    stops before any chunk with one line naming the executor, both versions and the fix."""
    other = _other_python()
    if other is None:
        pytest.skip("no Python of another minor version on this machine")
    env = {**os.environ, "PYSPARK_PYTHON": other[0]}
    out = tmp_path / "out"
    r = _curate_on(cluster, ["--input", str(sample_warc), "--output", str(out)], env)
    lines = _problems(r.stderr)
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-3000:]
    mine = "{}.{}".format(*sys.version_info[:2])
    assert f"Python {other[1]} where the driver runs {mine}" in lines[0]
    assert lines[0].startswith("  executors on 1") and "spark.pyspark.python" in lines[0]
    assert not (out / "_stages" / "documents").exists() or not any(
        (out / "_stages" / "documents").rglob("*.parquet")
    )  # nothing ran


def test_executor_check_names_missing_store_credentials(cluster, s3, sample_warc, tmp_path):
    """Issue 63: the driver reaches the store (its AWS_* variables), the executors were given
    nothing: one line names the input, the executors and where their credentials go."""
    from s3_server import BUCKET

    client, s3_env, _ = s3
    client.upload_file(str(sample_warc), BUCKET, "check/sample.warc.gz")
    uri = f"s3://{BUCKET}/check/sample.warc.gz"
    env = {**os.environ, **s3_env, "PYSPARK_PYTHON": sys.executable}
    r = _curate_on(cluster, ["--input", uri, "--output", str(tmp_path / "out")], env)
    lines = _problems(r.stderr)
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-3000:]
    assert lines[0].startswith("  executors on ") and f"input {uri} cannot be reached" in lines[0]
    assert "spark.executorEnv.AWS_" in lines[0]


def _cluster_cfg():
    """The config the spark-submit side reads, for the local run it is compared with."""
    from curate_pipeline.config import load_config

    return load_config(ROOT / "conf" / "cluster.yaml")


def _submit(cluster: dict, pyfiles: str, inputs: list[str], out: Path) -> list[str]:
    return [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master", cluster["master"],
        "--py-files", pyfiles,
        "--conf", "spark.ui.enabled=false",
        # the driver JVM starts before the config is read: its JIT settings (conf/cluster.yaml)
        "--driver-java-options", _cluster_cfg().spark.conf["spark.driver.extraJavaOptions"],
        # the operator's settings win over the config's defaults (conf/cluster.yaml)
        "--conf", "spark.sql.shuffle.partitions=7",
        "--conf", "spark.sql.parquet.columnarReaderBatchSize=512",
        str(ROOT / "jobs" / "curate.py"),
        "--config", str(ROOT / "conf" / "cluster.yaml"),
        "--input", *inputs,
        "--output", str(out),
    ]  # fmt: skip


def _running_tasks(worker_dir: Path, old_apps: set[Path]) -> bool:
    """Has an executor of a new application under this worker started a task?"""
    return any("Running task" in p.read_text(errors="replace")
               for app in set(worker_dir.glob("app-*")) - old_apps
               for p in app.glob("*/stderr"))  # fmt: skip


# Last in the module: it leaves the cluster one worker short.
def test_job_survives_a_killed_worker(cluster, spark, tmp_path):
    from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc
    from curate_pipeline.run.orchestrate import run

    warc = tmp_path / "crawl.warc.gz"
    write_pages_warc(warc, with_duplicates(synthetic_pages(240, seed=11), seed=11))
    local = tmp_path / "local"
    run(_cluster_cfg(), [str(warc)], local, spark)
    pyfiles = shutil.make_archive(str(tmp_path / "pipeline"), "zip", ROOT, "curate_pipeline")
    out = tmp_path / "cluster"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    log = open(tmp_path / "driver.log", "wb")  # noqa: SIM115
    run_dir = Path(cluster["run_dir"])
    old_apps = set((run_dir / "worker-1").glob("app-*"))
    proc = subprocess.Popen(_submit(cluster, pyfiles, [str(warc)], out), cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    victim = cluster["pids"][2]  # the second worker's JVM (pids: master, worker 0, worker 1)
    deadline = time.monotonic() + 300
    while not _running_tasks(run_dir / "worker-1", old_apps) and time.monotonic() < deadline:
        assert proc.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        time.sleep(0.1)
    os.kill(victim, signal.SIGKILL)
    os.waitpid(victim, 0)  # cluster_up started it: it is this process's child
    assert proc.wait(timeout=900) == 0, (tmp_path / "driver.log").read_text()[-3000:]
    assert "lost" in (tmp_path / "driver.log").read_text().lower()  # Spark saw it go
    assert full_outputs(out) == full_outputs(local)
