"""One run at a time per output location, on a local disk or an object store.

Two `curate run`s writing the same --output interleave their stage files and both report
wrong counts, so a run holds a lease on DIR/.curate.lock/. The lock needs no flock and no
rename: only an atomic create-if-absent (`O_EXCL` locally, S3's `If-None-Match: *`).

The lock is a sequence of generation files `.curate.lock/NNNNNNNNNNNN.json`, each created
exclusively and naming its owner and when its lease expires. A run takes the lock by creating
the generation after the newest one, which it may do only if the newest is gone or its lease
has expired (a killed run's lock lapses after `output.lock_lease_seconds`, or at once when
its process is seen gone from this same machine); two runs racing
for the same generation cannot both create it.

Fencing: every commit and every write of a run calls `check()` first, which reads the lock
then and there (not a flag a thread refreshes): it refuses once the lease has passed by this
process's own monotonic clock (a driver paused past its lease by SIGSTOP, a VM pause or
swapping wakes up expired), or once a newer generation exists or this generation's file holds
another run's token. The renew thread rewrites the file only while it is still this run's.
Generation numbers are never reused: a run that ends marks its generation released instead
of deleting it, and a new holder deletes only the generations before its own, so a stale
holder of generation N can never mistake a later holder's N for its own (ABA: `curate serve`
takes and releases the lock every cycle). gs://, hdfs:// and abfs:// have no atomic create
through pyarrow.fs: there the lock's files go through the cluster's Hadoop connector
(engine/storage.py HadoopLockFiles), whose create(overwrite=false) is atomic; where the
cluster has no connector for the scheme, the run is refused unless output.single_writer says
it is the output's only writer, and it then goes on unlocked.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from curate_pipeline.location import Location, NoExclusiveCreate

log = logging.getLogger(__name__)

LOCK_NAME = ".curate.lock"
_HOST = socket.gethostname()


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return True  # unknown: trust the lease
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputBusy(RuntimeError):
    """Another run is writing this output location (or took it over from this one)."""


# A lease is trusted by its holder until this share of it is left: the check and the write
# it guards take time, and a store's clock and ours need not agree to the second.
MARGIN = 0.1


class LockFiles:
    """How the lock's files are listed, read, written and created only-if-absent: through
    pyarrow.fs (a local disk, S3). engine/storage.py HadoopLockFiles does the same through
    the cluster's Hadoop connector, whose create(overwrite=false) is atomic on HDFS (the
    NameNode), GCS (ifGenerationMatch=0) and ABFS (If-None-Match: *)."""

    def names(self, folder: Location) -> list[str]:
        return [f.name for f in folder.files()]

    def read(self, f: Location) -> bytes:
        return f.read_bytes()

    def write(self, f: Location, data: bytes) -> None:
        f.write_bytes(data)

    def create(self, f: Location, data: bytes) -> bool:
        return f.create_exclusive(data)

    def delete(self, f: Location) -> None:
        f.delete()

    def mtime(self, f: Location) -> float:
        return f.mtime()


class Unlocked(LockFiles):
    """A store that cannot create atomically, written by its single writer (output.
    single_writer): every create says so, and the run goes on unlocked."""

    def __init__(self, why: str):
        self.why = why

    def create(self, f: Location, data: bytes) -> bool:
        raise NoExclusiveCreate(self.why)


class Lease:
    def __init__(self, out: Location, seconds: float, files: LockFiles | None = None):
        self.files = files or LockFiles()
        self.out, self.dir, self.seconds = out, out / LOCK_NAME, seconds
        self.generation = 0
        self.token = uuid.uuid4().hex
        self.owner = f"pid {os.getpid()} on {_HOST}"
        self.lost: str | None = None
        self.valid_until = 0.0  # time.monotonic() after which this process trusts no write

    def _generations(self) -> list[int]:
        return sorted(
            int(n[:-5]) for n in self.files.names(self.dir)
            if n.endswith(".json") and n[:-5].isdigit()
        )  # fmt: skip

    def _file(self, n: int) -> Location:
        return self.dir / f"{n:012d}.json"

    def _body(self) -> bytes:
        expires = time.time() + self.seconds
        return json.dumps({"owner": self.owner, "token": self.token, "host": _HOST,
                           "pid": os.getpid(), "expires": expires}).encode()  # fmt: skip

    def _holder(self, n: int) -> dict | None:
        """The newest generation's content, None if its lease has lapsed."""
        f = self._file(n)
        try:
            held = json.loads(self.files.read(f))
        except FileNotFoundError:
            return None  # released meanwhile
        except (OSError, ValueError):
            # not whole (a store that shows a file before its bytes, a crash mid-write): its
            # lease runs from when it was written, never from now (else it never lapses)
            try:
                written = self.files.mtime(f)
            except FileNotFoundError:
                return None
            held = {"owner": "unknown (its lock file does not read whole)",
                    "expires": written + self.seconds}  # fmt: skip
        if not isinstance(held, dict):
            held = {"owner": "unknown (its lock file is not a lock record)", "expires": 0}
        if held.get("released"):
            return None  # ended normally
        if held.get("host") == _HOST and not _alive(held.get("pid")):
            return None  # its process is gone (killed on this machine): no need to wait
        return held if held.get("expires", 0) > time.time() else None

    def acquire(self) -> None:
        gens = self._generations()
        newest = gens[-1] if gens else 0
        if newest:
            held = self._holder(newest)
            if held is not None:
                raise OutputBusy(
                    f"--output {self.out}: another curate run ({held.get('owner')}) is writing "
                    "there; wait for it to finish or choose another folder"
                )
        started = time.monotonic()
        if not self.files.create(self._file(newest + 1), self._body()):
            raise OutputBusy(
                f"--output {self.out}: another curate run took the lock at the same moment; "
                "wait for it to finish or choose another folder"
            )
        self.generation = newest + 1
        self.valid_until = started + self.seconds * (1 - MARGIN)
        for old in gens:  # earlier generations: nobody holds them; the newest number stays
            self.files.delete(self._file(old))

    def _lose(self, why: str) -> None:
        self.lost = self.lost or (
            f"--output {self.out}: this run lost its lock ({why}); it wrote nothing after "
            "that and stopped: rerun to resume from what was committed"
        )
        raise OutputBusy(self.lost)

    def _verify(self) -> None:
        """The lock as the store holds it now: still this run's generation and token."""
        gens = self._generations()
        if not gens or gens[-1] != self.generation:
            newest = gens[-1] if gens else "none"
            self._lose(f"another run took it over: generation {newest}, this run's "
                       f"{self.generation}")  # fmt: skip
        held: dict = {}
        for wait in (0.05, 0.2, 1.0, None):  # a renewal being written: read it again
            try:
                held = json.loads(self.files.read(self._file(self.generation)))
                break
            except FileNotFoundError:
                break
            except (OSError, ValueError):
                if wait is None:
                    break
                time.sleep(wait)
        if not isinstance(held, dict) or held.get("token") != self.token or held.get("released"):
            self._lose(f"generation {self.generation} is no longer this run's")

    def renew(self) -> None:
        """Extend the lease, only while the lock is still this run's (else it is lost)."""
        if self.lost:
            return
        started = time.monotonic()
        try:
            self._verify()
        except OutputBusy:
            return  # check() raises it at the next write
        self.files.write(self._file(self.generation), self._body())
        self.valid_until = started + self.seconds * (1 - MARGIN)

    def check(self) -> None:
        """Raise OutputBusy unless this run still holds the lock, read now: called before
        every commit and write of the run."""
        if self.lost:
            raise OutputBusy(self.lost)
        if time.monotonic() >= self.valid_until:
            self._lose(f"its {self.seconds:g} s lease passed by this process's clock without a "
                       "renewal (the driver was paused, or the store unreachable)")  # fmt: skip
        self._verify()

    def release(self) -> bool:
        """Mark this generation released (its number stays: generations are never reused).
        False: it was no longer this run's (lost; `lost` says how)."""
        if self.lost is not None:
            return False
        try:
            self._verify()
        except OutputBusy:
            return False
        self.files.write(self._file(self.generation), json.dumps({
            "owner": self.owner, "token": self.token, "host": _HOST, "pid": os.getpid(),
            "expires": 0, "released": True}).encode())  # fmt: skip
        return True


