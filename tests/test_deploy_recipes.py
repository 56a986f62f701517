"""deploy/'s recipes, the files users copy (issue 50 item 4), checked as far as this machine
allows (no EMR, Dataproc, Databricks or Kubernetes here): each parses; ships the archive
`curate pack` writes with the confs the job needs; its job arguments parse as `curate run`'s;
its config loads, with models on the platform's store; its executors get the Python memory
the work needs; and the capacity it states sizes the work (engine/capacity.py)."""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from pathlib import Path

import yaml

from pipeline.cli import _parser
from pipeline.config import load_config
from pipeline.engine.capacity import plan_capacity

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
PYTHON_GB_PER_CORE = 1.5  # docs/running.md: executors (~550 MiB measured per worker, x headroom)


def _gb(text: str) -> float:
    text = str(text).lower().strip()
    unit = {"g": 1, "m": 1 / 1024, "k": 1 / 2**20}[text[-1]]
    return float(text[:-1]) * unit


def _job_args(args: list[str]) -> object:
    """The job's own arguments, parsed as `curate run`'s (jobs/curate.py prepends "run")."""
    return _parser().parse_args(["run", *args])


def _confs(args: list[str]) -> dict[str, str]:
    out = {}
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "--conf":
            k, v = value.split("=", 1)
            out[k] = v
    return out


def _check_shipping(archive: str, confs: dict[str, str]) -> None:
    assert archive.endswith("curate-env.tar.gz#env"), archive  # what `make pack` writes
    assert confs["spark.pyspark.python"] == "./env/bin/python"
    assert confs["spark.pyspark.driver.python"] == "./env/bin/python"  # cluster deploy mode


def _check_executors(confs: dict[str, str]) -> None:
    cores = int(confs.get("spark.executor.cores", "1"))
    assert _gb(confs["spark.executor.memoryOverhead"]) >= PYTHON_GB_PER_CORE * cores


def test_emr_step_ships_the_archive_and_sizes_for_max_executors():
    steps = json.loads((DEPLOY / "emr" / "steps.json").read_text())
    (step,) = steps
    assert step["Type"] == "Spark"
    args = step["Args"]
    assert args[args.index("--deploy-mode") + 1] == "cluster"
    confs = _confs(args)
    _check_shipping(args[args.index("--archives") + 1], confs)
    _check_executors(confs)
    script = next(a for a in args if a.endswith(".py"))
    assert script.startswith("s3://") and Path(script).name == "curate.py"
    assert (ROOT / "jobs" / "curate.py").is_file()
    job = _job_args(args[args.index(script) + 1 :])
    shipped = args[args.index("--files") + 1]
    assert Path(shipped).name == job.config  # the config travels with --files
    assert job.output.startswith("s3://") and job.input[0].endswith("warc.paths.gz")
    cfg = load_config(DEPLOY / "emr" / "curate.yaml")
    assert cfg.langid.model.startswith("s3://")
    # what EMR's defaults (dynamic allocation on) plus the step's confs give the run on a
    # cluster whose YARN reports 2,000 vcores: the ceiling of 400 x 4 bounds it
    cap = plan_capacity({"spark.dynamicAllocation.enabled": "true", **confs}, "yarn", 2,
                        cluster_cores=2000, cluster_source="YARN")  # fmt: skip
    assert cap.cores == 1600
    bootstrap = DEPLOY / "emr" / "bootstrap-python311.sh"
    assert subprocess.run(["bash", "-n", str(bootstrap)]).returncode == 0
    assert "python3.11" in bootstrap.read_text()


def test_dataproc_submit_ships_the_archive_in_cluster_mode():
    script = DEPLOY / "dataproc" / "submit.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    command = text[text.index("gcloud dataproc jobs submit pyspark") :].replace("\\\n", " ")
    words = shlex.split(command)
    assert words[:4] == ["gcloud", "dataproc", "jobs", "submit"] and words[4] == "pyspark"
    assert words[5].startswith("gs://") and Path(words[5]).name == "curate.py"
    flags = dict(w.split("=", 1) for w in words[6 : words.index("--")] if "=" in w)
    props = flags["--properties"]
    assert props.startswith("^#^")  # gcloud's custom delimiter: values may hold commas
    confs = dict(p.split("=", 1) for p in props[3:].split("#"))
    assert confs["spark.submit.deployMode"] == "cluster"
    _check_shipping(flags["--archives"], confs)
    _check_executors(confs)
    job = _job_args(words[words.index("--") + 1 :])
    assert Path(flags["--files"]).name == job.config
    assert job.output.startswith("gs://")
    dp = load_config(DEPLOY / "dataproc" / "curate.yaml")
    assert dp.langid.model.startswith("gs://")
    assert not dp.output.single_writer  # gs:// is locked through Dataproc's GCS connector
    assert "--python-prefix /opt/conda/default" in text  # the nodes' Python, not ours


