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

from curate_pipeline.cli import _parser
from curate_pipeline.config import load_config
from curate_pipeline.engine.capacity import plan_capacity

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
PYTHON_GB_PER_CORE = 1.5  # docs/running.md: executors (~550 MiB measured per worker, x headroom)
# The platforms' documented names, checked against these rather than against the recipes:
# YARN's capacity scheduler (Hadoop docs: "yarn.scheduler.capacity.resource-calculator",
# DefaultResourceCalculator uses only memory), EMR's configuration classifications, the
# Databricks Jobs API's access modes (Clusters API `data_security_mode`: SINGLE_USER is
# dedicated; USER_ISOLATION, standard, forbids RDDs and SparkContext) and runtime versions
# (the LTS runtimes 15.4, 16.4, 17.3: Spark 3.5.0, 3.5.2, 4.0.0), Dataproc image versions
DOMINANT = "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"
EMR_CLASSIFICATIONS = {"capacity-scheduler", "spark-defaults", "yarn-site", "spark-env"}
DATABRICKS_DEDICATED = {"SINGLE_USER", "DATA_SECURITY_MODE_DEDICATED"}
DATABRICKS_LTS = {"15.4", "16.4", "17.3"}
SNAPSHOT_FILES, FILE_BYTES = 90_000, 1_100_000_000  # a Common Crawl snapshot


def _driver_needs_gb() -> float:
    """The driver's memory for a snapshot, as `curate plan` estimates it (run/plan.py)."""
    from curate_pipeline.config import Config
    from curate_pipeline.run.plan import make_plan

    files = [f"s3://commoncrawl/crawl-data/CC/{i:05d}.warc.gz" for i in range(SNAPSHOT_FILES)]
    return make_plan(Config(), files, 1600, FILE_BYTES)["driver_memory_bytes"] / 2**30


def _check_driver(confs: dict[str, str]) -> None:
    """In cluster deploy mode the Python driver lives in the container's overhead: it must
    hold the plan's estimate; the JVM heap the task and file metadata."""
    need = _driver_needs_gb()
    assert 1.5 < need < 4, need  # the plan's own figure (~2.1 GB)
    assert _gb(confs["spark.driver.memoryOverhead"]) >= need
    assert _gb(confs["spark.driver.memory"]) >= 2


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
    _check_driver(confs)
    made = json.loads((DEPLOY / "emr" / "configurations.json").read_text())
    assert {c["Classification"] for c in made} <= EMR_CLASSIFICATIONS
    props = {c["Classification"]: c["Properties"] for c in made}
    assert props["capacity-scheduler"]["yarn.scheduler.capacity.resource-calculator"] == DOMINANT
    assert props["spark-defaults"]["spark.eventLog.enabled"] == "true"
    bootstrap = DEPLOY / "emr" / "bootstrap-python311.sh"
    assert subprocess.run(["bash", "-n", str(bootstrap)]).returncode == 0
    assert "python3.11" in bootstrap.read_text()


def _gcloud(script: Path, command: str) -> tuple[str, list[str], dict, dict]:
    """A gcloud script's text, its command's words, flags and Spark properties."""
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    words = shlex.split(text[text.index(command) :].replace("\\\n", " "))
    assert words[:5] == command.split()
    assert words[5].startswith("gs://") and Path(words[5]).name == "curate.py"
    flags = dict(w.split("=", 1) for w in words[6 : words.index("--")] if "=" in w)
    props = flags["--properties"]
    assert props.startswith("^#^")  # gcloud's custom delimiter: values may hold commas
    return text, words, flags, dict(p.split("=", 1) for p in props[3:].split("#"))


def test_dataproc_submit_ships_the_archive_in_cluster_mode():
    text, words, flags, confs = _gcloud(DEPLOY / "dataproc" / "submit.sh",
                                        "gcloud dataproc jobs submit pyspark")  # fmt: skip
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
    _check_driver(confs)
    assert f"yarn.scheduler.capacity.resource-calculator={DOMINANT}" in text
    assert "--image-version=2.2" in text or "--image-version=2.3" in text


