"""An output is a versioned dataset: each run (or `curate serve` cycle) publishes a version.

  DIR/data/FFFFFFFFFFFF/       one writer's kept documents; DIR/data/ is a Delta table's root
  DIR/rejected/FFFFFFFFFFFF/   its ledger (a Delta table too), DIR/index/...: its dedup index
  DIR/versions/FFFFFFFFFFFF/   its other files: shards/, tokens/, budget.json, manifest.json,
                               report.html, report.json
  DIR/_versions/NNNNNNNNNNNN.json   version N's commit: the one list of what it holds

Each table's files lie under its own root (DIR/data/, DIR/rejected/), so a Delta log there
(publish/delta.py) names them by relative paths and a VACUUM on it touches nothing else.

The protocol (Delta Lake's log): a version's number is its place in the log. A writer reads
the newest committed number V when it starts (its base) and publishes V+1 by creating
`_versions/V+1.json` only if absent, atomically and whole (a link on a disk, one conditional
PUT on S3, create-without-overwrite through a Hadoop connector, a rename that refuses an
existing target on HDFS): two writers with the same base cannot both publish, and the one that
loses learns it from the store, not from a client-side check. A writer never rebases: it fails
with one line and publishes nothing. A record created in a gap left by pruning (a writer whose
base is older than the two newest) sees a newer number right after and withdraws itself
before any reader takes it as current (readers take the newest).

A writer's files go in a folder of its own, named by its lock generation (unique, never
reused), which nothing lists until a commit record names it (`path`); so a writer that lost
the output never writes into another's folder. The current version is the newest decodable
commit; readers (the dataset card, `curate report`, `explore`, `tokens`, serve) read it and
nothing else. A published version's files are never rewritten; old versions are removed
past `output.keep_versions` and `output.keep_hours` (never the card's, never the one current
before the newest), their commit record first.

Anchors: Delta Lake's log (`_delta_log/NNNN.json`, put-if-absent), Iceberg's metadata swap.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from curate_pipeline.location import Location, NoExclusiveCreate

log = logging.getLogger(__name__)

VERSIONS = "versions"  # DIR/versions/FFFFFFFFFFFF/: a writer's files but its tables'
# DIR/<table>/FFFFFFFFFFFF/: a writer's rows of each table (a commit's `files` entries name
# them relative to DIR/<table>/ in records of layout 2; earlier ones: versions/F/<table>/)
TABLES = ("data", "rejected", "index")
LAYOUT = 2
COMMITS = "_versions"  # DIR/_versions/NNNNNNNNNNNN.json: the commit records
# What an output held at its top before versions (published in place): a versioned run
# removes these once it has committed, so no reader mistakes them for the current data.
# (data/ and rejected/ keep only their writer folders and Delta log: the tables' roots now)
LEGACY = ("data", "rejected", "shards", "tokens", "manifest.json", "budget.json",
          "report.html", "report.json")  # fmt: skip


class NoVersion(FileNotFoundError):
    """The output holds no committed version (no run finished there)."""


class VersionConflict(RuntimeError):
    """Another writer committed this version number: this writer lost the output."""


def name(number: int) -> str:
    return f"{number:012d}"


def folder(out: Location | str, writer: int) -> Location:
    """The folder of the writer with this lock generation (versions/FFFFFFFFFFFF)."""
    return Location.of(out) / VERSIONS / name(writer)


def table_folder(vdir: Location, table: str) -> Location:
    """Where the writer of version folder `vdir` (DIR/versions/F) writes `table`: DIR/table/F."""
    return vdir.parent.parent / table / vdir.name


def _writer_folders(out: Location) -> dict[str, list[Location]]:
    """Every writer folder there, by name: versions/F and the tables' F folders."""
    found: dict[str, list[Location]] = {}
    for top in (VERSIONS, *TABLES):
        for n in (out / top).names():
            if n.isdigit():
                found.setdefault(n, []).append(out / top / n)
    return found


def newest(out: Location | str) -> int:
    """The newest committed number (0: none): a writer's base; it publishes one past it."""
    return max([0, *committed(out)])


def committed(out: Location | str) -> list[int]:
    """The committed versions' numbers, oldest first (one listing)."""
    return sorted(
        int(n[:-5]) for n in (Location.of(out) / COMMITS).names()
        if n.endswith(".json") and n[:-5].isdigit()
    )  # fmt: skip


@dataclass(frozen=True)
class Version:
    number: int
    dir: Location  # DIR/versions/<its writer's folder>
    record: dict  # its commit record

    @property
    def manifest(self) -> dict:
        return json.loads((self.dir / "manifest.json").read_text())

    @property
    def budget(self) -> dict:
        return json.loads((self.dir / "budget.json").read_text())

    def files(self, sub: str) -> list[Location]:
        """What the version holds in `sub` (data, rejected, index, shards): the files its
        commit lists, its own and those it took over from earlier versions (appended)."""
        return listed(self.dir, self.record, sub)


