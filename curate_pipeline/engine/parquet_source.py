"""Parquet at any `Location`, for Spark: Python tasks that read and write through
`pyarrow.fs`, for stores the cluster has no Hadoop connector for (pyspark ships none for S3,
GCS or Azure). Built on `mapInArrow` (Spark 3.3+), so the same code runs on Spark 3.5 and 4.x.

Writing: each task streams its partition into Parquet files named with the write's id, the
partition and the task attempt (`part-00003-<write>-a<attempt>.parquet`), row groups of at
most GROUP_ROWS rows or GROUP_BYTES bytes, so attempts never overwrite each other and a
retried or speculative attempt's files are never mistaken for the winner's; an attempt that
fails or is interrupted deletes its files (a killed process cannot: its files stay unlisted
until the next commit there prunes them). Each task returns
one row per file it wrote; the driver collects the rows of the successful attempts only (what
Spark's result of a job is), which the caller lists in its own marker (run/stage_store.py):
files no marker lists are invisible and are deleted later. `partition_by` writes Hive-style
`col=value/` folders without the column, as Spark does.

Reading: one partition per listed file (a caller passes the files its markers list, never a
folder listing; each task gets its own file's name only), Arrow batches out, columns missing
from a file as nulls.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from curate_pipeline.location import Location

GROUP_ROWS = 100_000
GROUP_BYTES = 64 << 20
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Spark's folder name for a null value
NULL_ROUTE = "und"  # a routed file's folder for a null value (ISO 639: undetermined)
WRITTEN = pa.schema([("file", pa.string()), ("bytes", pa.int64()), ("rows", pa.int64())])


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


class _Files:
    """One Parquet file per partition value, row groups buffered to a size."""

    def __init__(self, root: Location, stem: str, compression: str, partition_by: str | None,
                 route: bool = False):  # fmt: skip
        self.root, self.stem, self.compression = root, stem, compression
        self.partition_by, self.route = partition_by, route
        self.open: dict[object, tuple[str, object, pq.ParquetWriter, list, list]] = {}

    def _writer(self, value, schema: pa.Schema):
        if value not in self.open:
            folder = ""
            if self.route:  # a plain folder per value; the files keep the column
                folder = f"{NULL_ROUTE if value is None else value}/"
            elif self.partition_by:
                folder = f"{self.partition_by}={NULL_PARTITION if value is None else value}/"
            rel = f"{folder}{self.stem}.parquet"
            stream = (self.root / rel).open_output()
            writer = pq.ParquetWriter(stream, schema, compression=self.compression)
            self.open[value] = (rel, stream, writer, [], [0, 0, 0])  # rows, buffered bytes, all
        return self.open[value]

    def add(self, batch: pa.RecordBatch) -> None:
        if not self.partition_by:
            self._buffer(None, batch)
            return
        col = batch.column(self.partition_by)
        rest = batch if self.route else batch.drop_columns([self.partition_by])
        for value in pc.unique(col).to_pylist():
            mask = pc.is_null(col) if value is None else pc.equal(col, value)
            self._buffer(value, rest.filter(pc.fill_null(mask, False)))

    def _buffer(self, value, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        rel, stream, writer, buffered, n = self._writer(value, batch.schema)
        buffered.append(batch)
        n[0] += batch.num_rows
        n[1] += batch.nbytes
        n[2] += batch.num_rows
        if n[0] >= GROUP_ROWS or n[1] >= GROUP_BYTES:
            writer.write_table(pa.Table.from_batches(buffered))
            buffered.clear()
            n[0] = n[1] = 0

    def close(self) -> list[dict]:
        out = []
        for rel, stream, writer, buffered, n in self.open.values():
            if buffered:
                writer.write_table(pa.Table.from_batches(buffered))
            writer.close()
            size = stream.tell()
            stream.close()
            out.append({"file": rel, "bytes": size, "rows": n[2]})
        return sorted(out, key=lambda f: f["file"])

    def abort(self) -> None:
        """A failed attempt: its files deleted, never given a footer (closing the
        ParquetWriter would make a cut file look whole)."""
        for rel, stream, _, _, _ in self.open.values():
            try:
                stream.close()
            except Exception:  # noqa: BLE001 (the stream may be broken: the delete still runs)
                pass
            try:
                (self.root / rel).delete()
            except OSError:
                pass
        self.open.clear()


def write_files(
    df: DataFrame,
    root: Location,
    write_id: str,
    compression: str,
    partition_by: str | None,
    route: bool = False,
) -> list[dict]:
    """Write `df` under `root`; returns the files of the successful attempts, {"file" (relative
    to root), "bytes", "rows"}, in name order. `route`: `partition_by`'s values name plain
    folders (`xx/`, FineWeb-2's layout) and the files keep the column, so every reader sees
    the same columns (Hive-style `col=xx/` folders with the column in the files too make
    Spark's and pandas' partition discovery fail on the duplicate)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        stem = f"part-{ctx.partitionId():05d}-{write_id}-a{ctx.taskAttemptId()}"
        files = _Files(root, stem, compression, partition_by, route)
        try:
            for batch in batches:
                files.add(batch)
            written = files.close()
        except BaseException:  # a failed or interrupted attempt leaves no file behind
            files.abort()
            raise
        yield pa.RecordBatch.from_pylist(written, schema=WRITTEN)

    rows = df.mapInArrow(run, from_arrow_schema(WRITTEN)).collect()
    return sorted((r.asDict() for r in rows), key=lambda f: f["file"])


def read_files(spark: SparkSession, files: list[Location], schema: StructType) -> DataFrame:
    """The rows of these Parquet files with `schema`, one partition per file."""
    target = _arrow_schema(schema)
    uris = [f.uri for f in files]
    listing = spark.createDataFrame(
        spark.sparkContext.parallelize([(u,) for u in uris], len(uris)), "file string"
    )

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for listed in batches:
            for uri in listed.column("file").to_pylist():
                with Location.of(uri).open_input() as fh:
                    pf = pq.ParquetFile(fh)
                    present = [n for n in target.names if n in pf.schema_arrow.names]
                    for batch in pf.iter_batches(batch_size=8192, columns=present):
                        cols = [
                            batch.column(f.name).cast(f.type) if f.name in present
                            else pa.nulls(batch.num_rows, f.type)
                            for f in target
                        ]  # fmt: skip
                        yield pa.RecordBatch.from_arrays(cols, schema=target)

    return listing.mapInArrow(run, schema)
