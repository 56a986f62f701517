"""Where Spark reads and writes: locations resolved the way Spark resolves them, and Parquet
written and read at any of them.

`resolve(spark, text)` makes a `Location` the driver, the executors and Spark agree on: a
scheme-less path is qualified by Spark's default filesystem (`fs.defaultFS`: the local disk
in local mode, HDFS on YARN), and a `viewfs://` path is followed through its mount table to
the real store, so Python code and Spark's writers name the same place.

`write_parquet` / `read_parquet` use the cluster's own Hadoop connector where it has one for
the location's scheme (local disk, HDFS, EMRFS or S3A, GCS connector, ABFS), and otherwise
Python tasks over pyarrow.fs (engine/parquet_source.py). `output.spark_io`
forces one or the other. Either way a write returns the files it produced (name and bytes)
and the rows it wrote, counted by Spark as they pass (an observed metric), which the caller
lists in its marker; reads take an explicit list of files. On the Hadoop path the files are
found by listing the folder, so they are trusted only when their footers' rows add up to the
rows Spark counted (read side by side); a committer's working folders never count.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from curate_pipeline.engine.parquet_source import read_files, write_files
from curate_pipeline.location import Location, is_uri


class StorageError(RuntimeError):
    """A location Spark cannot write the way the config asks."""


def _hadoop_conf(spark: SparkSession):
    return spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]


def default_fs_is_local(spark: SparkSession) -> bool:
    return (_hadoop_conf(spark).get("fs.defaultFS") or "file:///").startswith("file:")


def resolve(spark: SparkSession, text: str | Location) -> Location:
    """`text` as the place Spark's default filesystem and mount tables make it."""
    if isinstance(text, Location):
        return text
    text = str(text)
    scheme = text.split("://", 1)[0].lower() if is_uri(text) else ""
    if scheme and scheme != "viewfs":
        return Location.of(text)
    conf = _hadoop_conf(spark)
    if not scheme and not text.startswith("file:") and default_fs_is_local(spark):
        return Location.of(text)
    jvm = spark.sparkContext._jvm  # type: ignore[union-attr]
    path = jvm.org.apache.hadoop.fs.Path(text)
    fs = path.getFileSystem(conf)
    qualified = fs.makeQualified(path)
    tail: list[str] = []
    cur = qualified
    while cur is not None and not fs.exists(cur):
        tail.insert(0, cur.getName())
        cur = cur.getParent()
    base = str(fs.resolvePath(cur).toString()) if cur is not None else str(qualified.toString())
    return Location.of("/".join([base.rstrip("/"), *tail]))


_connectors: dict[tuple[str, str], bool] = {}


def _this_machine(spark: SparkSession) -> set[str]:
    import socket

    names = {"localhost", "127.0.0.1", socket.gethostname(), socket.getfqdn()}
    driver = spark.sparkContext.getConf().get("spark.driver.host", "")
    names |= {driver} if driver else set()
    for name in list(names):
        try:
            names |= set(socket.gethostbyname_ex(name)[2])
        except OSError:
            pass
    return names


def check_shared_output(spark: SparkSession, given: str | Location, out: Location) -> None:
    """Refuse an output given without a scheme that Spark's default filesystem puts on a
    local disk while executors run on other machines: each would write to its own disk and
    the driver would list only its own files. An explicit file:// (a mount every node shares)
    is the user's word and goes on."""
    text = given.uri if isinstance(given, Location) else str(given)
    master = spark.sparkContext.master
    if not out.is_local or is_uri(text) or text.startswith("file:") or master.startswith("local"):
        return
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    hosts = {str(i.host()) for i in infos}
    others = sorted(hosts - _this_machine(spark))
    if master.startswith(("yarn", "k8s")) or others:
        where = f"executors on {', '.join(others[:3])}" if others else f"executors of {master}"
        raise StorageError(
            f"--output {text}: Spark's default filesystem puts it on the driver's local disk "
            f"({out.uri}), but {where} run on other machines: each would write to its own "
            "disk. Give a store every node reaches (hdfs://, s3://, gs://, abfs://), or "
            "file:///... for a folder every node mounts"
        )


