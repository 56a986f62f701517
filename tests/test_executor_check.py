"""The executor check's parts without Spark: what a probe finds in a Python (this one), the
line a task failure becomes (Spark 3.5's and 4.x's texts, as they print them), and the glibc
an archive's wheels need. On a real cluster: tests/test_cluster.py (a wrong Python, missing
store credentials) and tests/test_slurm.py (passing)."""

from __future__ import annotations

import json
import platform
import sys

from curate_pipeline.engine.executor_check import PACK_INFO, Wanted, _from_failure, probe
from curate_pipeline.run.pack import glibc_needed

MINE = "{}.{}".format(*sys.version_info[:2])


def _probe(**kw) -> dict:
    return probe(json.dumps(Wanted(python=MINE, **kw).__dict__))


def test_a_probe_of_what_is_here_finds_nothing_wrong(tmp_path):
    from importlib import metadata

    r = _probe(dists={"pyarrow": metadata.version("pyarrow")},
               locations=[("output", str(tmp_path))])  # fmt: skip
    assert r["problems"] == [] and r["warnings"] == [] and r["python"] == MINE


def test_a_probe_names_missing_and_other_versions_and_unseen_paths(tmp_path):
    r = _probe(dists={"no-such-dist-xyz": "1.0", "pyarrow": "0.0.1"},
               locations=[("input", str(tmp_path / "gone.warc.gz"))])  # fmt: skip
    assert "no-such-dist-xyz is not installed (the driver has 1.0)" in r["problems"]
    assert any(w.startswith("pyarrow ") and "(the driver has 0.0.1)" in w for w in r["warnings"])
    assert any("gone.warc.gz does not exist there" in p and "every node" in p
               for p in r["problems"])  # fmt: skip


def test_an_archive_for_another_cpu_or_a_newer_glibc_is_named(tmp_path, monkeypatch):
    env = tmp_path / "env"
    env.mkdir()
    (env / PACK_INFO).write_text(json.dumps({"machine": "riscv64", "glibc_min": [9, 99]}))
    monkeypatch.setattr(sys, "prefix", str(env))
    problems = _probe()["problems"]
    assert any(f"packed for riscv64, this node is {platform.machine()}" in p for p in problems)
    assert any("need glibc 9.99" in p for p in problems)


SPARK35 = """An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 0.0 failed 4 times, most recent failure: Lost task 1.3 in stage 0.0 (TID 7) (10.0.3.17 executor 2): org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/mnt/yarn/usercache/hadoop/appcache/pyspark.zip/pyspark/worker.py", line 1100, in main
    raise PySparkRuntimeError(
pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker has different version (3, 9) than that in driver 3.11, PySpark cannot run with different minor versions.
"""  # noqa: E501 (Spark's text as it prints it)
SPARK4 = """An exception was thrown from the Python worker:
pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.10 than that in driver: 3.11, PySpark cannot run with different minor versions.
"""  # noqa: E501


def test_a_python_mismatch_becomes_one_line_naming_the_executor():
    line = _from_failure(SPARK35)
    assert line.startswith("executor 2 on 10.0.3.17: Python 3.9 where the driver runs 3.11")
    assert "spark.pyspark.python" in line
    line = _from_failure(SPARK4, ["10.0.3.17", "10.0.3.18"])
    assert line.startswith("executors on 10.0.3.17, 10.0.3.18: Python 3.10 where the driver")


def test_a_package_missing_on_executors_becomes_one_line():
    text = "ModuleNotFoundError: No module named 'curate_pipeline'\n"
    line = _from_failure(text, ["h1"])
    assert line.startswith(
        "executors on h1: ModuleNotFoundError: No module named 'curate_pipeline'"
    )
    assert "curate pack" in line
    assert _from_failure("java.lang.OutOfMemoryError: Java heap space") is None


def test_the_glibc_an_archive_needs_is_its_newest_wheels_oldest_tag(tmp_path):
    def wheel(name: str, *tags: str) -> None:
        d = tmp_path / f"{name}-1.0.dist-info"
        d.mkdir()
        (d / "WHEEL").write_text("Wheel-Version: 1.0\n" + "".join(f"Tag: {t}\n" for t in tags))

    wheel("pure", "py3-none-any")
    wheel("old", "cp311-cp311-manylinux2014_x86_64")
    assert glibc_needed(tmp_path) == (2, 17)
    wheel("both", "cp311-cp311-manylinux_2_28_x86_64.manylinux_2_31_x86_64")  # either serves
    assert glibc_needed(tmp_path) == (2, 28)
    wheel("musl", "cp311-cp311-musllinux_1_2_x86_64")
    assert glibc_needed(tmp_path) == (2, 28)


def test_the_store_check_waits_out_a_throttle_but_not_missing_credentials(monkeypatch):
    """A store answering SlowDown is asked again (no finding); one refusing the executor's
    credentials is a finding at once."""
    from pyarrow import fs as pafs

    from curate_pipeline.engine import executor_check

    calls = []

    class Store:
        def get_file_info(self, inner):
            return pafs.FileInfo(inner, pafs.FileType.File)

    def from_uri(uri):
        calls.append(uri)
        if len(calls) == 1:
            raise OSError("AWS Error SLOW_DOWN during HeadObject operation: Please reduce your "
                          "request rate.")  # fmt: skip
        if "denied" in uri:
            raise OSError("AWS Error ACCESS_DENIED during HeadObject operation")
        return Store(), uri.split("://", 1)[1]

    monkeypatch.setattr(executor_check, "_open", from_uri)
    monkeypatch.setattr("time.sleep", lambda s: None)
    assert executor_check._check_location("input", "s3://crawl/a.warc.gz") is None
    assert len(calls) == 2
    problem = executor_check._check_location("input", "s3://denied/a.warc.gz")
    assert "cannot be reached with this executor's credentials" in problem and len(calls) == 3