def test_databricks_job_runs_the_wheel_on_a_spark_4_runtime():
    job = json.loads((DEPLOY / "databricks" / "job.json").read_text())
    (task,) = job["tasks"]
    runtime = task["new_cluster"]["spark_version"]
    assert int(runtime.split(".")[0]) >= 17  # Databricks Runtime 17.x: Spark 4.0
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wheel = f"curate_pipeline-{project['version']}-py3-none-any.whl"
    assert [Path(lib["whl"]).name for lib in task["libraries"]] == [wheel]
    py = task["spark_python_task"]
    assert Path(py["python_file"]).name == "curate.py"
    args = _job_args(py["parameters"])
    assert Path(args.config).name == "curate.yaml"
    cfg = load_config(DEPLOY / "databricks" / "curate.yaml")
    assert cfg.chunks.cores == 800  # autoscaling states no maxExecutors: the config does
    assert plan_capacity(task["new_cluster"]["spark_conf"], "spark://driver:7077", 8,
                         cfg.chunks.cores).cores == 800  # fmt: skip
    _check_executors({"spark.executor.cores": "4", **task["new_cluster"]["spark_conf"]})


def test_kubernetes_application_runs_the_image_with_python_memory_and_an_account():
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "spark-application.yaml").read_text()))
    app = next(d for d in docs if d["kind"] == "SparkApplication")
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    spec = app["spec"]
    assert spec["type"] == "Python" and spec["mode"] == "cluster"
    accounts = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    assert spec["driver"]["serviceAccount"] in accounts
    bound = [d for d in docs if d["kind"] == "RoleBinding"]
    assert any(s["name"] == spec["driver"]["serviceAccount"] for b in bound for s in b["subjects"])
    ex = spec["executor"]
    _check_executors({"spark.executor.cores": str(ex["cores"]),
                      "spark.executor.memoryOverhead": ex["memoryOverhead"]})  # fmt: skip
    # the image (docker/Dockerfile) holds the job and the config at the paths named
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "WORKDIR /opt/curate" in dockerfile and "COPY jobs ./jobs" in dockerfile
    assert spec["mainApplicationFile"] == "local:///opt/curate/jobs/curate.py"
    args = _job_args(spec["arguments"])
    assert args.config.startswith("/opt/curate/") and "COPY conf ./conf" in dockerfile
    load_config(ROOT / args.config[len("/opt/curate/") :])
    lock = {line.split("==")[0].lower(): line.split("==")[1].strip()
            for line in (ROOT / "requirements.lock").read_text().splitlines()
            if "==" in line}  # fmt: skip
    assert spec["sparkVersion"] == lock["pyspark"]  # the image installs the lock's pyspark
    conf = spec["sparkConf"]  # static allocation (no resource manager to ask on Kubernetes):
    assert conf["spark.dynamicAllocation.enabled"] == "false"  # the operator's instances
    static = {**conf, "spark.executor.cores": str(ex["cores"]),
              "spark.executor.instances": str(ex["instances"])}  # fmt: skip
    cap = plan_capacity(static, "k8s://x", 2)
    assert cap.cores == ex["instances"] * ex["cores"]


def test_the_image_and_the_archive_install_what_the_s3_lock_imports():
    """The image installs the package's run dependencies (`pip install -c requirements.lock
    .`): boto3, which the S3 lock imports, is one of them, not a test extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip().lower()
             for d in project["dependencies"]}  # fmt: skip
    assert "boto3" in names
    assert "-c requirements.lock '.[spark]'" in (ROOT / "docker" / "Dockerfile").read_text()
    import ast

    tree = ast.parse((ROOT / "pipeline" / "location.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "boto3" in imported  # the lock's conditional create