def _has_connector(spark: SparkSession, scheme: str) -> bool:
    """Whether the JVM has a Hadoop FileSystem class for `scheme` (asked once per session)."""
    key = (spark.sparkContext.applicationId, scheme)
    if key not in _connectors:
        jvm = spark.sparkContext._jvm  # type: ignore[union-attr]
        try:
            jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, _hadoop_conf(spark))
            _connectors[key] = True
        except Exception:  # noqa: BLE001 (py4j: UnsupportedFileSystemException)
            _connectors[key] = False
    return _connectors[key]


def hadoop_uri(spark: SparkSession, loc: Location) -> str | None:
    """The URI Spark's own readers and writers take for `loc`, or None when the cluster has no
    connector for its scheme (s3:// is tried as s3, then s3a; abfs:// as abfss, then abfs)."""
    if loc.is_local:
        return "file://" + loc.uri
    schemes = {"s3": ("s3", "s3a"), "abfs": ("abfss", "abfs")}.get(loc.scheme, (loc.scheme,))
    for scheme in schemes:
        if _has_connector(spark, scheme):
            return scheme + loc.uri[len(loc.scheme) :]
    return None


def spark_io(spark: SparkSession, loc: Location, mode: str) -> str | None:
    """The Hadoop URI to use for `loc`, or None for Python tasks over pyarrow.fs."""
    if mode == "python":
        return None
    uri = hadoop_uri(spark, loc)
    if uri is None and mode == "hadoop":
        raise StorageError(
            f"{loc}: this cluster has no Hadoop connector for {loc.scheme}:// (output.spark_io: "
            "hadoop); add it to the cluster (e.g. hadoop-aws for s3a://) or set "
            "output.spark_io: auto to write through pyarrow.fs"
        )
    return uri


def parquet_rows(files: list[Location], threads: int = 16) -> list[int]:
    """Row counts from the files' footers (one small ranged read each, side by side)."""
    from concurrent.futures import ThreadPoolExecutor

    def rows(f: Location) -> int:
        with f.open_input() as fh:
            return pq.ParquetFile(fh).metadata.num_rows

    if len(files) <= 1:
        return [rows(f) for f in files]
    with ThreadPoolExecutor(min(threads, len(files))) as pool:
        return list(pool.map(rows, files))


def _written_by_tasks(rel: str) -> bool:
    """A file Spark's committer put in place: no part of its path is a committer's working
    folder (`_temporary/`, S3A's `__magic/`, `.spark-staging-*`) or hidden."""
    return rel.endswith(".parquet") and not any(p.startswith(("_", ".")) for p in rel.split("/"))


# Spark's part file names carry the write job's id: part-00003-<uuid>-c000.zstd.parquet
_JOB = re.compile(r"^part-\d+-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")

# A store whose listing lags its writes shows a file later: listed again this often.
LISTING_RETRIES = (1.0, 3.0)


def _committed_files(loc: Location, before: set[str], observed: int
                     ) -> list[tuple[Location, int, int]]:  # fmt: skip
    """The files the write just committed under `loc`, with bytes and rows, trusted only when
    their rows add up to what Spark counted: fewer (a listing that lags) is listed again;
    more, or still fewer, is refused: another writer's or a zombie attempt's files are there,
    or committed files are missing."""
    for wait in (*LISTING_RETRIES, None):
        new = [(f, n) for f, n in loc.sized_files()
               if f.uri not in before and _written_by_tasks(f.relative_to(loc))]  # fmt: skip
        jobs = {m.group(1) for f, _ in new if (m := _JOB.search(f.name))}
        if len(jobs) > 1:  # one write is one job: Spark names its files with the job's id
            raise StorageError(
                f"{loc}: files of {len(jobs)} write jobs are there ({', '.join(sorted(jobs))}): "
                "another writer's are among them; nothing was committed: rerun (and make sure "
                "no other job writes this output)"
            )  # fmt: skip
        rows = parquet_rows([f for f, _ in new])
        listed = sum(rows)
        if listed == observed:
            return [(f, n, r) for (f, n), r in zip(new, rows, strict=True)]
        if listed > observed or wait is None:
            break
        time.sleep(wait)
    raise StorageError(
        f"{loc}: the Parquet files this write left there hold {listed:,} rows where Spark "
        f"wrote {observed:,}: "
        + ("files of another writer or of a task attempt that was not committed are among "
           "them" if listed > observed else "committed files are missing from the listing")
        + "; nothing was committed: rerun (and make sure no other job writes this output)"
    )  # fmt: skip


