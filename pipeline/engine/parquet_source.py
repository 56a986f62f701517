"""Parquet at any `Location`, for Spark: a Python data source (Spark 4's DataSource API) that
reads and writes through `pyarrow.fs`, for stores the cluster has no Hadoop connector for
(pyspark ships none for S3, GCS or Azure).

Writing: each task streams its partition into Parquet files named with the write's id, the
partition and the task attempt (`part-00003-<write>-a<attempt>.parquet`), row groups of at
most GROUP_ROWS rows or GROUP_BYTES bytes, so attempts never overwrite each other and a
retried or speculative attempt's files are never mistaken for the winner's. Spark gives the
driver-side `commit` the messages of the successful attempts only; it writes
`_write-<write>.json` listing their files and rows, which the caller turns into its own
marker (run/stage_store.py): files no marker lists are invisible and are deleted later.
`partition_by` writes Hive-style `col=value/` folders without the column, as Spark does.

Reading: one partition per listed file (a caller passes the files its markers list, never a
folder listing), Arrow batches out, columns missing from a file as nulls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from pipeline.location import Location

NAME = "curate_parquet"
GROUP_ROWS = 100_000
GROUP_BYTES = 64 << 20
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Spark's folder name for a null value


def write_manifest_name(write_id: str) -> str:
    return f"_write-{write_id}.json"


@dataclass
class Written(WriterCommitMessage):
    files: list[dict] = field(default_factory=list)  # {"file", "bytes", "rows"}


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


class _Files:
    """One Parquet file per partition value, row groups buffered to a size."""

    def __init__(self, root: Location, stem: str, compression: str, partition_by: str | None):
        self.root, self.stem, self.compression = root, stem, compression
        self.partition_by = partition_by
        self.open: dict[object, tuple[str, object, pq.ParquetWriter, list, list]] = {}

    def _writer(self, value, schema: pa.Schema):
        if value not in self.open:
            folder = ""
            if self.partition_by:
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
        rest = batch.drop_columns([self.partition_by])
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


class _Writer(DataSourceArrowWriter):
    def __init__(self, options: dict):
        self.root = Location.of(options["path"])
        self.write_id = options["write_id"]
        self.compression = options.get("compression", "zstd")
        self.partition_by = options.get("partition_by") or None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        stem = f"part-{ctx.partitionId():05d}-{self.write_id}-a{ctx.taskAttemptId()}"
        files = _Files(self.root, stem, self.compression, self.partition_by)
        for batch in iterator:
            files.add(batch)
        return Written(files.close())

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = sorted((f for m in messages if isinstance(m, Written) for f in m.files),
                       key=lambda f: f["file"])  # fmt: skip
        (self.root / write_manifest_name(self.write_id)).write_text(json.dumps({"files": files}))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        for m in messages:
            if isinstance(m, Written):
                for f in m.files:
                    (self.root / f["file"]).delete()


class _Reader(DataSourceReader):
    def __init__(self, options: dict, schema: StructType):
        self.files = json.loads(options["files"])
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(f) for f in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        target = _arrow_schema(self.schema)
        with Location.of(partition.value).open_input() as fh:
            pf = pq.ParquetFile(fh)
            present = [n for n in target.names if n in pf.schema_arrow.names]
            for batch in pf.iter_batches(batch_size=8192, columns=present):
                cols = [
                    batch.column(f.name).cast(f.type) if f.name in present
                    else pa.nulls(batch.num_rows, f.type)
                    for f in target
                ]  # fmt: skip
                yield pa.RecordBatch.from_arrays(cols, schema=target)


class CurateParquet(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def writer(self, schema: StructType, overwrite: bool) -> _Writer:  # noqa: ARG002
        return _Writer(dict(self.options))

    def reader(self, schema: StructType) -> _Reader:
        return _Reader(dict(self.options), schema)
