"""Environment failures fail the run in one line naming the cause, the location and the fix,
with no Java stack (issue 51 item 9): a full disk (a small tmpfs) and a read-only one. A rerun
after the fix equals a clean run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_outputs import run_outputs

from curate_pipeline.run.failures import environment_failure

ROOT = Path(__file__).resolve().parents[1]


def test_causes_are_named_from_spark_and_python_texts():
    java = ("An error occurred while calling o96.parquet.\n: org.apache.spark.SparkException: "
            "Job aborted.\n\tat org.apache...\nCaused by: java.io.IOException: No space left "
            "on device\n\tat java.io.FileOutputStream.writeBytes")  # fmt: skip
    line = environment_failure(java, "/data/out")
    assert line.startswith("a disk is full (") and "the output is /data/out" in line
    assert "free space" in line and "o96" not in line
    python = "OSError: [Errno 122] Disk quota exceeded: '/home/u/out/_stages/x.parquet'"
    assert "quota" in environment_failure(python, "/home/u/out")
    s3 = "OSError: When creating key 'x' in bucket 'b': AWS Error NO_SUCH_BUCKET ... NoSuchBucket"
    assert "the bucket does not exist" in environment_failure(s3, "s3://b/out")
    assert "permission denied" in environment_failure("AWS Error ACCESS_DENIED AccessDenied", "x")
    assert environment_failure("ValueError: a bug of ours", "x") is None


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)


@pytest.mark.spark
def test_a_full_disk_and_a_read_only_one_are_one_line_and_a_rerun_after_the_fix_is_clean(
    spark, tmp_path
):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs needs root")
    from curate_pipeline.config import load_config
    from curate_pipeline.examples.corpus import synthetic_pages, write_pages_warc
    from curate_pipeline.run.orchestrate import run

    warc = tmp_path / "in.warc.gz"
    write_pages_warc(warc, synthetic_pages(300, seed=7))
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "256k")
    out = disk / "out"
    cmd = [
        sys.executable,
        "-m",
        "curate_pipeline.cli",
        "run",
        "--input",
        str(warc),
        "--output",
        str(out),
    ]
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 1, r.stderr[-3000:]
        last = [ln for ln in r.stderr.splitlines() if ln.startswith("curate: ")][-1]
        assert last.startswith("curate: run failed: a disk is full ("), last
        assert f"the output is {out}" in last
        assert "Traceback" not in r.stderr and "An error occurred while calling" not in r.stderr
        assert not (out / "_versions").exists()  # nothing published
        # the fix: room on that disk; the rerun resumes and equals a clean run
        subprocess.run(["mount", "-o", "remount,size=200m", str(disk)], check=True)
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        clean = tmp_path / "clean"  # the CLI's default config, run on the tests' session
        run(load_config(ROOT / "conf" / "default.yaml"), [str(warc)], clean, spark)
        assert run_outputs(out) == run_outputs(clean)
        # a read-only disk
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        r = subprocess.run([*cmd[:-1], str(disk / "other")], cwd=ROOT, capture_output=True,
                           text=True, timeout=600)  # fmt: skip
        assert r.returncode != 0
        said = [ln for ln in r.stderr.splitlines() if ln.startswith("curate: ")]
        assert said and "read-only" in said[-1] and "Traceback" not in r.stderr, r.stderr[-2000:]
    finally:
        subprocess.run(["umount", "-l", str(disk)])
