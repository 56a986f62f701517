"""Delta Lake logs that follow the commit: DIR/data/ and DIR/rejected/ are Delta tables whose
newest Delta version holds exactly the files of the output's current version.

The output's own commit (versions.py) stays the one truth across tables, token shards and
reports; the Delta log is written after it, from its file list (add actions with each file's
size and row count: the files are never rewritten or read), so a crash leaves a table at most
one version behind, never ahead, and the next run or `curate versions DIR --sync` catches up.
An appended version adds its new files; a whole new version removes the old ones and adds its
own (one Delta commit either way). Each Delta commit names the output version it holds in a
`txn` action (appId `curate-pipeline`, version N: Delta's own idempotence record, read back
with `DeltaTable.transaction_version`) and in its commitInfo; the output's side is
`versions/F/delta.json` ({table: Delta version}).

Each table's files lie under its root (data/F/...), so the log names them by relative paths
(what delta-rs, DuckDB and Trino read best) and a VACUUM on it reaches only that table's files:
those of older output versions and of crashed writers, once older than its retention (7 days
by default: longer than `output.keep_hours`). Minimal protocol (reader 1, writer 2): no
deletion vectors, column mapping or other table features, so DuckDB and Trino read it.

Anchors: Delta Lake's protocol (add/remove/txn actions, put-if-absent commits; delta-rs
commits on S3 with conditional PUTs, no DynamoDB since 1.x).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from urllib.parse import quote, unquote

import pyarrow.parquet as pq

from curate_pipeline.location import Location
from curate_pipeline.outputs.publish import versions

log = logging.getLogger(__name__)

APP = "curate-pipeline"  # the txn action's appId: its version is the output version held
TABLES = ("data", "rejected")  # what readers read (the dedup index is the pipeline's own)
SIDECAR = "delta.json"  # versions/F/delta.json: {table: the Delta version holding F's version}


class DeltaError(RuntimeError):
    """A Delta log could not be brought to the output's current version."""


def storage_options(root: Location) -> dict[str, str] | None:
    """What delta-rs needs beyond the AWS_* variables pyarrow.fs and boto3 read already: an
    http:// endpoint (a test server, MinIO) allowed."""
    import os

    if root.scheme == "s3" and os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        return {"AWS_ALLOW_HTTP": "true"}
    return None


def _table_uri(root: Location) -> str:
    return root.uri if root.is_local else root.uri.rstrip("/")


def open_table(root: Location):
    """The Delta table at `root`, or None where there is none yet."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(_table_uri(root), storage_options=storage_options(root))
    except TableNotFoundError:
        return None


def sync(out: Location | str, guard: Callable[[], None] | None = None) -> dict[str, int]:
    """Bring DIR/data/ and DIR/rejected/'s Delta logs to the output's current version (a
    no-op where they hold it already); returns {table: its Delta version}. Versions written
    before tables had roots of their own (layout 1) have no Delta tables."""
    out = Location.of(out)
    v = versions.current(out)
    if v.record.get("layout") != versions.LAYOUT:
        log.info("%s: version %d was written before Delta tables (no table roots)", out,
                 v.number)  # fmt: skip
        return {}
    done = {}
    for table in TABLES:
        entries = v.record.get("files", {}).get(table)
        if entries is not None:
            d = _patiently(lambda t=table, e=entries: _sync_table(out / t, v, e, guard))
            if d is not None:
                done[table] = d
    if done:
        (v.dir / SIDECAR).write_text(json.dumps(done, indent=2) + "\n")
    return done


def _sync_table(root: Location, v: versions.Version, entries: list[dict],
                guard: Callable[[], None] | None) -> int | None:  # fmt: skip
    from deltalake import Schema
    from deltalake.exceptions import CommitFailedError
    from deltalake.transaction import (
        AddAction,
        CommitProperties,
        Transaction,
        create_table_with_add_actions,
    )

    dt = open_table(root)
    if dt is not None and (dt.transaction_version(APP) or 0) >= v.number:
        return dt.version()  # holds this version (or a newer one a later writer synced)
    when = _millis(v.record.get("committed"))
    wanted = {e["file"]: e for e in entries}
    present = set()
    if dt is not None:
        paths = dt.get_add_actions(flatten=True).column("path").to_pylist()
        present = {unquote(p) for p in paths}
    appended = dt is not None and present <= set(wanted)
    adds = [AddAction(quote(f), int(e["bytes"]), {}, when, True,
                      json.dumps({"numRecords": int(e["rows"])}) if "rows" in e else "")
            for f, e in wanted.items() if not (appended and f in present)]  # fmt: skip
    commit = CommitProperties(
        custom_metadata={"curate.version": v.number, "curate.folder": v.dir.name},
        app_transactions=[Transaction(APP, v.number)],
    )
    if guard is not None:
        guard()
    try:
        if dt is None:
            if not wanted:
                return None  # no file and no table yet: nothing a reader could open
            schema = Schema.from_arrow(_schema(root / next(iter(wanted))))
            create_table_with_add_actions(_table_uri(root), schema, adds, mode="error",
                                          storage_options=storage_options(root),
                                          commit_properties=commit)  # fmt: skip
        elif appended:
            dt.create_write_transaction(adds, mode="append", schema=dt.schema(),
                                        commit_properties=commit)  # fmt: skip
        else:  # a whole new version: every file of the table's current one removed
            schema = (Schema.from_arrow(_schema(root / next(iter(wanted)))) if wanted
                      else dt.schema())  # fmt: skip
            dt.create_write_transaction(adds, mode="overwrite", schema=schema,
                                        commit_properties=commit)  # fmt: skip
    except CommitFailedError:  # another writer committed meanwhile: fine if it synced this far
        dt = open_table(root)
        if dt is None or (dt.transaction_version(APP) or 0) < v.number:
            raise
    dt = open_table(root)
    if dt is None or (dt.transaction_version(APP) or 0) < v.number:
        raise DeltaError(f"{root}: its Delta log does not hold version {v.number} after the "
                         "commit; rerun `curate versions DIR --sync`")  # fmt: skip
    log.info("%s: Delta version %d holds version %d (%d file(s) added)", root, dt.version(),
             v.number, len(adds))  # fmt: skip
    return dt.version()


# what delta-rs says of a store's passing trouble (retried); anything else fails at once
_TRANSIENT = ("slowdown", "503", "s3 error", "connection", "timed out", "reset", "broken pipe")


def _patiently(call):
    """A table's sync again while the store fails it for a while (delta-rs retries a 503,
    not a body cut short): safe, as a sync that finds its version in the log does nothing.
    Any other failure (a store delta-rs cannot reach: no credentials, an HDFS it cannot
    talk to) fails at once, saying how to go on."""
    from deltalake.exceptions import DeltaError as DeltaRsError

    from curate_pipeline.location import patiently

    def once():
        try:
            return call()
        except (DeltaRsError, OSError) as e:
            if any(t in str(e).lower() for t in _TRANSIENT):
                raise OSError(str(e)) from e  # patiently() tries again
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DeltaError(f"the Delta log could not be written ({first}): the version is "
                             "published; rerun `curate versions DIR --sync` once the store is "
                             "reachable, or set output.delta: false") from e  # fmt: skip

    return patiently(once)


def _schema(f: Location):
    with f.open_input() as fh:
        return pq.ParquetFile(fh).schema_arrow


def _millis(iso: str | None) -> int:
    try:
        return int(datetime.fromisoformat(str(iso)).timestamp() * 1000)
    except ValueError:
        return 0