def busy(out: Location | str, lease_seconds: float = 300.0) -> str | None:
    """Why a run cannot start in `out` now (another run holds its lock), or None: read before
    Spark starts, so a second run is refused at once. The lock is still taken by `hold`."""
    lease = Lease(Location.of(out), lease_seconds)
    try:
        gens = lease._generations()
        held = lease._holder(gens[-1]) if gens else None
    except OSError:
        return None  # unreadable here: `hold` decides
    if held is None:
        return None
    left = max(0, int(held.get("expires", 0) - time.time()))
    return (f"--output {out}: another curate run ({held.get('owner')}) is writing there "
            f"(its lease is renewed while it runs; {left} s left now); wait for it to finish "
            "or choose another folder")  # fmt: skip


class NoLock:
    """Where the store has no atomic create: the run goes on unlocked."""

    generation = 0  # no lock generation: versions are numbered from the listing

    def check(self) -> None:
        pass


@contextmanager
def hold(out: Location | str, lease_seconds: float = 300.0,
         files: LockFiles | None = None) -> Iterator[Lease | NoLock]:  # fmt: skip
    """The lock on `out` while the block runs (`files`: how its files are reached; pyarrow.fs
    by default)."""
    out = Location.of(out)
    lease = Lease(out, lease_seconds, files)
    try:
        lease.acquire()
    except NoExclusiveCreate as e:
        log.warning("%s; make sure no other run writes there at the same time", e)
        yield NoLock()
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(lease_seconds / 3):
            try:
                lease.renew()
            except OSError as e:  # a store hiccup: try again at the next beat
                log.warning("renewing the lock on %s failed: %s", out, e)

    ticker = threading.Thread(target=beat, daemon=True, name="curate-lock-lease")
    ticker.start()
    try:
        yield lease
    finally:
        stop.set()
        ticker.join(timeout=5)
        released = lease.release()
    if not released:  # the block ended (no error), but the lock was another run's by then
        raise OutputBusy(lease.lost or f"--output {out}: this run's lock was taken over")
