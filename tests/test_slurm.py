"""deploy/slurm/curate.sbatch on a real Slurm (Debian's slurm-wlm and munge: a controller and
two 1-CPU nodes on this machine, tests/slurm_cluster.py): the job's output equals a local
run's, the run sizes itself from the standalone master's cores, and scancel stops the driver,
the workers and the master. `make test-versions` runs it (.ci/run installs Slurm)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_outputs import full_outputs
from slurm_cluster import missing, slurm

pytestmark = [pytest.mark.spark, pytest.mark.slurm]
ROOT = Path(__file__).resolve().parents[1]
SBATCH = ROOT / "deploy" / "slurm" / "curate.sbatch"

if missing():
    if os.environ.get("CI"):
        raise RuntimeError(f"Slurm test: {', '.join(missing())} missing (.ci/run installs them)")
    pytest.skip(f"no Slurm here ({', '.join(missing())}): apt-get install slurm-wlm munge",
                allow_module_level=True)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with slurm(tmp_path_factory.mktemp("slurm"), nodes=2, cpus=1) as env:
        yield env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _job_env(cluster: dict, scratch: Path) -> dict:
    return {
        **cluster,
        "CURATE_VENV": sys.prefix,
        "CURATE_SCRATCH": str(scratch),
        # the two "nodes" are this machine: everything on the loopback address
        "SPARK_MASTER_HOST": "127.0.0.1",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_PORT": str(_free_port()),
        "SPARK_MASTER_WEBUI_PORT": str(_free_port()),
        "SPARK_WORKER_MEMORY": "1g",
    }


def _sbatch(env: dict, log: Path, args: list[str], wait: bool) -> str:
    cmd = ["sbatch", "--parsable", "-N", "2", "-o", str(log), *(["--wait"] if wait else []),
           str(SBATCH), *args]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    text = log.read_text(errors="replace") if log.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n---- job log:\n" + text[-5000:]
    return proc.stdout.strip().split(";")[0]


def _queued(env: dict, job: str) -> bool:
    out = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True)
    return job in out.stdout


def _processes_of(env: dict) -> list[str]:
    """Every process the job started (driver, its JVM, master, workers, executors): their
    environment holds the job's own master port."""
    marker = f"SPARK_MASTER_PORT={env['SPARK_MASTER_PORT']}".encode()
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            try:
                if marker not in (p / "environ").read_bytes().split(b"\0"):
                    continue
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            found.append(f"{p.name}: {cmd[:200]}")
    return found


def test_sbatch_job_equals_a_local_run(cluster, spark, sample_warc, tmp_path):
    from curate_pipeline.config import load_config
    from curate_pipeline.run.orchestrate import run

    local = tmp_path / "local"
    run(load_config(ROOT / "conf" / "cluster.yaml"), [str(sample_warc)], local, spark)
    out, log = tmp_path / "slurm-out", tmp_path / "job.log"
    env = _job_env(cluster, tmp_path / "scratch")
    args = ["--config", str(ROOT / "conf" / "cluster.yaml"), "--input", str(sample_warc),
            "--output", str(out)]  # fmt: skip
    job = _sbatch(env, log, args, wait=True)
    text = log.read_text(errors="replace")
    assert f"job {job}, 2 node(s)" in text
    # sized from the master's cores: one per node, as Slurm gave them
    assert "sizing work for 2 cores" in text and "standalone master" in text, text[-4000:]
    assert full_outputs(out) == full_outputs(local)
    assert not _processes_of(env), "a process outlived the job"
    assert not (tmp_path / "scratch" / f"curate-slurm-{job}").exists()


def test_scancel_stops_driver_workers_and_master(cluster, tmp_path):
    from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc

    warc = tmp_path / "crawl.warc.gz"
    write_pages_warc(warc, with_duplicates(synthetic_pages(3000, seed=5), seed=5))
    out, log, scratch = tmp_path / "out", tmp_path / "job.log", tmp_path / "scratch"
    env = _job_env(cluster, scratch)
    args = ["--config", str(ROOT / "conf" / "cluster.yaml"), "--input", str(warc),
            "--output", str(out)]  # fmt: skip
    job = _sbatch(env, log, args, wait=False)
    deadline = time.monotonic() + 300
    # until executors run tasks: the driver, the master and both workers are up
    while "Running task" not in "".join(
        p.read_text(errors="replace") for p in scratch.glob("*/n*/work/app-*/*/stderr")
    ):  # fmt: skip
        assert _queued(env, job), "the job ended before it ran a task:\n" + log.read_text()
        assert time.monotonic() < deadline, "no task ran in 300 s:\n" + log.read_text()
        time.sleep(1)
    assert len(_processes_of(env)) >= 6  # driver, its JVM, master, 2 workers, executors
    subprocess.run(["scancel", job], env=env, check=True)
    deadline = time.monotonic() + 90
    while _queued(env, job) or _processes_of(env):
        assert time.monotonic() < deadline, "\n".join(_processes_of(env))
        time.sleep(1)
    assert not (out / "_versions").exists() or not any((out / "_versions").iterdir())