def partition_value(rel: str, column: str) -> str:
    """The value of Hive-style folder `column=value/` in a written file's relative name
    (which may sit in a write's own folder first: `w-<id>/column=value/part-...`)."""
    for part in rel.split("/")[:-1]:
        if part.startswith(column + "="):
            return part.split("=", 1)[1]
    raise ValueError(f"{rel}: no {column}=... folder in its name")


@dataclass
class Written:
    """What one write produced: its files, {"file": name relative to the folder, "bytes": n}
    (and "rows" where asked for), in name order, and the rows written in all."""

    files: list[dict]
    rows: int


def write_parquet(
    df: DataFrame,
    loc: Location,
    compression: str,
    mode: str = "auto",
    partition_by: str | None = None,
    file_rows: bool = False,
    own_folder: bool = False,
    route_by: str | None = None,
) -> Written:
    """Append `df` as Parquet files under `loc`. Nothing is committed here: the caller lists
    the files in its marker (files no marker lists are ignored by readers). `file_rows`: each
    file's rows too (from its footer through a Hadoop connector: for outputs of few files).
    `own_folder`: through a Hadoop connector, the write goes to a new folder of its own under
    `loc` (`w-<id>/`), so nothing another attempt left in `loc` can join it: a killed run's
    task files, or its committer's `_temporary/0/task_*` folders, which Hadoop's job commit
    would otherwise merge into this write's (the same job attempt number, 0, every run).
    `route_by`: a folder per value of that column, named by the value alone, the files keeping
    the column (write_files' `route`); through pyarrow.fs whatever `mode` says, as Spark's
    writer drops a partition column from its files."""
    spark = df.sparkSession
    counted = Observation()
    df = df.observe(counted, F.count(F.lit(1)).alias("rows"))
    uri = None if route_by else spark_io(spark, loc, mode)
    if uri is not None:
        target, before = loc, set()
        if own_folder:
            sub = f"w-{uuid.uuid4().hex[:12]}"
            target, uri = loc / sub, f"{uri.rstrip('/')}/{sub}"
        else:
            before = {f.uri for f in loc.files()}
        writer = df.write.mode("append").option("compression", compression)
        if partition_by:
            writer = writer.partitionBy(partition_by)
        writer.parquet(uri)
        new = _committed_files(target, before, int(counted.get["rows"]))
        files = [{"file": f.relative_to(loc), "bytes": n} | ({"rows": r} if file_rows else {})
                 for f, n, r in new]  # fmt: skip
    else:  # the writers count rows and bytes
        files = write_files(df, loc, uuid.uuid4().hex[:12], compression,
                            route_by or partition_by, route=route_by is not None)  # fmt: skip
    return Written(files, int(counted.get["rows"]))


def read_parquet(
    spark: SparkSession, files: list[Location], schema: StructType, mode: str = "auto"
) -> DataFrame:
    """The rows of exactly these Parquet files, with `schema` (no inference, no listing)."""
    if not files:
        return spark.createDataFrame([], schema)
    # how each scheme is read, decided once (a JVM call), not once per file: a snapshot's
    # documents store is ~100,000 files
    how: dict[str, str | None] = {}
    for f in files:
        if f.scheme not in how:
            how[f.scheme] = spark_io(spark, f, mode)
    if all(how.values()):
        target = {s: u.split("://", 1)[0] for s, u in how.items() if u}
        uris = ["file://" + f.uri if f.is_local else target[f.scheme] + f.uri[len(f.scheme):]
                for f in files]  # fmt: skip
        return spark.read.schema(schema).parquet(*uris)  # type: ignore[arg-type]
    return read_files(spark, files, schema)


