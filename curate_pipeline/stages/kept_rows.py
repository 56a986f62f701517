"""The documents the corpus stages kept, as whole rows, without moving the rows.

The corpus stages (exact and near dedup) decide from narrow columns: crawl position, id, URL,
input file, their key or signature (`narrow`). What they add to a document they keep (its copy
count, its cluster) comes back to the document's row here, not the row to them:

1. `write_lookup`: the kept narrow rows (crawl_pos and the columns the stages added, ~20
   bytes a document) go to a lookup store, one folder per group of consecutive input files
   (`grp=K/`), sorted by crawl_pos: a shuffle of narrow rows only.
2. `merge`: the documents' rows are read where the documents pass wrote them; each task looks
   up the kept crawl positions of the input files its rows come from (a group's file, row
   groups outside the file's range skipped, a few files' lookups cached), keeps the rows found
   there with the added columns, and runs the final per-document steps on them (the
   tokenizer: after the last drop, so no document later dropped is tokenized). Map-only: the
   text never crosses a shuffle, and the task's memory holds one input file's lookup.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from curate_pipeline.document.warc.records import OFFSET_BITS
from curate_pipeline.engine.compat import repartition_by_id
from curate_pipeline.engine.storage import partition_value, write_parquet
from curate_pipeline.location import Location
from curate_pipeline.stages.arrow_batches import extended_schema
from curate_pipeline.stages.schema import REJECT_FIELDS, spark_schema
from curate_pipeline.stages.step import Running, run_steps

# What a corpus stage reads besides its own key columns, and what the ledger needs of a drop;
# text_bytes (the text's length) sizes data/'s files.
NARROW = ("doc_id", "crawl_pos", "url", "warc_file", *(f.name for f in REJECT_FIELDS))
GROUP = "grp"
DATA_GROUP = "dgrp"  # the data/ file a kept row goes to
CACHED_FILES = 4  # input files' lookups a task keeps (its rows come from one or a few)
# Up to this many rows in a run, the lookup is collected and shipped with the tasks instead
# of written (~30 bytes a kept row: 3 MB at the cap), data/'s groups cut from the same rows.
LOCAL_LOOKUP_ROWS = 100_000


def narrow(docs: DataFrame, keys: Sequence[str]) -> DataFrame:
    """The columns the corpus stages move: NARROW, the text's length (stored by the documents
    pass: the text column is never read here), and their keys (`keys` present in docs)."""
    length = (F.col("text_bytes") if "text_bytes" in docs.columns  # stored by the pass
              else F.octet_length("text").cast("long").alias("text_bytes"))  # fmt: skip
    return docs.select(*NARROW, length, *[k for k in keys if k in docs.columns])


def data_groups(kept: DataFrame, n_inputs: int, text_per_file: float, files: int = 0
                ) -> list[int]:  # fmt: skip
    """data/'s files as runs of consecutive input files: boundaries b (file indexes; group k
    holds files b[k] <= i < b[k+1]), cut where the kept text reaches `text_per_file` (or into
    `files` runs of about equal text). From narrow rows: one sum per input file."""
    per_file = np.zeros(n_inputs, dtype=np.int64)
    sums = kept.groupBy(F.shiftright("crawl_pos", OFFSET_BITS).alias("f")).agg(
        F.sum("text_bytes").alias("b")
    )
    for r in sums.collect():
        per_file[int(r["f"])] = int(r["b"] or 0)
    return cut_groups(per_file, text_per_file, files)


def text_per_input(rows: pa.Table, n_inputs: int) -> np.ndarray:
    """The kept text's bytes per input file, from collected (crawl_pos, text_bytes) rows."""
    fi = rows.column("crawl_pos").to_numpy() >> OFFSET_BITS
    b = pc.fill_null(rows.column("text_bytes"), 0).to_numpy()
    return np.bincount(fi, weights=b, minlength=n_inputs).astype(np.int64)


def cut_groups(per_file: np.ndarray, text_per_file: float, files: int = 0) -> list[int]:
    """data_groups' boundaries from the kept text per input file."""
    n_inputs = len(per_file)
    if files:
        text_per_file = max(1.0, per_file.sum() / files)
    bounds, acc = [0], 0
    for i, b in enumerate(per_file):
        if acc and acc + b > text_per_file and (not files or len(bounds) < files):
            bounds.append(i)
            acc = 0
        acc += int(b)
    bounds.append(n_inputs)
    return bounds


def added_columns(last: DataFrame, given: Sequence[str]) -> list[str]:
    """The columns the corpus stages added to the narrow rows they were `given`."""
    return [c for c in last.columns if c not in given]


def lookup_groups(n_inputs: int, cores: int) -> int:
    """Lookup folders: about 2 per core (each a shuffle partition), never more than files."""
    return max(1, min(n_inputs, 2 * cores))


