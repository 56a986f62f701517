"""One run at a time per output directory.

Two `curate run`s writing the same --output interleave their stage files (each Spark job
writes its part files beside the other's) and both report wrong counts. A run therefore holds
an exclusive lock on DIR/.curate.lock (flock: the OS drops it when the process dies, so a
killed run never leaves a stale lock); a second run fails at once and names the first. A run
that ends removes the file; a run that took the lock of a file removed meanwhile tries again.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = ".curate.lock"


class OutputBusy(RuntimeError):
    """Another run is writing this output directory."""


@contextmanager
def hold(out: Path) -> Iterator[None]:
    path = out / LOCK_NAME
    for _ in range(5):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise OutputBusy(
                f"--output {out}: another curate run (pid {owner}) is writing there; wait for "
                "it to finish or choose another folder"
            ) from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the file was removed by the run that held it: lock the new one
    else:
        raise OutputBusy(f"--output {out}: could not take {path}; is another run starting?")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        try:
            path.unlink()  # still held: no other run can be between its lock and this
        except FileNotFoundError:
            pass
        os.close(fd)  # closing releases the lock
