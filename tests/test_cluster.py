"""The same job on a real Spark standalone cluster (a master and two 1-core workers on this
machine), submitted with spark-submit, gives the same answer as local mode."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.cluster import cluster_down, cluster_up

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


def _outputs(out: Path):
    data = sorted(
        (d["id"], d["text"], d["url"], d["source"], d["lang"])
        for d in pq.read_table(out / "data").to_pylist()
    )
    ledger = sorted(
        (r["doc_id"], r["stage"], r["reason"], r["detail"] or "")
        for r in pq.read_table(out / "rejected").to_pylist()
    )
    return data, ledger, json.loads((out / "manifest.json").read_text())["counts"]


def test_spark_submit_on_standalone_cluster_matches_local(
    cluster, spark, cfg, sample_warc, tmp_path
):
    from pipeline.run import run

    local = tmp_path / "local"
    run(cfg, [str(sample_warc)], local, spark)
    # the package goes to the executors as a zip; models travel with SparkFiles
    pyfiles = shutil.make_archive(str(tmp_path / "pipeline"), "zip", ROOT, "pipeline")
    out = tmp_path / "cluster"
    cmd = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master", cluster["master"],
        "--py-files", pyfiles,
        "--conf", "spark.ui.enabled=false",
        str(ROOT / "jobs" / "curate.py"),
        "--config", str(ROOT / "conf" / "cluster.yaml"),
        "--input", str(sample_warc),
        "--output", str(out),
    ]  # fmt: skip
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spark"]["master"] == cluster["master"]
    assert _outputs(out) == _outputs(local)
