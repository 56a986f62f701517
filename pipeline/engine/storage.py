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
and the rows it wrote, counted by Spark as they pass (an observed metric, never a footer read
per file), which the caller lists in its marker; reads take an explicit list of files.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipeline.engine.parquet_source import read_files, write_files
from pipeline.location import Location, is_uri


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


def parquet_rows(files: list[Location]) -> list[int]:
    """Row counts from the files' footers (one small ranged read each)."""
    out = []
    for f in files:
        with f.open_input() as fh:
            out.append(pq.ParquetFile(fh).metadata.num_rows)
    return out


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
) -> Written:
    """Append `df` as Parquet files under `loc`. Nothing is committed here: the caller lists
    the files in its marker (files no marker lists are ignored by readers). `file_rows`: each
    file's rows too (from its footer through a Hadoop connector: for outputs of few files)."""
    spark = df.sparkSession
    counted = Observation()
    df = df.observe(counted, F.count(F.lit(1)).alias("rows"))
    uri = spark_io(spark, loc, mode)
    if uri is not None:
        before = {f.uri for f in loc.files()}
        writer = df.write.mode("append").option("compression", compression)
        if partition_by:
            writer = writer.partitionBy(partition_by)
        writer.parquet(uri)
        new = [(f, n) for f, n in loc.sized_files()
               if f.uri not in before and f.name.endswith(".parquet")]  # fmt: skip
        files = [{"file": f.relative_to(loc), "bytes": n} for f, n in new]
        if file_rows:
            for entry, rows in zip(files, parquet_rows([f for f, _ in new]), strict=True):
                entry["rows"] = rows
    else:  # the writers count rows and bytes
        files = write_files(df, loc, uuid.uuid4().hex[:12], compression, partition_by)
    return Written(files, int(counted.get["rows"]))


def read_parquet(
    spark: SparkSession, files: list[Location], schema: StructType, mode: str = "auto"
) -> DataFrame:
    """The rows of exactly these Parquet files, with `schema` (no inference, no listing)."""
    if not files:
        return spark.createDataFrame([], schema)
    uris = [spark_io(spark, f, mode) for f in files]
    if all(u is not None for u in uris):
        return spark.read.schema(schema).parquet(*uris)  # type: ignore[arg-type]
    return read_files(spark, files, schema)
