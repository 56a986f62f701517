"""Peak memory of a process tree, by role, for the benchmarks: PSS (shared pages counted once
across the processes sharing them) of the root process (the driver's Python), JVMs, and
other Python processes (Spark's workers), sampled on a thread."""

from __future__ import annotations

import os
import threading

import psutil


def role(p: psutil.Process, root: int) -> str:
    if p.pid == root:
        return "driver_python"
    try:
        name = os.path.basename(p.exe())
    except psutil.Error:
        return "other"
    return "jvm" if name.startswith("java") else "workers" if "python" in name else "other"


class PeakPss:
    """Samples the tree of `pid` every `every` seconds until stop(); peaks in MiB by role."""

    def __init__(self, pid: int, every: float = 1.0):
        self.pid, self.every = pid, every
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        root = psutil.Process(self.pid)
        while not self._stop.wait(self.every):
            now: dict[str, int] = {}
            try:
                for p in [root, *root.children(recursive=True)]:
                    try:
                        r = role(p, self.pid)
                        now[r] = now.get(r, 0) + p.memory_full_info().pss
                    except psutil.Error:
                        pass
            except psutil.Error:
                return
            for k, v in now.items():
                self.peaks[k] = max(self.peaks.get(k, 0), v)

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return {k: round(v / 2**20) for k, v in sorted(self.peaks.items())}
