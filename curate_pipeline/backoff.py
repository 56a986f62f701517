"""A back-off shared by the processes of an executor when a store throttles.

Each Python worker has its own store clients, whose SDKs back off alone: when a bucket answers
503 SlowDown, the other tasks of the executor go on asking at full speed. Here a throttled
request that outlasts its SDK's retries leaves a "not before T" mark in a folder the executor's
workers share (Spark's local dir for the executor, else the temporary folder), one per store;
every patient request (location.patiently) waits for the mark before asking. The marks are
plain files: a lost one costs a request, never correctness.
"""

from __future__ import annotations

import hashlib
import os
import random
import tempfile
import time
from pathlib import Path

DIR_ENV = "CURATE_BACKOFF_DIR"  # where the marks go (tests); else Spark's local dir
# What a store says when it throttles (S3's SlowDown and 503, GCS's and Azure's 429 and 503)
THROTTLED = ("slow_down", "slowdown", "reduce your request rate", "503", "429",
             "toomanyrequests", "too many requests", "throttl", "rate exceeded")  # fmt: skip


def _folder() -> Path:
    given = os.environ.get(DIR_ENV)
    if given:
        return Path(given)
    local = (os.environ.get("SPARK_LOCAL_DIRS") or "").split(",")[0]
    return Path(local or tempfile.gettempdir()) / f"curate-backoff-{os.getuid()}"


def _mark(key: str) -> Path:
    return _folder() / (hashlib.sha256(key.encode()).hexdigest()[:16] + ".until")


def is_throttle(error: BaseException) -> bool:
    text = str(error).lower()
    return any(t in text for t in THROTTLED)


def paused_until(key: str) -> float:
    """The time (time.time()) before which no request to this store should go, or 0."""
    try:
        return float(_mark(key).read_text() or 0)
    except (OSError, ValueError):
        return 0.0


def wait_turn(key: str, deadline: float) -> None:
    """Sleep while the store is paused (until `deadline`, a time.monotonic() value), with a
    little jitter so that the workers do not all ask again at once."""
    left = paused_until(key) - time.time()
    if left > 0:
        left *= 1 + 0.1 * random.random()  # noqa: S311
        time.sleep(max(0.0, min(left, deadline - time.monotonic())))


def note_throttle(key: str, seconds: float) -> None:
    """The store throttled: pause every worker's requests to it for `seconds` (a later mark
    already there stays)."""
    until = time.time() + seconds
    if paused_until(key) >= until:
        return
    mark = _mark(key)
    try:
        mark.parent.mkdir(parents=True, exist_ok=True)
        tmp = mark.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(f"{until:.3f}")
        os.replace(tmp, mark)  # the executor's own disk: readers see the old or the new mark
    except OSError:
        pass  # no shared mark: each worker still backs off on its own
