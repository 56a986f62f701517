"""Locations (curate_pipeline/location.py, curate_pipeline/engine/storage.py): one notion of a
place for
Python and for Spark. `file:///abs` and a scheme-less path under a non-local default
filesystem (viewfs:// mounted onto a folder) give the same run as a plain local path, and no
file of the run appears anywhere else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_outputs import published, run_outputs

from curate_pipeline.location import Location


def test_uris_and_local_paths(tmp_path):
    assert Location.of(f"file://{tmp_path}/x").uri == f"{tmp_path}/x"
    assert Location.of(f"file:{tmp_path}/x").uri == f"{tmp_path}/x"
    assert Location.of("s3a://bucket/a/b/").uri == "s3://bucket/a/b"
    assert Location.of("gcs://bucket/a").scheme == "gs"
    assert (Location.of("s3://bucket/a") / "b" / "c.json").uri == "s3://bucket/a/b/c.json"
    assert Location.of("s3://bucket/a/b").parent.uri == "s3://bucket/a"
    rel = Location.of("relative/dir")
    assert rel.is_local and Path(rel.uri).is_absolute()


def test_local_files_write_list_move_delete(tmp_path):
    root = Location.of(tmp_path) / "run"
    (root / "a" / "one.txt").write_text("1")
    (root / "b.txt").write_bytes(b"2")
    assert [f.relative_to(root) for f in root.files()] == ["a/one.txt", "b.txt"]
    (root / "b.txt").move(root / "c" / "b.txt")
    assert (root / "c" / "b.txt").read_text() == "2" and not (root / "b.txt").exists()
    assert (root / "new.lock").create_exclusive(b"x")
    assert not (root / "new.lock").create_exclusive(b"y")
    assert (root / "new.lock").read_bytes() == b"x"
    root.delete()
    assert not root.exists() and list(root.files()) == []


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix in (".bin", ".idx")}  # fmt: skip


@pytest.mark.spark
def test_file_uri_and_viewfs_default_fs_equal_a_plain_local_run(
    spark, cfg, sample_warc, sample_run, tmp_path
):
    from curate_pipeline.run.orchestrate import run

    plain = sample_run[0]

    as_uri = tmp_path / "as-uri"
    m = run(cfg, [str(sample_warc)], f"file://{as_uri}", spark)
    assert m["output"] == str(as_uri)
    assert run_outputs(as_uri) == run_outputs(plain)
    assert _files(published(as_uri) / "tokens") == _files(published(plain) / "tokens")

    # a cluster whose default filesystem is viewfs://, with /curated mounted onto a folder:
    # a scheme-less --output lands there for Spark's writes and for the markers alike, and a
    # scheme-less --input is read from there
    target = tmp_path / "mounted"
    (target / "in").mkdir(parents=True)
    (target / "in" / "sample.warc.gz").write_bytes(sample_warc.read_bytes())
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    before = conf.get("fs.defaultFS")
    conf.set("fs.viewfs.mounttable.testcluster.link./curated", f"file://{target}")
    conf.set("fs.defaultFS", "viewfs://testcluster/")
    try:
        m = run(cfg, ["/curated/in/sample.warc.gz"], "/curated/run1", spark)
    finally:
        conf.set("fs.defaultFS", before)
    assert m["output"] == str(target / "run1")
    assert m["inputs"] == [str(target / "in" / "sample.warc.gz")]  # inputs resolved alike
    assert not Path("/curated").exists()  # nothing on the driver's own disk at that path
    assert (
        json.loads((published(target / "run1") / "manifest.json").read_text())["counts"]
        == m["counts"]
    )
    assert run_outputs(target / "run1") == run_outputs(plain)
    assert _files(published(target / "run1") / "tokens") == _files(published(plain) / "tokens")

    # --overwrite clears the place Spark resolves a scheme-less output to, under the run's
    # lock, never the driver's own folder of that name (issue 50)
    decoy = tmp_path / "decoy"
    (decoy / "run1" / "data").mkdir(parents=True)
    (decoy / "run1" / "manifest.json").write_text("{}")
    (target / "run1" / "_stages" / "stale.txt").write_text("an earlier run's")
    conf.set(f"fs.viewfs.mounttable.other.link.{decoy}", f"file://{target}")
    conf.set("fs.defaultFS", "viewfs://other/")  # a new authority: Hadoop caches filesystems
    try:
        m = run(cfg, [f"file://{target}/in/sample.warc.gz"], f"{decoy}/run1", spark,
                overwrite=True)  # fmt: skip
    finally:
        conf.set("fs.defaultFS", before)
    assert m["output"] == str(target / "run1")
    assert (decoy / "run1" / "manifest.json").read_text() == "{}"  # untouched
    assert not (target / "run1" / "_stages" / "stale.txt").exists()  # cleared there
    assert run_outputs(target / "run1") == run_outputs(plain)


@pytest.mark.spark
def test_python_tasks_write_what_spark_writes(spark, cfg, sample_warc, sample_run, tmp_path):
    """`output.spark_io: python` (what an object store without a Hadoop connector gets) on a
    local disk: the same rows as Spark's own Parquet writer, with language folders too."""
    from curate_pipeline.run.orchestrate import run

    hadoop = sample_run[0]
    python_io = cfg.model_copy(deep=True)
    python_io.output.spark_io = "python"
    ours = tmp_path / "python"
    m = run(python_io, [str(sample_warc)], ours, spark)
    assert run_outputs(ours) == run_outputs(hadoop)
    assert not list(ours.rglob("_SUCCESS")) and not list(ours.rglob("*.crc"))
    folder = ours / "data" / published(ours).name  # DIR/data/F: this writer's
    assert sorted(f["file"] for f in m["files"]["data"]) == sorted(
        str(p.relative_to(ours / "data")) for p in folder.rglob("*.parquet")
    )
    routed = python_io.model_copy(deep=True)
    routed.langid.route_by_language = True
    m = run(routed, [str(sample_warc)], tmp_path / "routed", spark, force=True)
    langs = {f["file"].split("/")[1] for f in m["files"]["data"]}
    assert langs and all(d.isalpha() for d in langs)