def test_dataproc_serverless_batch_carries_its_python_and_states_its_cores():
    text, words, flags, confs = _gcloud(DEPLOY / "dataproc" / "serverless.sh",
                                        "gcloud dataproc batches submit pyspark")  # fmt: skip
    assert flags["--version"] in ("2.2", "2.3")  # Serverless runtimes of Spark 3.5
    assert confs["spark.pyspark.python"] == "./env/bin/python"
    assert int(confs["spark.executor.cores"]) in (4, 8, 16)  # Serverless' allowed values
    _check_executors(confs)
    assert "conda-pack" in text  # runtime 2.2's Python is 3.12: the archive carries one
    job = _job_args(words[words.index("--") + 1 :])
    cfg = load_config(DEPLOY / "dataproc" / job.config)
    most = int(confs["spark.dynamicAllocation.maxExecutors"]) * int(confs["spark.executor.cores"])
    assert cfg.chunks.cores == most  # no resource manager to ask: the config states it
    assert plan_capacity({**confs, "spark.dynamicAllocation.enabled": "true"}, "yarn", 2,
                         cfg.chunks.cores).cores == most  # fmt: skip


def test_databricks_job_runs_the_wheel_entry_point_in_dedicated_mode():
    job = json.loads((DEPLOY / "databricks" / "job.json").read_text())
    (task,) = job["tasks"]
    cluster = task["new_cluster"]
    runtime = cluster["spark_version"]
    assert ".".join(runtime.split(".")[:2]) in DATABRICKS_LTS and runtime.endswith(
        ("-scala2.12", "-scala2.13"))  # fmt: skip
    # dedicated access mode (the job makes SparkContext and RDD calls), an instance profile
    # for the S3 credentials of pyarrow and boto3 on every node
    assert cluster["data_security_mode"] in DATABRICKS_DEDICATED and cluster["single_user_name"]
    assert cluster["aws_attributes"]["instance_profile_arn"].startswith("arn:aws:iam::")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wheel = f"curate_pipeline-{project['version']}-py3-none-any.whl"
    assert [Path(lib["whl"]).name for lib in task["libraries"]] == [wheel]
    # the wheel's own entry point (python_wheel_task: package_name, entry_point, parameters)
    wt = task["python_wheel_task"]
    assert set(wt) <= {"package_name", "entry_point", "parameters", "named_parameters"}
    assert wt["package_name"].replace("_", "-") == project["name"]
    assert wt["entry_point"] in project["scripts"]
    assert wt["parameters"][0] == "run"
    args = _parser().parse_args(wt["parameters"])
    assert Path(args.config).name == "curate.yaml"
    # the runtime keeps its pyspark: the wheel asks for it only through the `spark` extra
    assert not any(d.startswith("pyspark") for d in project["dependencies"])
    cfg = load_config(DEPLOY / "databricks" / "curate.yaml")
    assert cfg.langid.model.startswith("s3://")  # a cloud URI, not a /Volumes FUSE path
    assert cfg.chunks.cores == 800  # autoscaling states no maxExecutors: the config does
    assert plan_capacity(cluster["spark_conf"], "spark://driver:7077", 8,
                         cfg.chunks.cores).cores == 800  # fmt: skip
    _check_executors({"spark.executor.cores": "4", **cluster["spark_conf"]})


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
    # production settings: the built-in defaults (local mode's never reach a cluster), the
    # event log on a volume the driver mounts, the driver sized by the plan, both roles on the
    # service account whose IAM role (EKS IRSA) gives the store's credentials
    assert args.config == "/opt/curate/conf/default.yaml"
    assert conf["spark.eventLog.enabled"] == "true"
    vol = conf["spark.eventLog.dir"].removeprefix("file://")
    assert any(m["mountPath"] == vol for m in spec["driver"]["volumeMounts"])
    _check_driver({"spark.driver.memory": spec["driver"]["memory"],
                   "spark.driver.memoryOverhead": spec["driver"]["memoryOverhead"]})  # fmt: skip
    assert ex["serviceAccount"] == spec["driver"]["serviceAccount"]
    account = next(d for d in docs if d["kind"] == "ServiceAccount")
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith(
        "arn:aws:iam::")  # fmt: skip


def test_the_image_and_the_archive_install_what_the_s3_lock_imports():
    """The image installs the package's run dependencies (`pip install -c requirements.lock
    .`): boto3, which the S3 lock imports, is one of them, not a test extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip().lower()
             for d in project["dependencies"]}  # fmt: skip
    assert "boto3" in names
    image = (ROOT / "docker" / "Dockerfile").read_text()
    assert "-c requirements.lock '.[spark,multilingual]'" in image
    import ast

    tree = ast.parse((ROOT / "curate_pipeline" / "location.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "boto3" in imported  # the lock's conditional create