def listed(vdir: Location, listing: dict, sub: str) -> list[Location]:
    """The files of `sub` a commit record or manifest (`listing`) of version folder `vdir`
    lists: a table's relative to the table's root (layout 2), others by `locate`."""
    entries = listing.get("files", {}).get(sub, [])
    if sub in TABLES and listing.get("layout") == LAYOUT:
        return [vdir.parent.parent / sub / f["file"] for f in entries]
    return [locate(vdir, sub, f) for f in entries]


def locate(vdir: Location, sub: str, entry: dict) -> Location:
    """A file a version lists (its commit's or manifest's `files`, its token index's
    `shards`): `entry["file"]` in the version's `sub`/, or in version `entry["version"]`'s
    when an appended version took it over from an earlier one (never copied)."""
    if "version" not in entry:
        home = vdir
    else:  # its folder; a version's number before folders were named by writers
        home = vdir.parent / str(entry.get("dir") or name(int(entry["version"])))
    return home / sub / entry["file"]


class Undecodable(ValueError):
    """A commit record that is not a whole JSON object (a store that showed it half written)."""


def read(out: Location | str, number: int) -> Version:
    """Version `number` (FileNotFoundError: pruned; Undecodable: not a whole record)."""
    out = Location.of(out)
    f = out / COMMITS / f"{name(number)}.json"
    try:
        record = json.loads(f.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise Undecodable(f"{f}: not a whole commit record ({e})") from None
    if not isinstance(record, dict):
        raise Undecodable(f"{f}: not a commit record")
    return Version(number, out / record.get("path", f"{VERSIONS}/{name(number)}"), record)


def current(out: Location | str) -> Version:
    """The newest committed version that reads whole; NoVersion when there is none. A commit
    record deleted between the listing and the read (pruned) means a newer one exists: list
    again. An undecodable record (a store that showed it before its bytes) is skipped."""
    out = Location.of(out)
    for _ in range(5):
        numbers = committed(out)
        if not numbers:
            raise NoVersion(f"{out} holds no published version: no run finished there "
                            f"({COMMITS}/ is empty or absent)")  # fmt: skip
        for n in reversed(numbers):
            try:
                return read(out, n)
            except FileNotFoundError:
                break  # pruned meanwhile: list again
            except Undecodable as e:
                log.warning("%s; reading the version before it", e)
        else:
            raise NoVersion(f"{out}: none of its {len(numbers)} commit record(s) reads whole")
    raise NoVersion(f"{out}: its versions changed five times while being read; try again")


def current_dir(out: Location | str | Path) -> Location:
    return current(out).dir


def published_path(d: str | Path) -> Path:
    """published_dir for a local output, as a Path (scripts, benchmarks, tests)."""
    found = published_dir(d)
    if not found.is_local:
        raise ValueError(f"{found} is not on this machine's disk")
    return Path(found.uri)


def published_dir(d: Location | str | Path) -> Location:
    """The folder holding a finished run's manifest: given an output, its current version;
    given a version folder (or an output written before versions), itself. NoVersion when
    neither holds a manifest."""
    d = Location.of(d)
    if (d / COMMITS).names():
        return current_dir(d)
    if (d / "manifest.json").is_file():
        return d
    raise NoVersion(f"{d} has no published version and no manifest.json: not a finished run")


def writer_folder(out: Location | str, generation: int) -> int:
    """The folder number of this writer: its lock generation (unique, never reused), raised
    past every folder there (a lock folder deleted by hand restarts generations at 1); an
    unlocked single writer: one past every folder."""
    out = Location.of(out)
    begun = [int(n) for n in _writer_folders(out)]
    return max([generation, *(b + 1 for b in begun)]) if begun else max(generation, 1)


def commit(out: Location | str, number: int, record: dict,
           guard: Callable[[], None] | None = None,
           create: Callable[[Location, bytes], bool] | None = None,
           writer: int | None = None) -> Location:  # fmt: skip
    """Publish version `number` (one past the writer's base), from the files in folder
    `writer` (default: `number`): its commit record created only if absent, whole, right after
    the writer's fence check (`guard`). Readers switch to it at that instant. The store
    decides: a record already there (another writer published from the same base) raises
    VersionConflict, as does a newer one seen right after (this record filled a pruned gap:
    it is withdrawn). `create`: the atomic create-if-absent where pyarrow.fs has none (the
    run lock's, through Hadoop)."""
    out = Location.of(out)
    writer = number if writer is None else writer
    body = {"version": number, "path": f"{VERSIONS}/{name(writer)}", "layout": LAYOUT,
            "committed": datetime.now(UTC).isoformat(), **record}  # fmt: skip
    data = (json.dumps(body, indent=2) + "\n").encode()
    target = out / COMMITS / f"{name(number)}.json"
    if guard is not None:
        guard()
    there = newest(out)
    if there >= number:  # known already: no need to ask the store
        raise VersionConflict(_conflict(out, number, there))
    try:
        created = create(target, data) if create else target.create_exclusive(data)
    except NoExclusiveCreate:  # output.single_writer: the user promised one writer
        target.write_bytes(data)
        created = True
    if not created:
        raise VersionConflict(_conflict(out, number, number))
    there = newest(out)
    if there > number:
        target.delete()
        raise VersionConflict(_conflict(out, number, there))
    return target


def _conflict(out: Location, number: int, there: int) -> str:
    return (f"{out}: version {there} was published by another writer after this run started "
            f"from version {number - 1}; this run published nothing (a writer never rebases: "
            "rerun to start from the newest version)")  # fmt: skip


def held_folders(record: dict) -> set[str]:
    """The folders a commit's files lie in: its own and the earlier versions' it lists
    (`holds`; `references`, version numbers, in records written when a folder was named by
    its version)."""
    own = str(record.get("path", "")).rsplit("/", 1)[-1]
    held = {str(h) for h in record.get("holds", [])}
    held |= {name(int(n)) for n in record.get("references", [])}
    return held | ({own} if own else set())


def _age_seconds(record: dict) -> float:
    try:
        return (datetime.now(UTC) - datetime.fromisoformat(record["committed"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return 0.0  # unknown: as young as can be


def prune(out: Location | str, keep: int, mine: int,
          guard: Callable[[], None] | None = None, keep_seconds: float = 0.0,
          pinned: Sequence[str] = ()) -> list[int]:  # fmt: skip
    """Remove committed versions but the newest `keep` (>= 2: the one current before `mine`
    stays, a reader may have opened it just before the switch), those younger than
    `keep_seconds` (a reader or a training job may be reading them), and those whose folder
    is the first `pinned` (the dataset card's version; the files of every pinned folder stay:
    the card lists them); then writer folders no remaining commit lists that are
    older than this writer's (a crashed or fenced-off writer's). Each commit record goes
    before its files. Returns the version numbers removed."""
    out = Location.of(out)
    done = committed(out)
    records: dict[int, dict | None] = {}
    for n in done:
        try:
            records[n] = read(out, n).record
        except FileNotFoundError:
            records[n] = {}  # removed meanwhile (another writer's prune)
        except Undecodable:
            records[n] = None
    whole = [n for n in done if records[n] is not None]  # what readers can take
    keep_set = set(whole[-max(2, keep) :]) | {mine}
    keep_set |= {n for n, r in records.items() if r is None or _age_seconds(r) < keep_seconds}
    keep_set |= {n for n, r in records.items()
                 if r and str(r.get("path", "")).rsplit("/", 1)[-1] in pinned[:1]}  # fmt: skip
    held = set(pinned).union(*(held_folders(records[n]) for n in keep_set
                                if records.get(n)))  # fmt: skip
    removed = []
    for n in done:
        if n in keep_set or records[n] == {}:
            continue
        if guard is not None:
            guard()
        (out / COMMITS / f"{name(n)}.json").delete()
        for f in held_folders(records[n]) - held:  # else a kept version lists its files
            for top in (VERSIONS, *TABLES):
                (out / top / f).delete()
        removed.append(n)
    if any(records.get(n) is None for n in keep_set):
        return sorted(removed)  # a record that does not read: its folder is unknown
    mine_folder = str((records.get(mine) or {}).get("path", "")).rsplit("/", 1)[-1]
    below = int(mine_folder) if mine_folder.isdigit() else 0
    for entry, places in _writer_folders(out).items():
        if int(entry) < below and entry not in held:
            for place in places:  # begun, never committed (or pruned)
                if guard is not None:
                    guard()
                place.delete()
    return sorted(removed)


def remove_legacy(out: Location | str, guard: Callable[[], None] | None = None) -> None:
    """The in-place layout of outputs written before versions, removed (after a commit)."""
    out = Location.of(out)
    top = set(out.names())
    for entry in LEGACY:
        if entry not in top:
            continue
        if entry in TABLES:  # a table's root now: its writer folders and Delta log stay
            for n in (out / entry).names():
                if not n.isdigit() and n != "_delta_log":
                    if guard is not None:
                        guard()
                    (out / entry / n).delete()
            continue
        if guard is not None:
            guard()
        (out / entry).delete()


def read_rows(out: Location | str | Path, sub: str, columns: list[str] | None = None
              ) -> list[dict]:  # fmt: skip
    """The rows of the current version's `sub` (data, rejected, index) as dicts, from the
    files its commit lists (scripts, benchmarks)."""
    import pyarrow.parquet as pq

    return [r for f in current(Location.of(out)).files(sub)
            for r in pq.read_table(f.uri, columns=columns).to_pylist()]  # fmt: skip
