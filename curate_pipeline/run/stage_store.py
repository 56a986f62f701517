"""Stage outputs with completion markers, so a rerun resumes where it stopped, on any store.

A piece of work (a chunk of the documents pass, a corpus stage) is a folder of Parquet files
and its marker `_STAGE.json`, written last, which names the fingerprint it was made with and
lists its files and bytes, and the rows they hold (as Spark counted them while writing).
Readers take only the files a marker lists, so a half-written attempt is invisible; no rename
is needed, which object stores do not have.
Committing a new version writes its files beside the old ones (names unique per write), then
the marker, then deletes what the marker does not list. Starting a piece over deletes its
marker first, then its files. A different fingerprint, or `--force`, reruns the stage.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from curate_pipeline.engine.storage import Written, read_parquet, write_parquet
from curate_pipeline.location import Location
from curate_pipeline.markers import MARKER, listed_files, read_marker


@dataclass
class StageResult:
    name: str
    path: str
    status: str  # "ran" or "reused"
    seconds: float
    rows: int
    files: list[str] | None = None  # its files, relative to path (as its marker lists them)


def commit(path: Location, marker: dict, written: Written, guard=None) -> dict:
    """Write the marker listing the `written` files (its commit), then delete every file it
    does not list (an earlier version's, or a failed attempt's). `guard()` runs first (the
    run's lease)."""
    if guard is not None:
        guard()
    marker = {**marker, "rows": written.rows, "files": written.files,
              "bytes": sum(f["bytes"] for f in written.files)}  # fmt: skip
    (path / MARKER).write_text(json.dumps(marker, indent=2))
    prune(path, written.files, keep=(MARKER,))
    return marker


def prune(path: Location, files: list[dict], keep: tuple[str, ...] = ()) -> None:
    """Delete everything under `path` but `files` and `keep`: an earlier version's, the
    files of task attempts that failed or lost a race, a killed writer's whole attempt
    folder (none of them is ever listed). A folder nothing listed lies in goes at once."""
    names = {f["file"] for f in files} | set(keep)
    tops = {n.split("/", 1)[0] for n in names}
    for entry in path.names():
        if entry not in tops:
            (path / entry).delete()
    listed = {(path / n).uri for n in names}
    for top in sorted(t for t in tops if any(n.startswith(t + "/") for n in names)):
        for f in (path / top).files():
            if f.uri not in listed:
                f.delete()


def write_guarded(df: DataFrame, path: Location, compression: str, io: str,
                  partition_by: str | None = None,
                  guard: Callable[[], None] | None = None) -> Written:  # fmt: skip
    """write_parquet into a folder of this write's own under `path`; a write that fails
    because the run lost its lock meanwhile (its successor cleared the attempt's files) says
    so (OutputBusy from `guard()`), not with the store's error."""
    try:
        return write_parquet(df, path, compression, io, partition_by, own_folder=True)
    except Exception:
        if guard is not None:
            guard()
        raise


def start_over(path: Location) -> None:
    """Forget a piece of work: its marker first, so no reader trusts what is left."""
    (path / MARKER).delete()
    path.delete()


def materialize(
    spark: SparkSession,
    name: str,
    path: Location | str,
    fingerprint: str,
    build: Callable[[], DataFrame],
    compression: str,
    force: bool = False,
    io: str = "auto",
    partition_by: str | None = None,
    guard: Callable[[], None] | None = None,
) -> tuple[DataFrame, StageResult]:
    """Write `build()` to `path` unless a complete output with this fingerprint exists
    (`partition_by`: in Hive-style folders of that column, which the rows read back lack).
    `guard()` (the run's lock) runs before it starts over, writes and commits."""
    path = Location.of(path)
    marker = read_marker(path)
    if not force and marker and marker.get("fingerprint") == fingerprint:
        schema = _schema(marker)
        df = read_parquet(spark, listed_files(path, marker), schema, io)
        return df, StageResult(name, str(path), "reused", 0.0, int(marker["rows"]),
                               [f["file"] for f in marker["files"]])  # fmt: skip
    if guard is not None:
        guard()
    # No start-over: the new files are written beside whatever is there, the new marker
    # replaces the old one and only then are the old files deleted (commit). A writer that
    # lost its lock while paused past this point has deleted nothing of its successor's.
    t0 = time.perf_counter()
    built = build()
    if guard is not None:
        guard()
    written = write_guarded(built, path, compression, io, partition_by, guard)
    seconds = time.perf_counter() - t0
    schema = built.drop(partition_by).schema if partition_by else built.schema
    marker = commit(path, {"stage": name, "fingerprint": fingerprint, "seconds": seconds,
                           "schema": schema.json()}, written, guard)  # fmt: skip
    # with the schema given, reading back needs no job to infer it from the files' footers
    df = read_parquet(spark, listed_files(path, marker), schema, io)
    return df, StageResult(name, str(path), "ran", seconds, int(marker["rows"]),
                           [f["file"] for f in marker["files"]])  # fmt: skip


def _schema(marker: dict):
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(marker["schema"]))
