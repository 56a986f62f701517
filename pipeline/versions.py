"""An output is a versioned dataset: each run (or `curate serve` cycle) publishes a version.

  DIR/versions/NNNNNNNNNNNN/   one version's files: data/, rejected/, shards/, tokens/,
                               budget.json, manifest.json, report.html, report.json
  DIR/_versions/NNNNNNNNNNNN.json   its commit: the one list of what the version holds

A version is numbered by the generation of the run lock its writer held (run/output_lock.py),
so two writers never share a folder, and a number is never reused. It is written in its own
folder, which nothing lists until the commit record is created, once and atomically
(`O_EXCL` on a disk, `If-None-Match: *` on S3), right after the writer's fence check. The
current version is the newest commit; readers (the dataset card, `curate report`, `explore`,
`tokens`, serve) read it and nothing else. A published version's files are never rewritten;
old versions are removed past `output.keep_versions`, their commit record first, so a reader
who listed the commits a moment ago still finds the version it took (the one current before
the switch is always kept).

Anchors: Delta Lake's log (`_delta_log/NNNN.json`, put-if-absent), Iceberg's metadata swap.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.location import Location, NoExclusiveCreate

log = logging.getLogger(__name__)

VERSIONS = "versions"  # DIR/versions/NNNNNNNNNNNN/: the files
COMMITS = "_versions"  # DIR/_versions/NNNNNNNNNNNN.json: the commit records
# What an output held at its top before versions (published in place): a versioned run
# removes these once it has committed, so no reader mistakes them for the current data.
LEGACY = ("data", "rejected", "shards", "tokens", "manifest.json", "budget.json",
          "report.html", "report.json")  # fmt: skip


class NoVersion(FileNotFoundError):
    """The output holds no committed version (no run finished there)."""


class VersionConflict(RuntimeError):
    """Another writer committed this version number: this writer lost the output."""


def name(number: int) -> str:
    return f"{number:012d}"


def folder(out: Location | str, number: int) -> Location:
    return Location.of(out) / VERSIONS / name(number)


def committed(out: Location | str) -> list[int]:
    """The committed versions' numbers, oldest first (one listing)."""
    return sorted(
        int(n[:-5]) for n in (Location.of(out) / COMMITS).names()
        if n.endswith(".json") and n[:-5].isdigit()
    )  # fmt: skip


@dataclass(frozen=True)
class Version:
    number: int
    dir: Location  # DIR/versions/NNNNNNNNNNNN
    record: dict  # its commit record

    @property
    def manifest(self) -> dict:
        return json.loads((self.dir / "manifest.json").read_text())

    @property
    def budget(self) -> dict:
        return json.loads((self.dir / "budget.json").read_text())

    def files(self, sub: str) -> list[Location]:
        """What the version holds in `sub` (data, rejected, index): the files its commit
        lists, its own and those it took over from earlier versions (an appended version)."""
        return [locate(self.dir, sub, f) for f in self.record.get("files", {}).get(sub, [])]


def locate(vdir: Location, sub: str, entry: dict) -> Location:
    """A file a version lists (its commit's or manifest's `files`, its token index's
    `shards`): `entry["file"]` in the version's `sub`/, or in version `entry["version"]`'s
    when an appended version took it over from an earlier one (never copied)."""
    home = vdir if "version" not in entry else vdir.parent / name(int(entry["version"]))
    return home / sub / entry["file"]


def referenced(record: dict) -> set[int]:
    """The earlier versions whose files a commit lists (kept while it is)."""
    return {int(n) for n in record.get("references", [])}


def read(out: Location | str, number: int) -> Version:
    out = Location.of(out)
    record = json.loads((out / COMMITS / f"{name(number)}.json").read_text())
    return Version(number, out / record.get("path", f"{VERSIONS}/{name(number)}"), record)


def current(out: Location | str) -> Version:
    """The newest committed version; NoVersion when there is none. A commit record deleted
    between the listing and the read (pruned) means a newer one exists: list again."""
    out = Location.of(out)
    for _ in range(5):
        numbers = committed(out)
        if not numbers:
            raise NoVersion(f"{out} holds no published version: no run finished there "
                            f"({COMMITS}/ is empty or absent)")  # fmt: skip
        try:
            return read(out, numbers[-1])
        except FileNotFoundError:
            continue
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


def next_number(out: Location | str, generation: int) -> int:
    """This writer's version: its lock generation (unique, never reused), else (an unlocked
    single writer) one past every version committed or begun."""
    if generation:
        return generation
    out = Location.of(out)
    begun = [int(n) for n in (out / VERSIONS).names() if n.isdigit()]
    return max([0, *committed(out), *begun]) + 1


def commit(out: Location | str, number: int, record: dict,
           guard: Callable[[], None] | None = None,
           create: Callable[[Location, bytes], bool] | None = None) -> Location:  # fmt: skip
    """Publish version `number`: its commit record created once, atomically, right after
    the writer's fence check (`guard`). Readers switch to it at that instant. `create`: the
    atomic create-if-absent where pyarrow.fs has none (the run lock's, through Hadoop)."""
    out = Location.of(out)
    body = {"version": number, "path": f"{VERSIONS}/{name(number)}",
            "committed": datetime.now(UTC).isoformat(), **record}  # fmt: skip
    data = (json.dumps(body, indent=2) + "\n").encode()
    target = out / COMMITS / f"{name(number)}.json"
    if guard is not None:
        guard()
    try:
        created = create(target, data) if create else target.create_exclusive(data)
    except NoExclusiveCreate:  # output.single_writer: the user promised one writer
        target.write_bytes(data)
        created = True
    if not created:
        raise VersionConflict(f"{target}: version {number} was committed by another writer; "
                              "this run stopped without publishing")  # fmt: skip
    return target


def prune(out: Location | str, keep: int, mine: int,
          guard: Callable[[], None] | None = None) -> list[int]:  # fmt: skip
    """Remove committed versions older than the newest `keep` (>= 2: the one current
    before `mine` stays, a reader may have opened it just before the switch), and version
    folders never committed below `mine` (a crashed or fenced-off writer's). Each commit
    record goes before its files. Returns the numbers removed."""
    out = Location.of(out)
    done = committed(out)
    keep_set = set(done[-max(2, keep) :]) | {mine}
    # an appended version lists files of earlier ones: those folders stay while it does
    held = set().union(*(referenced(read(out, n).record) for n in keep_set if n in done))
    removed = []
    done_set = set(done)
    for n in done:
        if n in keep_set:
            continue
        if guard is not None:
            guard()
        (out / COMMITS / f"{name(n)}.json").delete()
        if n not in held:  # else a later version lists its files: they stay while it does
            folder(out, n).delete()
        removed.append(n)
    for entry in (out / VERSIONS).names():
        if entry.isdigit() and int(entry) < mine and int(entry) not in done_set | held:
            if guard is not None:
                guard()
            folder(out, int(entry)).delete()  # begun, never committed
            removed.append(int(entry))
    return sorted(removed)


def remove_legacy(out: Location | str, guard: Callable[[], None] | None = None) -> None:
    """The in-place layout of outputs written before versions, removed (after a commit)."""
    out = Location.of(out)
    top = set(out.names())
    for entry in LEGACY:
        if entry in top:
            if guard is not None:
                guard()
            (out / entry).delete()