def test_s3a_settings_become_the_aws_variables_pyarrow_reads():
    from curate_pipeline.location import s3a_environment

    assert s3a_environment({"fs.s3a.endpoint": "minio.local:9000", "fs.s3a.access.key": "k",
                            "fs.s3a.secret.key": "s", "fs.s3a.connection.ssl.enabled": "false",
                            "fs.s3a.endpoint.region": "eu-west-1"}) == {
        "AWS_ENDPOINT_URL": "http://minio.local:9000", "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1",
    }  # fmt: skip
    assert s3a_environment({"fs.s3a.endpoint": "s3.example.com"}) == {
        "AWS_ENDPOINT_URL": "https://s3.example.com"}  # fmt: skip
    assert s3a_environment({}) == {}


def test_abfs_paths_reach_azure_with_their_container():
    """pyarrow's AzureFileSystem takes `container/path`; abfss:// (TLS) is the same place."""
    pytest.importorskip("pyarrow._azurefs")
    from pyarrow import fs as pafs

    tls = Location.of("abfss://crawl@account.dfs.core.windows.net/warc/a.warc.gz")
    assert tls.uri == "abfs://crawl@account.dfs.core.windows.net/warc/a.warc.gz"
    filesystem, inner = tls.fs()
    assert isinstance(filesystem, pafs.AzureFileSystem)
    assert inner == "crawl/warc/a.warc.gz"
    # what pyarrow itself makes of the URI: the same path
    assert pafs.FileSystem.from_uri(tls.uri)[1] == inner


