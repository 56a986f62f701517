"""Stage `read`: WARC files to one row per record, streamed, in byte-range splits."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
from pyspark import Accumulator, AccumulatorParam
from pyspark.sql import DataFrame, SparkSession

from curate_pipeline.config import Config
from curate_pipeline.document.text_inputs import (
    is_parquet,
    is_text_input,
    iter_jsonl_rows,
    iter_parquet_rows,
)
from curate_pipeline.document.warc.records import RecordPolicy, file_error_row, iter_warc_rows
from curate_pipeline.document.warc.splits import GZIP_MAGIC, find_member_start, split_range
from curate_pipeline.document.warc.streams import (
    MissingInput,
    TransportError,
    file_size,
    open_stream,
)
from curate_pipeline.location import Location
from curate_pipeline.stages.arrow_batches import rows_to_batches
from curate_pipeline.stages.schema import RECORD_SCHEMA, spark_schema


class UnreadableInput(RuntimeError):
    pass


class Paths(AccumulatorParam):
    """A list accumulator: the paths the tasks report (a task's updates count once)."""

    def zero(self, value: list[str]) -> list[str]:
        return []

    def addInPlace(self, a: list[str], b: list[str]) -> list[str]:  # noqa: N802 (pyspark's)
        a.extend(b)
        return a


def opens_now(path: str, cfg: Config) -> bool:
    """Whether `path` opens now (one small read): a file a run could not open may be there
    on the next."""
    try:
        with _open(path, cfg, 0, probe=True) as fh:
            fh.read(1)
        return True
    except OSError:  # still missing, or the network failing: the stored verdict stands
        return False


def _open(path: str, cfg: Config, start: int = 0, probe: bool = False):
    return open_stream(
        path,
        retries=cfg.input.http_retries,
        backoff_s=cfg.input.http_backoff_s,
        timeout_s=cfg.input.http_timeout_s,
        start=start,
        probe=probe,
    )


def split_bounds(path: str, cfg: Config, split: int, nsplits: int) -> tuple[int, int] | None:
    """(start, end) bytes of this split's records, or None when the split holds none.

    Only gzip files whose size is known are split; otherwise split 0 takes the whole file.
    """
    size = None
    if nsplits > 1:
        i = cfg.input
        size = file_size(path, i.http_timeout_s, i.http_retries, i.http_backoff_s)
    if size is not None:
        with _open(path, cfg, probe=True) as fh:
            gzipped = fh.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    if size is None or not gzipped:
        return (0, -1) if split == 0 else None  # split 0 reads the whole file
    lo, hi = split_range(size, split, nsplits)
    if split:
        with _open(path, cfg, lo, probe=True) as fh:
            start = find_member_start(fh, lo, hi)
        if start is None:
            return None
    else:
        start = 0
    end = None
    if split < nsplits - 1:
        with _open(path, cfg, hi, probe=True) as fh:
            end = find_member_start(fh, hi, size)
    return start, -1 if end is None else end  # -1: to the end of the file


def read_file_rows(
    index: int,
    path: str,
    cfg: Config,
    split: int = 0,
    nsplits: int = 1,
    unopened: Callable[[str], None] | None = None,
) -> Iterator[dict]:
    """The rows of one file, or of one byte-range split of it (see warc/splits.py).

    A file that is not there (MissingInput: no such file, HTTP 4xx, no permission) is one
    ledger row, from split 0, or by policy an error. A network failure (TransportError) fails
    the task, which Spark runs again: it is never a verdict on the data. So does any other
    failure to open a split after the first, since a split that quietly yielded nothing would
    lose its records without a trace. `unopened(path)` is told of a file that could not be
    opened (a rerun tries it again: it may be there by then).
    """
    rows = (_text_file_rows if is_text_input(path) else _archive_rows)(
        index, path, cfg, split, nsplits, unopened
    )
    for row in rows:
        if row["reject_reason"] == "unreadable_file" and cfg.input.on_unreadable == "fail":
            raise UnreadableInput(
                f"input {path}: {row['reject_detail']} "
                "(set input.on_unreadable: record to keep going past broken files)"
            )
        yield row


def _archive_rows(
    index: int, path: str, cfg: Config, split: int, nsplits: int,
    unopened: Callable[[str], None] | None,
) -> Iterator[dict]:  # fmt: skip
    """The rows of a WARC/ARC/WET file's split (curate_pipeline/document/warc/records.py)."""
    policy = RecordPolicy.from_conf(cfg.read)
    try:
        bounds = split_bounds(path, cfg, split, nsplits)
        if bounds is None:
            return
        start, end = bounds
        stream = _open(path, cfg, start)
    except TransportError:
        raise
    except OSError as e:
        yield from _not_opened(e, index, path, cfg, split, nsplits, unopened)
        return
    limit = None if end < 0 else end - start
    with stream:
        yield from iter_warc_rows(
            stream, index, path, policy, base=start, limit=limit,
            reopen=lambda offset: _open(path, cfg, offset),
        )  # fmt: skip


def _not_opened(
    e: OSError, index: int, path: str, cfg: Config, split: int, nsplits: int,
    unopened: Callable[[str], None] | None,
) -> Iterator[dict]:  # fmt: skip
    """A file that cannot be opened: one ledger row from split 0 (or the run fails, by
    input.on_unreadable); a later split that cannot open it fails its task."""
    if split and isinstance(e, MissingInput):
        return  # not there for any split: split 0 records it
    if split:
        raise TransportError(
            f"{path}: split {split} of {nsplits} cannot be opened ({e}); the file changed "
            "or vanished during the run"
        ) from e
    if cfg.input.on_unreadable == "fail":
        raise UnreadableInput(
            f"input {path} cannot be opened: {e} "
            "(fix the path, or set input.on_unreadable: record to skip it)"
        ) from e
    if unopened is not None:
        unopened(path)
    yield file_error_row(index, path, "unreadable_file", f"{type(e).__name__}: {e}"[:500])


def _parquet_file(path: str, cfg: Config):
    """A Parquet file opened for random access (its footer, then row groups): through the
    store's filesystem, or for an http(s) URL a local copy (pyarrow reads no HTTP)."""
    import pyarrow.parquet as pq

    if path.startswith(("http://", "https://")):
        import shutil
        import tempfile

        local = tempfile.TemporaryFile()  # noqa: SIM115  closed with the ParquetFile's reader
        with _open(path, cfg) as fh:
            shutil.copyfileobj(fh, local, 1 << 20)
        local.seek(0)
        return pq.ParquetFile(local)
    filesystem, inner = Location.of(path).fs()
    try:
        handle = filesystem.open_input_file(inner)
    except FileNotFoundError as e:
        raise MissingInput(f"{path}: {e}") from e
    return pq.ParquetFile(handle)


def _text_file_rows(
    index: int, path: str, cfg: Config, split: int, nsplits: int,
    unopened: Callable[[str], None] | None,
) -> Iterator[dict]:  # fmt: skip
    """The rows of a text dataset file (curate_pipeline/document/text_inputs.py): a JSONL file is
    read whole by split 0; a Parquet file's row groups are shared among the splits (over
    http(s), which pyarrow cannot seek, split 0 copies it once and reads it all)."""
    import pyarrow as pa

    max_bytes = cfg.read.max_record_bytes
    if not is_parquet(path):
        if split:
            return
        try:
            stream = _open(path, cfg)
        except TransportError:
            raise
        except OSError as e:
            yield from _not_opened(e, index, path, cfg, split, nsplits, unopened)
            return
        with stream:
            yield from iter_jsonl_rows(stream, index, path, max_bytes)
        return
    if path.startswith(("http://", "https://")):  # one local copy, read by split 0 alone
        if split:
            return
        split, nsplits = 0, 1
    try:
        pf = _parquet_file(path, cfg)
    except TransportError:
        raise
    except pa.ArrowInvalid as e:  # not Parquet: the data, not the environment
        if split == 0:
            yield file_error_row(index, path, "unreadable_file", f"not Parquet: {e}"[:500])
        return
    except OSError as e:
        yield from _not_opened(e, index, path, cfg, split, nsplits, unopened)
        return
    with pf:
        yield from iter_parquet_rows(pf, index, path, max_bytes, split, nsplits)


Piece = tuple[int, str, int, int]  # file index, path, split, splits of that file


def plan_tasks(files: list[str], splits_per_file: int, first_index: int = 0,
               sizes: dict[str, int] | None = None,
               pack_bytes: int = 0) -> list[list[Piece]]:  # fmt: skip
    """What each reading task reads, in crawl order: a file of `pack_bytes` or more (or of
    unknown size) as `splits_per_file` byte ranges, a task each; smaller files whole, packed
    with the files after them into one task until it holds `pack_bytes` (500 files of a few
    KB were 500 tasks of ~0.13 s overhead each, and 500 files of the documents store)."""
    sizes = sizes or {}
    tasks: list[list[Piece]] = []
    pack: list[Piece] = []
    held = 0
    for i, path in enumerate(files, first_index):
        size = sizes.get(path)
        if pack_bytes and size is not None and size < pack_bytes:
            pack.append((i, path, 0, 1))
            held += size
            if held >= pack_bytes:
                tasks.append(pack)
                pack, held = [], 0
            continue
        if pack:
            tasks.append(pack)
            pack, held = [], 0
        tasks.extend([(i, path, k, splits_per_file)] for k in range(splits_per_file))
    if pack:
        tasks.append(pack)
    return tasks


def read_warcs(
    spark: SparkSession,
    files: list[str],
    cfg: Config,
    splits_per_file: int = 1,
    then: Callable[[dict], dict] | None = None,
    schema: pa.Schema = RECORD_SCHEMA,
    prepare: Callable[[list[dict]], list[dict]] | None = None,
    first_index: int = 0,
    unopened: Accumulator | None = None,
    sizes: dict[str, int] | None = None,
    pack_bytes: int = 0,
) -> DataFrame:
    """A DataFrame with a row for every record of `files` (`first_index` + position = the
    file's index in the crawl order, the high part of `crawl_pos`).

    Each file is read by `splits_per_file` tasks, each streaming its own byte range, so one
    large file keeps every core busy with no shuffle; files smaller than `pack_bytes`
    (`sizes`: bytes by path, where known) are read whole, several to a task (plan_tasks).
    `then`, applied to each row inside the
    same task, lets the next stage consume the raw payload before it ever reaches the JVM;
    `prepare` then runs on each batch of rows (see rows_to_batches). `unopened`, a list
    accumulator, collects the files that could not be opened.
    """
    tasks = plan_tasks(files, splits_per_file, first_index, sizes or {}, pack_bytes)
    # One task per entry of `tasks`: a JVM range of one id per partition, looked up in the
    # broadcast list in the task (each executor fetches it once, not every task with its
    # closure). A DataFrame made from a Python RDD would run a second Python worker beside
    # each reading task, just to hand it its line: measured 4 workers on 2 cores, +430 MiB.
    listing = spark.range(0, len(tasks), 1, numPartitions=max(1, len(tasks)))
    planned = spark.sparkContext.broadcast(tasks)
    max_rows = cfg.spark.arrow_batch_rows
    tell = None if unopened is None else (lambda path: unopened.add([path]))

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[dict]:
            for batch in batches:
                for task_id in batch.column("id").to_pylist():
                    for file_index, path, split, nsplits in planned.value[task_id]:
                        for row in read_file_rows(file_index, path, cfg, split, nsplits, tell):
                            yield then(row) if then else row

        yield from rows_to_batches(rows(), schema, max_rows, prepare)

    return listing.mapInArrow(read_partition, spark_schema(schema))
