"""Object stores through a real S3 API (moto's server on localhost).

Inputs: a Common Crawl style `warc.paths.gz` listing in a bucket, whose relative lines are
keys of that bucket, read by `curate run` in its own process: the documents and the ledger
equal a run over the same files on disk, a rerun resumes every chunk, and each input file
costs a handful of GET requests (small probes, then an 8 MiB read buffer).

Outputs (issue 33): a run whose inputs, models, chunks, markers, lock, data/, ledger, shards,
token files, manifest and report all live in buckets; killed and resumed; added inputs and a
retune; and spark-submit onto a standalone cluster whose workers share no disk with the
driver. Each is compared with a local run of the same files.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from run_outputs import published, run_outputs, version_rows
from s3_server import BUCKET, OUT_BUCKET, _download, _finish, _popen, _same_files

from curate_pipeline.outputs.tokens.shards import TokenShards

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]
PREFIX = "crawl-data/CC-TEST-2026-49"


def _curate(env: dict, listing: str, out: Path) -> dict:
    r = subprocess.run(
        [str(Path(sys.executable).parent / "curate"), "run", "--config", "conf/default.yaml",
         "--input", listing, "--output", str(out)],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + "\n----\n" + r.stderr[-4000:]
    return json.loads((published(out) / "manifest.json").read_text())


def test_s3_listing_matches_local_resumes_and_reads_in_few_requests(
    s3, spark, cfg, sample_warc, tmp_path
):
    from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc
    from curate_pipeline.run.orchestrate import run

    client, env, counter = s3
    local_dir = tmp_path / "files"
    local_dir.mkdir()
    (local_dir / "a.warc.gz").write_bytes(sample_warc.read_bytes())
    write_pages_warc(local_dir / "b.warc.gz", with_duplicates(synthetic_pages(40, seed=9)))
    keys = [f"{PREFIX}/segments/0/warc/{name}" for name in ("a.warc.gz", "b.warc.gz")]
    for key, name in zip(keys, ("a.warc.gz", "b.warc.gz"), strict=True):
        client.put_object(Bucket=BUCKET, Key=key, Body=(local_dir / name).read_bytes())
    # relative lines, as Common Crawl's listings: keys of the listing's own bucket
    listing = gzip.compress(("\n".join(keys) + "\n").encode())
    client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/warc.paths.gz", Body=listing)

    local = tmp_path / "local"
    run(cfg, [str(local_dir / "a.warc.gz"), str(local_dir / "b.warc.gz")], local, spark)
    out = tmp_path / "from-s3"
    counter.seen.clear()
    m = _curate(env, f"s3://{BUCKET}/{PREFIX}/warc.paths.gz", out)
    assert m["inputs"] == [f"s3://{BUCKET}/{k}" for k in keys]
    assert run_outputs(out) == run_outputs(local)
    assert m["counts"] == json.loads((published(local) / "manifest.json").read_text())["counts"]
    # per split of a file (2 tasks per core, shared by a chunk's files: an object's size is
    # not known, so each counts as a Common Crawl file and has a chunk of its own, 4 splits):
    # two small probes (gzip magic, boundary: 256 KiB each) and one or two stream reads of
    # 8 MiB a GET, never one request per read; one HEAD for the size and one per open
    # (pyarrow's S3 file asks the size when opened: its Python API takes no known size)
    splits = [-(-4 // c["files"]) for c in m["chunks"] for _ in range(c["files"])]
    for key, n in zip(keys, splits, strict=True):
        gets = counter.seen[("GET", f"/{BUCKET}/{key}")]
        heads = counter.seen[("HEAD", f"/{BUCKET}/{key}")]
        assert 0 < gets <= 4 * n and heads <= 5 * n, (key, gets, heads)

    again = _curate(env, f"s3://{BUCKET}/{PREFIX}/warc.paths.gz", out)
    assert {c["status"] for c in again["chunks"]} == {"reused"}
    assert run_outputs(out) == run_outputs(local)


# ---- every output on S3 (issue 33): a run whose inputs, chunks, markers, lock, data/, ledger,
# shards, token files, manifest and report all live in the bucket, with no Hadoop S3 connector
# (pyspark ships none): Spark writes through the project's Python data source over pyarrow.fs.


def test_a_run_entirely_on_s3_resumes_and_equals_a_local_run(s3, s3_inputs, local_ab, tmp_path):
    """Killed after its first chunk's commit, rerun: the committed chunk is reused, and data/,
    the ledger, the shards, the token files (ours and Megatron's) and the budget equal a
    local run's; the report is written in the bucket; no lock is left behind."""
    client, env, _ = s3
    _, uris, _, config = s3_inputs
    out = f"s3://{OUT_BUCKET}/runs/r1"
    first_marker = "runs/r1/_stages/documents/chunk-00000/_STAGE.json"

    def committed(key: str) -> bool:
        return client.list_objects_v2(Bucket=OUT_BUCKET, Prefix=key).get("KeyCount", 0) > 0

    proc = _popen(env, config, [uris["a"], uris["b"]], out, tmp_path / "killed.log")
    deadline = time.monotonic() + 300
    while not committed(first_marker) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, (tmp_path / "killed.log").read_text(errors="replace")[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not committed("runs/r1/_versions/")  # nothing published
    assert committed("runs/r1/.curate.lock/")  # the killed run's lease is still in the bucket

    proc = _popen(env, config, [uris["a"], uris["b"]], out, tmp_path / "resumed.log")
    _finish(proc, tmp_path / "resumed.log")
    got = tmp_path / "from-s3"
    names = _download(client, OUT_BUCKET, "runs/r1/", got)
    m = json.loads((published(got) / "manifest.json").read_text())
    assert [ch["status"] for ch in m["chunks"]] == ["reused", "ran"]
    locks = [n for n in names if n.startswith(".curate.lock/")]  # taken over, then released:
    assert len(locks) == 1  # the newest generation stays, marked released (never reused)
    assert json.loads((got / locks[0]).read_text())["released"] is True
    assert not any("_attempts" in n or n.startswith("_stages/_checkpoints") for n in names)

    local = local_ab
    assert run_outputs(got) == run_outputs(local)
    assert m["counts"] == json.loads((published(local) / "manifest.json").read_text())["counts"]
    for sub in ("tokens", "shards"):
        if sub == "shards":  # Parquet writers differ in metadata: compare rows
            import pyarrow.parquet as pq

            assert (pq.read_table(published(got) / sub).to_pylist()
                    == pq.read_table(published(local) / sub).to_pylist())  # fmt: skip
        else:
            _same_files(got, local, sub)
    assert (published(got) / "budget.json").read_text() == (
        published(local) / "budget.json"
    ).read_text()
    # every Parquet file data/ and rejected/ hold is one the manifest lists, and vice versa
    version = f"{m['path']}/"
    assert sorted({n.split("/")[1] for n in names if n.startswith("versions/")}) == [version[9:-1]]
    for sub in ("data", "rejected"):  # a table's files: DIR/<sub>/<writer>/, named from <sub>/
        listed = sorted(f["file"] for f in m["files"][sub])
        assert listed == sorted(n[len(sub) + 1 :] for n in names
                                if n.startswith(f"{sub}/{version[9:]}"))  # fmt: skip
        assert sum(f["rows"] for f in m["files"][sub]) == (
            m["counts"]["kept"] if sub == "data" else sum(m["counts"]["rejected"].values())
        )

    r = subprocess.run([str(Path(sys.executable).parent / "curate"), "report", out], cwd=ROOT,
                       env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert committed(f"runs/r1/{version}report.html")
    # the token shards read where they are (ranged reads), as a local run's are memory-mapped
    shown = [subprocess.run([str(Path(sys.executable).parent / "curate"), "tokens", where,
                             "--show", "3"], cwd=ROOT, env={**os.environ, **env},
                            capture_output=True, text=True, timeout=120)
             for where in (out, str(local))]  # fmt: skip
    assert all(x.returncode == 0 for x in shown), [x.stderr for x in shown]
    assert shown[0].stdout == shown[1].stdout and "--- document 2" in shown[0].stdout
    # `curate explore` on the bucket: the same pages of records as on the local run
    pages = []
    for where in (out, str(local)):
        proc = subprocess.Popen([str(Path(sys.executable).parent / "curate"), "explore", where,
                                 "--port", "0"], cwd=ROOT, env={**os.environ, **env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip
        try:
            url = proc.stdout.readline().split("explore: ", 1)[1].split(" ", 1)[0]
            with urllib.request.urlopen(url + "api/documents?size=200", timeout=60) as resp:
                pages.append(json.loads(resp.read()))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    assert pages[0]["total"] == m["counts"]["read"] and pages[0]["rows"] == pages[1]["rows"]


def test_added_inputs_and_a_retune_on_s3(s3, s3_inputs, tmp_path):
    """On the run above, one more file and a stricter rule at once: the added file is one new
    chunk (extracted), the two old chunks retune from their stored text (not extracted
    again) under the new rule; the ledger in the bucket reconciles."""
    import yaml

    client, env, _ = s3
    _, uris, _, config = s3_inputs
    out = f"s3://{OUT_BUCKET}/runs/r1"
    tuned = yaml.safe_load(config.read_text())
    tuned["rules"]["gopher_quality"]["min_doc_words"] = 120
    tuned_config = tmp_path / "tuned.yaml"
    tuned_config.write_text(yaml.safe_dump(tuned))
    proc = _popen(env, tuned_config, [uris["a"], uris["b"], uris["c"]], out,
                  tmp_path / "tuned.log", "--retune")  # fmt: skip
    _finish(proc, tmp_path / "tuned.log")
    got = tmp_path / "tuned"
    _download(client, OUT_BUCKET, "runs/r1/", got)
    m = json.loads((published(got) / "manifest.json").read_text())
    assert [ch["status"] for ch in m["chunks"]] == ["retuned", "retuned", "ran"]
    ledger = version_rows(got, "rejected")
    # the new rule reached the old chunks' documents, read from their stored text
    old = {uris["a"], uris["b"]}
    assert any(r["warc_file"] in old and "< 120" in (r["detail"] or "") for r in ledger)
    assert any(r["warc_file"] == uris["c"] for r in ledger)
    assert len(ledger) == sum(m["counts"]["rejected"].values())
    assert m["counts"]["read"] == m["counts"]["kept"] + len(ledger)
    assert len(version_rows(got, "data", ["id"])) == m["counts"]["kept"]
    # a retune commits by its marker: each chunk folder holds only the files it lists
    for ch in ("chunk-00000", "chunk-00001", "chunk-00002"):
        folder = got / "_stages" / "documents" / ch
        marker = json.loads((folder / "_STAGE.json").read_text())
        on_store = sorted(p.name for p in folder.glob("*.parquet"))
        assert on_store == sorted(f["file"] for f in marker["files"])


def test_an_output_in_a_bucket_grows_by_appending(s3, s3_inputs, tmp_path):
    """An output in the bucket, then one more input: the run appends. The first version's
    objects stay as they were (ETags), the new version lists them beside its own, and its
    data/ and dedup index (on S3) hold every kept document once."""
    import yaml

    client, env, _ = s3
    _, uris, _, config = s3_inputs
    conf = yaml.safe_load(config.read_text())
    conf["tokens"]["merged"] = False  # one file of every shard cannot grow by appending
    appending = tmp_path / "append.yaml"
    appending.write_text(yaml.safe_dump(conf))
    out = f"s3://{OUT_BUCKET}/runs/grown"

    def etags() -> dict[str, str]:  # a version's objects: versions/F/ and its tables' F/
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=OUT_BUCKET, Prefix="runs/grown/")  # fmt: skip
        return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", [])
                if o["Key"].split("/")[2] in ("versions", "data", "rejected", "index")
                and "/_delta_log/" not in o["Key"]}  # fmt: skip

    _finish(_popen(env, appending, [uris["b"]], out, tmp_path / "first.log"),
            tmp_path / "first.log")  # fmt: skip
    first = etags()
    _finish(_popen(env, appending, [uris["b"], uris["c"]], out, tmp_path / "second.log"),
            tmp_path / "second.log")  # fmt: skip
    assert first.items() <= etags().items()  # nothing of the first version rewritten
    got = tmp_path / "grown"
    _download(client, OUT_BUCKET, "runs/grown/", got)
    m = json.loads((published(got) / "manifest.json").read_text())
    assert m["increment"]["inputs_added"] == 1
    assert m["increment"]["counts"]["read"] < m["counts"]["read"]
    ids = [r["id"] for r in version_rows(got, "data", ["id"])]
    assert len(ids) == len(set(ids)) == m["counts"]["kept"]
    assert sorted(r["doc_id"] for r in version_rows(got, "index", ["doc_id"])) == sorted(ids)
    assert len(TokenShards(published(got) / "tokens")) == m["counts"]["kept"]
    # the Delta tables on the store, read there by deltalake and Polars (no project code)
    import polars as pl
    from deltalake import DeltaTable

    options = {**env, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    table = DeltaTable(f"{out}/data", storage_options=options)
    assert sorted(table.to_pyarrow_table(columns=["id"])["id"].to_pylist()) == sorted(ids)
    assert table.transaction_version("curate-pipeline") == m["version"]
    ledger = pl.read_delta(f"{out}/rejected", storage_options=options)
    assert sorted(ledger["doc_id"].to_list()) == sorted(
        r["doc_id"] for r in version_rows(got, "rejected", ["doc_id"]))  # fmt: skip
    # exported to another bucket: the version's files alone, then read as a dataset
    from datasets import load_dataset

    client.create_bucket(Bucket="exported")
    curate = str(Path(sys.executable).parent / "curate")
    r = subprocess.run([curate, "export", out, "s3://exported/v", "--with", "rejected"],
                       cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    dest = tmp_path / "exported"
    _download(client, "exported", "v/", dest)
    assert sorted(p.name for p in dest.iterdir()) == ["README.md", "data", "rejected"]
    kept = load_dataset(str(dest), split="train", cache_dir=str(tmp_path / "hf"))
    assert sorted(kept["id"]) == sorted(ids)


@pytest.fixture(scope="module")
def private_cluster(tmp_path_factory):
    """A standalone cluster whose workers see neither the driver's /tmp nor the checkout's
    folders but the code and its venv (nor the real-data folder): no shared disk."""
    import shutil

    from curate_pipeline.engine.cluster import cluster_down, cluster_up

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a private mount namespace for the workers needs root and unshare")
    keep = [ROOT / "curate_pipeline", ROOT / ".venv"]
    hide = [str(p) for p in sorted(ROOT.iterdir()) if p.is_dir() and p not in keep]
    hide += [str(p) for p in (ROOT.parent / "shared",) if p.is_dir()]
    run_dir = tmp_path_factory.mktemp("private-cluster")
    try:
        yield cluster_up(run_dir, workers=2, cores=1, memory="1g", hide=hide,
                         keep=[str(k) for k in keep])  # fmt: skip
    finally:
        cluster_down(run_dir)


def test_spark_submit_on_a_cluster_without_shared_disk_writes_to_s3(
    s3, s3_inputs, private_cluster, local_ab, tmp_path
):
    """spark-submit onto workers that share no disk with the driver: inputs, models and every
    output in the bucket, the store given only as Hadoop S3A settings (`--conf
    spark.hadoop.fs.s3a.*`), which driver and executors both follow; the documents, the
    ledger and the counts equal a local run's. A step of the user's own, from a module in a
    folder only the driver sees (issue 64), reaches the executors with the job."""
    import shutil

    import yaml

    from curate_pipeline.config import load_config

    client, env, _ = s3
    _, uris, _, base_config = s3_inputs
    mine = tmp_path / "user-code"  # under /tmp: hidden from the workers
    mine.mkdir()
    (mine / "my_checks.py").write_text(
        "def no_empty_text(doc):\n    return bool(doc['text'])  # keeps what reaches it\n"
    )
    config = tmp_path / "with-step.yaml"
    settings = yaml.safe_load(Path(base_config).read_text())
    settings["steps"] = {"custom": ["my_checks:no_empty_text"]}
    config.write_text(yaml.safe_dump(settings))
    # the workers' view: neither the driver's temporary files nor the models folder
    workers_ns = private_cluster["pids"][1]
    for seen_by_driver in (config, mine / "my_checks.py", ROOT / "models" / "lid.176.ftz",
                           ROOT / "curate_pipeline"):  # fmt: skip
        visible = subprocess.run(["nsenter", "-t", str(workers_ns), "-m", "test", "-e",
                                  str(seen_by_driver)]).returncode == 0  # fmt: skip
        assert visible == (seen_by_driver.name == "curate_pipeline"), seen_by_driver
    pyfiles = shutil.make_archive(str(tmp_path / "pipeline"), "zip", ROOT, "curate_pipeline")
    out = f"s3://{OUT_BUCKET}/runs/cluster"
    # the JVMs' JIT settings of conf/cluster.yaml (half their CPU at start-up)
    jvm = load_config(ROOT / "conf" / "cluster.yaml").spark.conf
    executor = "spark.executor.extraJavaOptions"
    jvm_opts = ["--driver-java-options", jvm["spark.driver.extraJavaOptions"],
                "--conf", f"{executor}={jvm[executor]}"]  # fmt: skip
    # the store as a Hadoop cluster is told of it (S3A settings), and nothing else: neither
    # the driver nor the executors get an AWS_* variable from this test
    s3a = {"fs.s3a.endpoint": env["AWS_ENDPOINT_URL"], "fs.s3a.access.key": "test",
           "fs.s3a.secret.key": "test", "fs.s3a.endpoint.region": "us-east-1"}  # fmt: skip
    store_conf = [a for k, v in s3a.items() for a in ("--conf", f"spark.hadoop.{k}={v}")]
    cmd = [str(Path(sys.executable).parent / "spark-submit"),
           "--master", private_cluster["master"], "--py-files", pyfiles,
           "--conf", "spark.ui.enabled=false", *store_conf,
           *jvm_opts,
           str(ROOT / "jobs" / "curate.py"), "--config", str(config),
           "--input", uris["a"], uris["b"], "--output", out]  # fmt: skip
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    run_env["PYSPARK_PYTHON"] = sys.executable
    run_env["PYTHONPATH"] = str(mine)  # the driver's; executors get the file with the job
    proc = subprocess.run(cmd, cwd=ROOT, env=run_env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    quiet = "\n".join(line for line in proc.stderr.splitlines() if " INFO " not in line)
    assert proc.returncode == 0, proc.stdout[-3000:] + "\n----\n" + quiet[-6000:]
    got = tmp_path / "from-cluster"
    _download(client, OUT_BUCKET, "runs/cluster/", got)
    m = json.loads((published(got) / "manifest.json").read_text())
    assert m["spark"]["master"] == private_cluster["master"]
    local = local_ab
    assert run_outputs(got) == run_outputs(local)
    assert m["counts"] == json.loads((published(local) / "manifest.json").read_text())["counts"]
    assert [c["function"] for c in m["custom_steps"]] == ["my_checks:no_empty_text"]


def test_a_store_folder_expands_to_its_archives(s3, s3_inputs, monkeypatch):
    """`--input s3://bucket/folder/` is every archive under it, in name order, as a local
    folder is; one with none is refused, naming it."""
    from curate_pipeline import location
    from curate_pipeline.run.inputs import InputError, expand_inputs

    _, env, _ = s3
    _, uris, _, _ = s3_inputs
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(location, "_fs_cache", {})  # filesystems made with this endpoint
    assert expand_inputs([f"s3://{BUCKET}/inputs/"], "") == [uris["a"], uris["b"], uris["c"]]
    with pytest.raises(InputError, match=f"s3://{BUCKET}/models: holds no"):
        expand_inputs([f"s3://{BUCKET}/models"], "")


def test_a_driver_paused_past_its_lease_on_s3_publishes_nothing_when_woken(
    s3, s3_inputs, local_ab, tmp_path
):
    """On S3 as on a disk (tests/test_output_lock.py): run A is frozen (SIGSTOP) once its
    exact-dedup stage committed, past its lease; run B takes the lock over and publishes;
    A, woken, stops with one line and exits non-zero. Every object B published (versions,
    commits, card, stage markers) is unchanged, and B's documents and ledger equal a local
    run's of the same files."""
    import yaml

    client, env, _ = s3
    _, uris, _, config = s3_inputs
    tuned = yaml.safe_load(config.read_text())
    tuned["output"]["lock_lease_seconds"] = 10
    short = tmp_path / "short-lease.yaml"
    short.write_text(yaml.safe_dump(tuned))
    prefix = "runs/frozen/"
    out = f"s3://{OUT_BUCKET}/{prefix.rstrip('/')}"

    def keys() -> dict[str, str]:
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=OUT_BUCKET,
                                                                     Prefix=prefix):  # fmt: skip
            for obj in page.get("Contents", []):
                found[obj["Key"][len(prefix) :]] = obj["ETag"]
        return found

    a = _popen(env, short, [uris["a"], uris["b"]], out, tmp_path / "a.log")
    deadline = time.monotonic() + 400
    while "_stages/exact_dedup/_STAGE.json" not in keys() and a.poll() is None:
        assert time.monotonic() < deadline, "A never reached near dedup"
        time.sleep(0.1)
    assert a.poll() is None, (tmp_path / "a.log").read_text(errors="replace")[-3000:]
    os.killpg(a.pid, signal.SIGSTOP)  # the driver and its JVM, as a VM pause would
    try:
        time.sleep(12)
        b = _popen(env, short, [uris["a"], uris["b"]], out, tmp_path / "b.log")
        _finish(b, tmp_path / "b.log")
        published_keys = {k: e for k, e in keys().items()
                          if k.startswith(("versions/", "_versions/", "README.md"))
                          or k.endswith("_STAGE.json")}  # fmt: skip
        assert any(k.startswith("_versions/") for k in published_keys)
    finally:
        os.killpg(a.pid, signal.SIGCONT)
    assert a.wait(timeout=300) != 0
    said = (tmp_path / "a.log").read_text(errors="replace")
    assert "lost its lock" in said and "Traceback" not in said, said[-3000:]
    after = keys()
    changed = sorted(k for k in published_keys if after.get(k) != published_keys[k])
    assert not changed, changed  # every object B published, untouched by A
    assert not any(k.startswith("_versions/") and k not in published_keys for k in after)
    got = tmp_path / "got"
    _download(client, OUT_BUCKET, prefix, got)
    local = local_ab
    assert run_outputs(got) == run_outputs(local)
