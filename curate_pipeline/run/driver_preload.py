"""Import the driver's heavy modules while the JVM starts.

Starting the Spark JVM takes ~2 s in which the Python driver only waits on a socket. The
driver later needs datasketch (the MinHash permutations; it imports scipy.integrate, ~0.6 s),
scipy's graph components (near dedup) and matplotlib (the report, ~0.5 s). Importing them in
a thread started just before the JVM takes them off the run's critical path; Python's import
lock makes a concurrent import of the same module wait for this one, never run twice.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)
_started: list[threading.Thread] = []


def _load() -> None:
    try:
        import datasketch  # noqa: F401
        import scipy.sparse.csgraph  # noqa: F401

        from curate_pipeline.outputs.report import preload as preload_report

        preload_report()
    except Exception as e:  # an import that fails here fails again where it is used
        log.debug("driver preload: %s", e)


def start() -> None:
    """Start the import thread once per process."""
    if not _started:
        t = threading.Thread(target=_load, name="driver-preload", daemon=True)
        t.start()
        _started.append(t)
