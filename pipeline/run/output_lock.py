"""One run at a time per output location, on a local disk or an object store.

Two `curate run`s writing the same --output interleave their stage files and both report
wrong counts, so a run holds a lease on DIR/.curate.lock/. The lock needs no flock and no
rename: only an atomic create-if-absent (`O_EXCL` locally, S3's `If-None-Match: *`).

The lock is a sequence of generation files `.curate.lock/NNNNNNNNNNNN.json`, each created
exclusively and naming its owner and when its lease expires. A run takes the lock by creating
the generation after the newest one, which it may do only if the newest is gone or its lease
has expired (a killed run's lock lapses after `output.lock_lease_seconds`, or at once when
its process is seen gone from this same machine); two runs racing
for the same generation cannot both create it. The holder renews its lease from a thread; if
it finds a newer generation (its lease lapsed and another run took over) it stops the run
before the next commit. A run that ends deletes its generation. A store with no atomic
create (gs://, hdfs:// through pyarrow) gets no lock: the run says so and goes on.
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

from pipeline.location import Location, NoExclusiveCreate

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


class Lease:
    def __init__(self, out: Location, seconds: float):
        self.out, self.dir, self.seconds = out, out / LOCK_NAME, seconds
        self.generation = 0
        self.token = uuid.uuid4().hex
        self.owner = f"pid {os.getpid()} on {_HOST}"
        self.lost: str | None = None

    def _generations(self) -> list[int]:
        return sorted(
            int(f.name[:-5]) for f in self.dir.files()
            if f.name.endswith(".json") and f.name[:-5].isdigit()
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
            held = json.loads(f.read_text())
        except FileNotFoundError:
            return None  # released meanwhile
        except (OSError, ValueError):
            held = {"owner": "unknown (being written)", "expires": time.time() + self.seconds}
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
        if not self._file(newest + 1).create_exclusive(self._body()):
            raise OutputBusy(
                f"--output {self.out}: another curate run took the lock at the same moment; "
                "wait for it to finish or choose another folder"
            )
        self.generation = newest + 1
        for old in gens:  # lapsed generations: nobody holds them
            self._file(old).delete()

    def renew(self) -> None:
        gens = self._generations()
        if not gens or gens[-1] != self.generation:
            self.lost = (
                f"--output {self.out}: this run's lock lapsed and another run took it over "
                f"(generation {gens[-1] if gens else 'none'}); stopped before its next commit"
            )
            return
        self._file(self.generation).write_bytes(self._body())

    def check(self) -> None:
        """Raise if the lease was lost: called before each commit."""
        if self.lost:
            raise OutputBusy(self.lost)

    def release(self) -> None:
        if self.lost is None:
            self._file(self.generation).delete()
        if self.dir.is_local and self.dir.exists() and not any(self.dir.files()):
            self.dir.delete()


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

    def check(self) -> None:
        pass


@contextmanager
def hold(out: Location | str, lease_seconds: float = 300.0) -> Iterator[Lease | NoLock]:
    out = Location.of(out)
    lease = Lease(out, lease_seconds)
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
        lease.release()