def test_hdfs_without_libhdfs_environment_names_what_is_missing(monkeypatch):
    from curate_pipeline import location
    from curate_pipeline.location import hdfs_environment

    monkeypatch.setattr(location, "_fs_cache", {})
    monkeypatch.delenv("HADOOP_HOME", raising=False)
    monkeypatch.delenv("CLASSPATH", raising=False)
    with pytest.raises(OSError, match=r"HADOOP_HOME and CLASSPATH not set.*spark.executorEnv"):
        Location.of("hdfs://namenode:8020/crawl/a.warc.gz").exists()
    monkeypatch.setenv("HADOOP_HOME", "/opt/hadoop")
    monkeypatch.setenv("CLASSPATH", "/opt/other.jar")
    with pytest.raises(OSError, match=r"CLASSPATH \(holds no Hadoop jar\)"):
        Location.of("hdfs://namenode:8020/crawl/b.warc.gz").exists()
    # executors get the driver's (engine/spark.py: spark.executorEnv.*)
    env = {"HADOOP_HOME": "/opt/hadoop", "CLASSPATH": "/opt/hadoop/share/hadoop/common/a.jar"}
    assert hdfs_environment(env) == env
    assert hdfs_environment({}) == {}


def test_a_session_passes_the_libhdfs_environment_to_executors(tmp_path, monkeypatch):
    """HADOOP_HOME without Hadoop jars on CLASSPATH: `hadoop classpath --glob` supplies them,
    and both go to spark.executorEnv (a fake `hadoop` script stands in for the CLI here)."""
    from curate_pipeline.location import hdfs_environment

    home = tmp_path / "hadoop"
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "hadoop"
    script.write_text("#!/bin/sh\necho /opt/hadoop/etc:/opt/hadoop/share/hadoop/common/x.jar\n")
    script.chmod(0o755)
    env = hdfs_environment({"HADOOP_HOME": str(home), "PATH": "/usr/bin:/bin"})
    jars = "/opt/hadoop/etc:/opt/hadoop/share/hadoop/common/x.jar"
    assert env == {"HADOOP_HOME": str(home), "CLASSPATH": jars}


@pytest.mark.spark
def test_a_failed_python_task_attempt_leaves_no_file(spark, tmp_path):
    """A task that fails mid-partition (after writing part of a file) deletes what it wrote:
    no cut Parquet file sits beside committed ones (issue 51 item 5)."""
    from collections.abc import Iterator

    import pyarrow as pa

    from curate_pipeline.engine.parquet_source import write_files

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i, batch in enumerate(batches):
            if i == 3:
                raise RuntimeError("this attempt fails after three batches")
            yield batch

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        df = spark.range(0, 2000, numPartitions=1).selectExpr("id", "repeat('x', 50) AS text")
        failing = df.mapInArrow(rows, df.schema)
        root = Location.of(tmp_path / "out")
        with pytest.raises(Exception, match="this attempt fails after three batches"):
            write_files(failing, root, "w1", "zstd", None)
        assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
        # the same write, whole: one file, every row
        written = write_files(df, root, "w2", "zstd", None)
        assert [f["rows"] for f in written] == [2000]
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "64")


def test_a_move_on_s3_copies_large_objects_in_parts(s3_here):
    """A store's move is a server-side copy; past boto3's threshold (8 MiB) it is copied in
    parts (UploadPartCopy), the path that takes objects over CopyObject's 5 GiB limit."""
    s3_here.create_bucket(Bucket="moves-test")
    body = bytes(range(256)) * (9 << 12)  # 9 MiB
    src = Location.of("s3://moves-test/_attempts/shard-00000.a7.bin")
    src.write_bytes(body)
    src.move(Location.of("s3://moves-test/shard-00000.bin"))
    got = s3_here.get_object(Bucket="moves-test", Key="shard-00000.bin")
    assert got["Body"].read() == body and not src.exists()
    assert "-" in got["ETag"]  # a multipart object's ETag: the parts' digest and their count