def write_lookup(
    kept: DataFrame,
    columns: Sequence[str],
    loc: Location,
    n_inputs: int,
    groups: int,
    compression: str,
    io: str,
) -> dict[int, list[str]]:
    """Write the kept rows' crawl_pos and `columns` under `loc`; returns group -> file URIs."""
    file_index = F.shiftright("crawl_pos", OFFSET_BITS)
    group = F.floor(file_index * F.lit(groups) / F.lit(n_inputs)).cast("int")
    narrow = kept.select("crawl_pos", *columns).withColumn(GROUP, group)
    rows = repartition_by_id(narrow, groups, GROUP).sortWithinPartitions("crawl_pos")
    written = write_parquet(rows, loc, compression, io, partition_by=GROUP)
    out: dict[int, list[str]] = {}
    for f in written.files:
        out.setdefault(int(partition_value(f["file"], GROUP)), []).append((loc / f["file"]).uri)
    return out


def group_of(file_index: int, groups: int, n_inputs: int) -> int:
    return file_index * groups // n_inputs


def _load(files: Sequence[str], file_index: int, schema: pa.Schema) -> pa.Table:
    """The lookup rows of one input file: the row groups whose crawl_pos range meets it."""
    lo, hi = file_index << OFFSET_BITS, (file_index + 1) << OFFSET_BITS
    parts = []
    for uri in files:
        with Location.of(uri).open_input() as fh:
            pf = pq.ParquetFile(fh)
            col = pf.schema_arrow.get_field_index("crawl_pos")
            for i in range(pf.metadata.num_row_groups):
                stats = pf.metadata.row_group(i).column(col).statistics
                if stats is not None and stats.has_min_max and (stats.max < lo or stats.min >= hi):
                    continue
                t = pf.read_row_group(i)
                pos = t.column("crawl_pos")
                kept = t.filter(pc.and_(pc.greater_equal(pos, lo), pc.less(pos, hi)))
                parts.append(kept.select(schema.names).cast(schema))
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts).sort_by("crawl_pos")


def merge(
    docs: DataFrame,
    lookup: dict[int, list[str]] | pa.Table | None,
    columns: Sequence[pa.Field],
    n_inputs: int,
    groups: int,
    steps: Sequence[Running],
    fields: Sequence[pa.Field],
    bounds: Sequence[int] | None = None,
) -> DataFrame:
    """`docs` rows whose crawl_pos the lookup holds (all of them with no lookup: no corpus
    stage ran; the lookup is write_lookup's files, or for a small run the table itself,
    sorted by crawl_pos, shipped with the tasks), with the lookup's `columns`, then the final
    `steps` (their `fields` added), and with `bounds` (data_groups) the data/ file of each
    row (DATA_GROUP). Rows come out in the order they came in."""
    extra = [pa.field(DATA_GROUP, pa.int32())] if bounds is not None else []
    schema = extended_schema(docs.schema, [*columns, *fields, *extra])
    edges = np.asarray(bounds if bounds is not None else [0], dtype=np.int64)
    looked = pa.schema([pa.field("crawl_pos", pa.int64()), *columns])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        cache: OrderedDict[int, pa.Table] = OrderedDict()

        def lookup_of(fi: int) -> pa.Table:
            if isinstance(lookup, pa.Table):  # shipped with the task (sorted by crawl_pos)
                keys = lookup.column("crawl_pos").to_numpy()
                lo, hi = np.searchsorted(keys, [fi << OFFSET_BITS, (fi + 1) << OFFSET_BITS])
                return lookup.slice(int(lo), int(hi - lo)).select(looked.names).cast(looked)
            if fi not in cache:
                cache[fi] = _load(lookup.get(group_of(fi, groups, n_inputs), []), fi, looked)
                if len(cache) > CACHED_FILES:
                    cache.popitem(last=False)
            cache.move_to_end(fi)
            return cache[fi]

        for batch in batches:
            if not batch.num_rows:
                continue
            if lookup is None:
                rows = batch
                yield from finish(rows)
                continue
            pos = batch.column("crawl_pos").to_numpy()
            found = [lookup_of(int(fi)) for fi in np.unique(pos >> OFFSET_BITS)]
            table = pa.concat_tables(found) if len(found) > 1 else found[0]
            keys = table.column("crawl_pos").to_numpy()
            at = np.minimum(np.searchsorted(keys, pos), max(len(keys) - 1, 0))
            hit = (keys[at] == pos) if len(keys) else np.zeros(len(pos), dtype=bool)
            if not hit.any():
                continue
            rows = batch.filter(pa.array(hit))
            taken = table.take(pa.array(at[hit]))
            for f in columns:
                rows = rows.append_column(f, taken.column(f.name).combine_chunks().cast(f.type))
            yield from finish(rows)

    def finish(rows: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        if bounds is not None:
            fi = rows.column("crawl_pos").to_numpy() >> OFFSET_BITS
            group = np.searchsorted(edges, fi, side="right") - 1
            rows = rows.append_column(extra[0], pa.array(group.astype(np.int32)))
        if steps:
            dicts = rows.to_pylist()
            run_steps(dicts, steps)
            yield pa.RecordBatch.from_pylist(dicts, schema=schema)
        else:
            yield pa.RecordBatch.from_arrays(
                [rows.column(n) if n in rows.schema.names else pa.nulls(rows.num_rows, t)
                 for n, t in zip(schema.names, schema.types, strict=True)], schema=schema,
            )  # fmt: skip

    return docs.mapInArrow(run, spark_schema(schema))