# Stores whose Hadoop connector shows a created file before its bytes: created by rename.
RENAME_CREATES = ("hdfs", "abfs", "viewfs")


class HadoopLockFiles:
    """The run lock's files through the driver JVM's Hadoop FileSystem (run/output_lock.py
    LockFiles): `create` is FileSystem.create(path, overwrite=false), atomic on HDFS (the
    NameNode refuses an existing path), on GCS (the connector uploads with
    ifGenerationMatch=0) and on ABFS (If-None-Match: *): what pyarrow.fs cannot promise there.
    """

    def __init__(self, spark: SparkSession):
        self.spark = spark
        self.jvm = spark.sparkContext._jvm
        self.conf = _hadoop_conf(spark)

    def _path(self, f: Location):
        path = self.jvm.org.apache.hadoop.fs.Path(hadoop_uri(self.spark, f))
        return path, path.getFileSystem(self.conf)

    @staticmethod
    def _java(e: Exception) -> str:
        java = getattr(e, "java_exception", None)
        return str(java.getClass().getName()) if java is not None else ""

    def names(self, folder: Location) -> list[str]:
        path, fs = self._path(folder)
        if not fs.exists(path):
            return []
        return sorted(str(st.getPath().getName()) for st in fs.listStatus(path) if st.isFile())

    def read(self, f: Location) -> bytes:
        path, fs = self._path(f)
        try:
            stream = fs.open(path)
        except Exception as e:
            if self._java(e).endswith("FileNotFoundException"):
                raise FileNotFoundError(f.uri) from None
            raise
        try:
            size = int(fs.getFileStatus(path).getLen())
            buf = self.jvm.java.io.ByteArrayOutputStream()
            self.jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, buf, max(size, 1), False)
            return bytes(buf.toByteArray())
        finally:
            stream.close()

    def _put(self, f: Location, data: bytes, overwrite: bool) -> None:
        path, fs = self._path(f)
        out = fs.create(path, overwrite)
        try:
            out.write(bytearray(data))
        finally:
            out.close()  # the GCS connector's conditional upload happens here

    def write(self, f: Location, data: bytes) -> None:
        self._put(f, data, True)

    def create(self, f: Location, data: bytes) -> bool:
        """Only if absent, and visible only whole. GCS: the connector's conditional upload at
        close. HDFS and ABFS show a created file before its bytes are written, so the bytes go
        to a temporary file first, renamed onto the name: their rename refuses an existing
        target (HDFS's NameNode, ABFS's rename without overwrite)."""
        try:
            if f.scheme in RENAME_CREATES:
                return self._create_by_rename(f, data)
            self._put(f, data, False)
        except Exception as e:
            if self._java(e).endswith(("FileAlreadyExistsException",
                                       "PathExistsException")):  # fmt: skip
                return False
            raise
        return True

    def _create_by_rename(self, f: Location, data: bytes) -> bool:
        tmp = f.parent / f".{f.name}.{uuid.uuid4().hex[:12]}.tmp"
        self._put(tmp, data, False)
        path, fs = self._path(f)
        tmp_path, _ = self._path(tmp)
        try:
            return bool(fs.rename(tmp_path, path))  # False: the target exists
        finally:
            if fs.exists(tmp_path):
                fs.delete(tmp_path, False)

    def mtime(self, f: Location) -> float:
        path, fs = self._path(f)
        return int(fs.getFileStatus(path).getModificationTime()) / 1000.0

    def delete(self, f: Location) -> None:
        path, fs = self._path(f)
        fs.delete(path, True)


def lock_files(spark: SparkSession, out: Location):
    """How the run lock reaches `out`: None for pyarrow.fs (a local disk, S3), a
    HadoopLockFiles where only the cluster's connector can create atomically (gs://, hdfs://,
    abfs://); StorageError where neither can (the caller decides on output.single_writer)."""
    if out.can_lock:
        return None
    if hadoop_uri(spark, out) is None:
        raise StorageError(
            f"--output {out}: {out.scheme}:// offers no atomic create-if-absent through "
            "pyarrow.fs and this cluster has no Hadoop connector for it"
        )
    return HadoopLockFiles(spark)
