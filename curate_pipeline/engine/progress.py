"""Progress of a step that runs as Spark jobs (a corpus stage, the writes, the mixture).

The documents pass counts files; a corpus stage is a few Spark jobs over narrow rows, whose
only running measure is the tasks of the Spark stages running now. A thread polls Spark's
status tracker (the driver's own store: no UI or REST call is needed) and, every `every`
seconds, logs one line: the step, its time so far, the tasks done of the running Spark
stages, and an ETA for them from their rate since they started. Spark does not know how
many more jobs a step will start (connected components run until they converge), so the
ETA is that of the Spark work running now, and the line says so.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType

from pyspark import SparkContext

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0  # how often the tracker is read (a dictionary lookup on the driver)


@dataclass
class _Seen:
    first: float  # when the poll first saw the Spark stage running
    tasks: int
    done: int


@dataclass
class TaskFigures:
    """The running Spark stages' tasks, and what has finished since the step began."""

    running: list[int] = field(default_factory=list)  # Spark stage ids
    tasks: int = 0
    done: int = 0
    finished_stages: int = 0
    eta: float | None = None


def eta_of(seen: list[_Seen], now: float) -> float | None:
    """Seconds until the tasks of `seen` are done, at the rate each has run since it began
    (None before any task has finished)."""
    rate = sum(s.done / max(now - s.first, 1e-3) for s in seen)
    left = sum(max(s.tasks - s.done, 0) for s in seen)
    if left == 0:
        return 0.0
    return left / rate if rate > 0 else None


def progress_line(step: str, seconds: float, fig: TaskFigures) -> str:
    if not fig.running:
        what = "no Spark stage running"
    else:
        stages = ", ".join(str(i) for i in fig.running)
        eta = f"ETA {fig.eta:,.0f} s" if fig.eta is not None else "ETA unknown"
        what = f"Spark stage {stages}: {fig.done:,}/{fig.tasks:,} tasks, {eta} for them"
    done = f", {fig.finished_stages} Spark stage(s) done" if fig.finished_stages else ""
    return f"{step}: {seconds:,.0f} s{done}, {what}"


class RunningTasks:
    """The Spark stages running now and their tasks, from Spark's status tracker."""

    def __init__(self, sc: SparkContext):
        self.tracker = sc.statusTracker()
        self.seen: dict[int, _Seen] = {}
        self.finished: set[int] = set()

    def figures(self) -> TaskFigures:
        """One poll of the tracker."""
        now = time.perf_counter()
        active = set(self.tracker.getActiveStageIds())
        for sid in set(self.seen) - active:
            self.finished.add(sid)
            del self.seen[sid]
        for sid in sorted(active):
            info = self.tracker.getStageInfo(sid)
            if info is None:  # finished between the two calls
                continue
            s = self.seen.setdefault(sid, _Seen(now, info.numTasks, 0))
            s.tasks, s.done = info.numTasks, info.numCompletedTasks
        seen = list(self.seen.values())
        tasks, done = sum(s.tasks for s in seen), sum(s.done for s in seen)
        return TaskFigures(sorted(self.seen), tasks, done, len(self.finished), eta_of(seen, now))


class SparkProgress:
    """`with SparkProgress(sc, "stage near_dedup (2 of 4)"):` logs the step's progress every
    `every` seconds while the block runs (nothing for a step shorter than that)."""

    def __init__(self, sc: SparkContext, step: str, every: float = 10.0,
                 poll: float = POLL_SECONDS):  # fmt: skip
        self.tasks = RunningTasks(sc)
        self.sc = sc
        self.step = step
        self.every = every
        self.poll = min(poll, every)
        self.stop = threading.Event()
        self.t0 = time.perf_counter()
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"progress {step}")

    def __enter__(self) -> SparkProgress:
        self.t0 = time.perf_counter()
        # the step names its jobs (Spark's UI and REST API; bench/append_bench.py sums each
        # step's shuffle bytes by it): a property of the calling thread
        self.sc.setJobDescription(self.step)
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sc.setJobDescription(None)  # type: ignore[arg-type]  (Java null: unset)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self.stop.wait(self.poll):
            try:
                fig = self.tasks.figures()
            except Exception:  # the context is stopping (Ctrl-C, a failed run): no line
                return
            now = time.perf_counter()
            if now - last >= self.every:
                last = now
                log.info("%s", progress_line(self.step, now - self.t0, fig))
