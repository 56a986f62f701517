"""docs/running.md's cluster recipes, as far as this machine allows (no Docker engine, no YARN, no
Kubernetes): the image's entrypoint (docker/entrypoint.sh) composes the commands Spark on
Kubernetes expects of driver and executor pods, its driver role runs spark-submit for real,
and the executor backend class it names is in pyspark's jars."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "docker" / "entrypoint.sh"
SPARK_HOME = Path(pyspark.__file__).parent


def _entry(*args: str, dry: bool = True, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "SPARK_HOME": str(SPARK_HOME), **env,
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # fmt: skip
    if dry:
        full["CURATE_ENTRYPOINT_DRY_RUN"] = "1"
    return subprocess.run(["bash", str(ENTRY), *args], env=full, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_executor_role_is_spark_on_kubernetes_executor_backend():
    r = _entry("executor", SPARK_DRIVER_URL="spark://CoarseGrainedScheduler@driver-svc:7078",
               SPARK_EXECUTOR_ID="3", SPARK_APPLICATION_ID="spark-app-1",
               SPARK_EXECUTOR_MEMORY="2g", SPARK_EXECUTOR_CORES="2",
               SPARK_JAVA_OPT_1="-Dsecond", SPARK_JAVA_OPT_0="-Dfirst")  # fmt: skip
    assert r.returncode == 0, r.stderr
    cmd = r.stdout.splitlines()
    backend = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
    assert cmd[cmd.index(backend) + 1 :][:6] == [
        "--driver-url", "spark://CoarseGrainedScheduler@driver-svc:7078", "--executor-id", "3",
        "--cores", "2",
    ]  # fmt: skip
    assert cmd.index("-Dfirst") < cmd.index("-Dsecond") < cmd.index("-Xmx2g")
    assert cmd[cmd.index("-cp") + 1] == f"{SPARK_HOME}/jars/*"
    # the class is there to be started: pyspark ships the Kubernetes backend
    jars = sorted((SPARK_HOME / "jars").glob("spark-kubernetes_*.jar"))
    assert jars, "pyspark's jars have no spark-kubernetes jar"
    with zipfile.ZipFile(jars[0]) as z:
        assert backend.replace(".", "/") + ".class" in z.namelist()


def test_executor_role_refuses_to_start_without_the_drivers_settings():
    r = _entry("executor")
    assert r.returncode != 0 and "SPARK_DRIVER_URL" in r.stderr


def test_driver_role_runs_spark_submit_in_client_mode():
    r = _entry("driver", "--version", dry=False, SPARK_DRIVER_BIND_ADDRESS="127.0.0.1")
    assert r.returncode == 0, r.stderr
    assert pyspark.__version__ in r.stdout + r.stderr
    dry = _entry("driver", "local:///opt/curate/jobs/curate.py", "--output", "s3://b/run")
    cmd = dry.stdout.splitlines()
    assert cmd[0].endswith("bin/spark-submit") and "--deploy-mode" in cmd
    assert cmd[cmd.index("--deploy-mode") + 1] == "client"
    assert cmd[-3:] == ["local:///opt/curate/jobs/curate.py", "--output", "s3://b/run"]


def test_other_commands_run_as_given():
    r = _entry("python", "-c", "import curate_pipeline.location; print('ok')", dry=False)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_dockerfile_uses_the_entrypoint_and_installs_the_project():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["/opt/entrypoint.sh"]' in text
    assert "COPY docker/entrypoint.sh /opt/entrypoint.sh" in text
    assert "PYSPARK_PYTHON=python3" in text
    assert "-c requirements.lock '.[spark,multilingual]'" in text
