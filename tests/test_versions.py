"""The job on the Spark its users have (issue 50): pyspark 3.5 (EMR 7, Dataproc 2.x) and the
newest 4.x (this venv's, requirements.lock), on nodes that hold nothing of the project.

- Local mode on each version: the same kept ids and texts, ledger, shards and token files.
- A bare-node cluster on each version: master and workers started from a Spark installation of
  their own (the version's pyspark distribution copied out, as a platform installs Spark), in
  a mount namespace where the checkout, every venv, the system Python's site-packages, the
  real-data folder and /tmp are empty; the job submitted with `curate pack`'s archive
  (`--archives ...#env`, `spark.pyspark.python=./env/bin/python`) and inputs, models and
  outputs on a real S3 API (moto's server): it equals a local run.

`make test-versions` makes .venv-spark35 (pyspark 3.5.9) and runs this module; without that
venv the 3.5 cases skip, except on CI where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from run_outputs import published, run_outputs
from s3_server import OUT_BUCKET, _download, _same_files

pytestmark = [pytest.mark.spark, pytest.mark.versions]
ROOT = Path(__file__).resolve().parents[1]
SPARK35 = ROOT / ".venv-spark35"
SITE = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


def _venv(version: str) -> Path:
    """The Python of the venv that has this pyspark version."""
    if version == "4":
        return Path(sys.executable)
    python = SPARK35 / "bin" / "python"
    if not python.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{SPARK35} is missing: `make test-versions` makes it")
        pytest.skip(f"{SPARK35} is missing: `make test-versions` makes it")
    return python


def _pyspark_home(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import os, pyspark; print(os.path.dirname("
                          "pyspark.__file__)); print(pyspark.__version__)"],
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return Path(out[0])


@pytest.fixture(scope="module")
def versions_local(s3_inputs, tmp_path_factory):
    """The same three WARCs curated in local mode by each version, in its own process."""
    local_dir, _, c, _ = s3_inputs
    import yaml

    config = tmp_path_factory.mktemp("versions") / "local.yaml"
    config.write_text(yaml.safe_dump(c.model_dump(mode="json")))
    inputs = [str(local_dir / f"{n}.warc.gz") for n in ("a", "b", "c")]
    outs = {}
    for version in ("4", "3.5"):
        python = _venv(version)
        out = config.parent / f"local-{version}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
        cmd = [str(python), "-m", "curate_pipeline.cli", "run", "--config", str(config),
               "--input", *inputs, "--output", str(out)]  # fmt: skip
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout[-2000:] + "\n----\n" + r.stderr[-4000:]
        outs[version] = out
    return outs


def test_the_same_output_on_spark_35_and_4(versions_local):
    a, b = versions_local["4"], versions_local["3.5"]
    m4, m35 = (json.loads((published(d) / "manifest.json").read_text()) for d in (a, b))
    assert m4["spark"]["version"].startswith("4.") and m35["spark"]["version"].startswith("3.5.")
    assert m4["counts"] == m35["counts"]
    assert run_outputs(a) == run_outputs(b)  # kept ids and texts; the ledger row by row
    for sub in ("shards", "tokens"):  # byte for byte
        _same_files(a, b, sub)
    assert json.loads((published(a) / "budget.json").read_text()) == json.loads(
        (published(b) / "budget.json").read_text()
    )


def test_the_wheel_leaves_the_clusters_pyspark_alone(tmp_path):
    """Issue 63: the wheel asks for pyspark only through its `spark` extra, so installing it
    beside a platform's pyspark (3.5.9 here, installed first, as on EMR 7 or Dataproc 2.x)
    replaces nothing: pip would install the package alone, and that venv's runs above are on
    3.5.9."""
    import email
    import zipfile

    from packaging.requirements import Requirement

    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = tmp_path.glob("curate_pipeline-*.whl")
    with zipfile.ZipFile(wheel) as z:
        meta = email.message_from_bytes(
            z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")))
        )
    reqs = [Requirement(x) for x in meta.get_all("Requires-Dist")]
    spark = [q for q in reqs if q.name in ("pyspark", "py4j")]
    assert spark and all(q.marker and q.marker.evaluate({"extra": "spark"}) for q in spark)
    assert not any(q.marker.evaluate({"extra": ""}) for q in spark)  # not without the extra
    python = _venv("3.5")
    report = tmp_path / "report.json"
    cmd = [str(python), "-m", "pip", "install", "--dry-run", "-q", "--report", str(report),
           str(wheel)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    names = [i["metadata"]["name"] for i in json.loads(report.read_text())["install"]]
    assert names == ["curate-pipeline"], names
    assert _pyspark_version(python).startswith("3.5.")


def _pyspark_version(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


def test_the_built_wheel_in_a_fresh_venv(sample_warc, tmp_path):
    """Issue 64: the wheel (no checkout) in a fresh venv with its spark and multilingual
    extras: `import pipeline` fails (the package is curate_pipeline), the presets go by name
    from any folder, `curate run --config fineweb2` curates the sample, and a 13-line script
    with a step of its own runs end to end, the step's drops in the ledger."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_custom_steps import SCRIPT

    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(tmp_path / "dist"), str(ROOT)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("curate_pipeline-*.whl")
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # a current pip, as `make setup` and `curate pack` use (ensurepip's fails on lxml's extras)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    lock = str(ROOT / "requirements.lock")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "-c", lock,
                        f"{wheel}[spark,multilingual]"], capture_output=True, text=True,
                       timeout=1500)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    work = tmp_path / "elsewhere"  # no checkout here
    work.mkdir()
    r = subprocess.run([str(py), "-c", "import pipeline"], cwd=work, capture_output=True,
                       text=True)  # fmt: skip
    assert r.returncode != 0 and "No module named 'pipeline'" in r.stderr
    listed = subprocess.run([str(venv / "bin" / "curate"), "config", "list"], cwd=work,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "fineweb2" in listed and "dclm" in listed
    lid = ROOT / "models" / "lid.176.ftz"
    r = subprocess.run([str(venv / "bin" / "curate"), "run", "--config", "fineweb2", "--set",
                        f"langid.model={lid}", "--input", str(sample_warc), "--output",
                        str(work / "out")], cwd=work, capture_output=True, text=True,
                       timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + "\n----\n" + r.stderr[-4000:]
    assert "read 25 = kept" in r.stdout
    script = work / "held_out.py"
    # the model where the checkout has it (a user's own path: a fresh venv has no models/)
    script.write_text(
        SCRIPT.replace(
            "steps=[held_out])", f"steps=[held_out], set={{'langid.model': {str(lid)!r}}})"
        )
    )
    r = subprocess.run([str(py), str(script), str(sample_warc), str(work / "scripted")],
                       cwd=work, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-4000:]
    assert "held" in r.stdout


@pytest.fixture(scope="session")
def packed(tmp_path_factory) -> Path:
    """`curate pack` run as a user runs it: a fresh venv, the package installed, venv-pack."""
    out = tmp_path_factory.mktemp("pack") / "curate-env.tar.gz"
    r = subprocess.run([str(Path(sys.executable).parent / "curate"), "pack", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + "\n----\n" + r.stderr[-4000:]
    assert f"--archives {out}#env --conf spark.pyspark.python=./env/bin/python" in r.stdout
    assert "spark.pyspark.driver.python=./env/bin/python" in r.stdout  # cluster deploy mode
    return out


def test_the_packed_archive_holds_the_run_and_nothing_else(packed, tmp_path):
    """Installed (not editable), the run's dependencies with boto3 (the S3 lock), no pyspark
    (the cluster's own is used), no torch or test tools; its python is the interpreter's."""
    import tarfile

    with tarfile.open(packed) as tar:
        names = tar.getnames()
        info = json.load(tar.extractfile("curate-pack.json"))  # type: ignore[arg-type]
    site = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages/"
    tops = {n[len(site):].split("/")[0] for n in names if n.startswith(site)}  # fmt: skip
    assert "curate_pipeline" in tops and any(t.startswith("curate_pipeline-") for t in tops)
    assert not any(t.startswith("__editable__") or t.endswith(".egg-link") for t in tops)
    for needed in ("boto3", "pyarrow", "trafilatura", "fasttext", "warcio", "venv_pack"):
        assert any(t == needed or t.startswith(needed) for t in tops), needed
    for absent in ("pyspark", "py4j", "torch", "pytest", "moto", "playwright"):
        assert absent not in tops, absent
    assert info["tool"] == "venv-pack" and info["pyspark_included"] is False
    # the presets and the per-language recipes they name ship in the package (issue 64)
    for shipped in (
        "conf/fineweb2.yaml",
        "conf/default.yaml",
        "conf/fineweb2/configs/deu_Latn.yml",
        "py.typed",
    ):
        assert f"{site}curate_pipeline/{shipped}" in names, shipped
    print(f"archive {packed.stat().st_size / 2**20:.0f} MiB, {len(names):,} entries")


def test_pack_from_an_installed_package(packed, tmp_path):
    """Issue 63: `curate pack` where the package is installed (no checkout): the venv it is
    installed in, packed as it is (pyspark left out), with the CPU and glibc recorded; the
    environment is left as it was. The installed venv is the first archive, unpacked."""
    import tarfile

    env = tmp_path / "installed"
    with tarfile.open(packed) as tar:
        tar.extractall(env, filter="tar")
    before = (env / "curate-pack.json").read_bytes()
    out = tmp_path / "again.tar.gz"
    r = subprocess.run([str(env / "bin" / "python"), "-m", "curate_pipeline.cli", "pack", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + "\n----\n" + r.stderr[-3000:]
    assert f"packed {out}" in r.stdout
    with tarfile.open(out) as tar:
        names = tar.getnames()
        info = json.load(tar.extractfile("curate-pack.json"))  # type: ignore[arg-type]
    site = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages/"
    tops = {n[len(site):].split("/")[0] for n in names if n.startswith(site)}  # fmt: skip
    assert "curate_pipeline" in tops and "pyarrow" in tops and "pyspark" not in tops
    assert info["lock"] == "the installed environment" and info["pyspark_included"] is False
    import platform

    assert info["machine"] == platform.machine() and len(info["glibc_min"]) == 2
    assert (env / "curate-pack.json").read_bytes() == before  # its own record, untouched
    # extras it lacks: refused, naming the install
    r = subprocess.run([str(env / "bin" / "python"), "-m", "curate_pipeline.cli", "pack",
                        str(tmp_path / "gpu.tar.gz"), "--extras", "gpu"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 2 and "pip install 'curate-pipeline[gpu]'" in r.stderr, r.stderr


@pytest.fixture(scope="module", params=["4", "3.5"])
def bare_cluster(request, tmp_path_factory):
    """Master and two 1-core workers from a Spark installation copied out of the version's
    pyspark, in a mount namespace hiding the checkout, the venvs, site-packages and /tmp."""
    from curate_pipeline.engine.cluster import cluster_down, cluster_up, install_spark

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a private mount namespace for the workers needs root and unshare")
    python = _venv(request.param)
    base = tmp_path_factory.mktemp(f"bare-{request.param}")
    spark_home = install_spark(_pyspark_home(python), base / "spark")
    hide = [str(ROOT), str(SITE / "site-packages")]
    hide += [str(p) for p in (ROOT.parent / "shared",) if p.is_dir()]
    run_dir = base / "cluster"
    info = cluster_up(run_dir, workers=2, cores=1, memory="1g", hide=hide,
                      keep=[str(spark_home)], spark_home=spark_home)  # fmt: skip
    try:
        yield {**info, "python": python, "spark_home": spark_home, "version": request.param}
    finally:
        cluster_down(run_dir)


def test_spark_submit_with_the_packed_env_on_bare_nodes_equals_a_local_run(
    s3, s3_inputs, packed, bare_cluster, spark, tmp_path
):
    from curate_pipeline.run.orchestrate import run

    client, env, _ = s3
    local_dir, uris, c, config = s3_inputs
    # the workers' view: no checkout, no venv, no site-packages: a node with Java and Python
    ns = ["nsenter", "-t", str(bare_cluster["pids"][1]), "-m"]
    for hidden in (
        ROOT / "curate_pipeline",
        ROOT / ".venv",
        SITE / "site-packages" / "pip",
        config,
    ):
        assert subprocess.run([*ns, "test", "-e", str(hidden)]).returncode != 0, hidden
    assert subprocess.run([*ns, "test", "-e", str(bare_cluster["spark_home"] / "jars")]
                          ).returncode == 0  # fmt: skip
    node_python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    bare = subprocess.run([*ns, node_python, "-c", "import pyarrow"], capture_output=True)
    assert bare.returncode != 0  # the node's Python has no packages

    spark_home = bare_cluster["spark_home"]
    out = f"s3://{OUT_BUCKET}/runs/bare-{bare_cluster['version']}"
    s3a = {"fs.s3a.endpoint": env["AWS_ENDPOINT_URL"], "fs.s3a.access.key": "test",
           "fs.s3a.secret.key": "test", "fs.s3a.endpoint.region": "us-east-1"}  # fmt: skip
    store_conf = [a for k, v in s3a.items() for a in ("--conf", f"spark.hadoop.{k}={v}")]
    cmd = [str(spark_home / "bin" / "spark-submit"), "--master", bare_cluster["master"],
           "--archives", f"{packed}#env",
           "--conf", "spark.pyspark.python=./env/bin/python",
           "--conf", f"spark.pyspark.driver.python={bare_cluster['python']}",
           "--conf", "spark.ui.enabled=false", *store_conf,
           str(ROOT / "jobs" / "curate.py"), "--config", str(config),
           "--input", uris["a"], uris["b"], uris["c"], "--output", out]  # fmt: skip
    run_env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "PYSPARK_", "SPARK_", "VIRTUAL_ENV"))}  # fmt: skip
    run_env["SPARK_HOME"] = str(spark_home)
    proc = subprocess.run(cmd, cwd=ROOT, env=run_env, capture_output=True, text=True,
                          timeout=1200)  # fmt: skip
    quiet = "\n".join(line for line in proc.stderr.splitlines() if " INFO " not in line)
    assert proc.returncode == 0, proc.stdout[-3000:] + "\n----\n" + quiet[-6000:]
    got = tmp_path / "from-cluster"
    _download(client, OUT_BUCKET, f"runs/bare-{bare_cluster['version']}/", got)
    m = json.loads((published(got) / "manifest.json").read_text())
    assert m["spark"]["master"] == bare_cluster["master"]
    assert m["spark"]["version"].startswith("3.5." if bare_cluster["version"] == "3.5" else "4.")
    local = tmp_path / "local"
    inputs = [str(local_dir / f"{n}.warc.gz") for n in ("a", "b", "c")]
    run(c, inputs, local, spark)
    assert run_outputs(got) == run_outputs(local)
    assert m["counts"] == json.loads((published(local) / "manifest.json").read_text())["counts"]
    _same_files(got, local, "tokens")
    assert (
        pq.read_table(published(got) / "shards").to_pylist()
        == pq.read_table(published(local) / "shards").to_pylist()
    )
    assert (published(got) / "budget.json").read_text() == (
        published(local) / "budget.json"
    ).read_text()
