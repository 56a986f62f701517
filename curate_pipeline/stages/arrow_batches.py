"""Shared plumbing: run a per-row Python function over Arrow batches inside `mapInArrow`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

# Flush a batch early once its binary/text columns reach this size (HTML rows are large).
MAX_BATCH_BYTES = 32 << 20


RowStep = Callable[[list[dict]], list[dict]]


def rows_to_batches(
    rows: Iterable[dict], schema: pa.Schema, max_rows: int, prepare: RowStep | None = None
) -> Iterator[pa.RecordBatch]:
    """Group row dicts into record batches of at most `max_rows` rows / ~MAX_BATCH_BYTES;
    `prepare` runs on each group's rows first (missing fields become nulls)."""
    buf: list[dict] = []
    size = 0
    for row in rows:
        buf.append(row)
        size += len(row.get("payload") or b"") + len(row.get("text") or "")
        if len(buf) >= max_rows or size >= MAX_BATCH_BYTES:
            yield text_bytes(pa.RecordBatch.from_pylist(prepare(buf) if prepare else buf,
                                                        schema=schema))  # fmt: skip
            buf, size = [], 0
    if buf:
        yield text_bytes(pa.RecordBatch.from_pylist(prepare(buf) if prepare else buf,
                                                    schema=schema))  # fmt: skip


def text_bytes(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with `text_bytes` (where its schema has it) set to each text's UTF-8 length,
    as the steps left it: what sizes data/'s files, stored so the corpus stages never read
    the text column for it."""
    i = batch.schema.get_field_index("text_bytes")
    if i < 0 or "text" not in batch.schema.names:
        return batch
    lengths = pc.binary_length(batch.column("text")).cast(pa.int64())
    return batch.set_column(i, batch.schema.field(i), lengths)


def map_batches(
    fn: RowStep, schema: pa.Schema
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A `mapInArrow` function applying `fn` to each batch's rows at once (for models that
    predict on lists), in and out as dicts."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                yield pa.RecordBatch.from_pylist(fn(batch.to_pylist()), schema=schema)

    return run


def with_fields(base: pa.Schema, fields: Sequence[pa.Field]) -> pa.Schema:
    """`base` plus `fields`, a field replacing a same-named one of `base`."""
    names = {f.name for f in fields}
    return pa.schema([f for f in base if f.name not in names] + list(fields))


def extended_schema(spark_schema, fields: list[pa.Field]) -> pa.Schema:
    """The Arrow schema of a DataFrame's rows plus `fields` (replacing same-named ones)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return with_fields(to_arrow_schema(spark_schema), fields)


def attach(df, table: pa.Table, on: str, key: str | None = None):
    """`df` with `table`'s other columns, from its row whose `key` (default `on`) equals the
    row's `on` (nulls where none does: a left join on unique keys). For a small table built on
    the driver: it ships with the tasks and each batch looks its keys up, so no join runs
    (no broadcast job) and the rows keep their order and partitions."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    key = key or on
    extra = [f for f in table.schema if f.name != key]
    schema = StructType([*df.schema.fields, *(StructField(f.name, from_arrow_type(f.type), True)
                                                for f in extra)])  # fmt: skip
    keys = table.column(key).combine_chunks()
    values = [table.column(f.name).combine_chunks() for f in extra]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            at = pc.index_in(batch.column(on), value_set=keys)
            added = [v.take(at) if len(keys) else pa.nulls(batch.num_rows, v.type) for v in values]
            names = [*batch.schema.names, *(f.name for f in extra)]
            yield pa.RecordBatch.from_arrays([*batch.columns, *added], names=names)

    return df.mapInArrow(run, schema)
