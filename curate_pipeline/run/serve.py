"""`curate serve`: curate new crawl files as they land, and show the output while it grows.

Each cycle lists the watched inputs (a folder, an object-store prefix, a glob or a
`warc.paths` listing that grows) and takes the files the output does not hold yet through
the added-inputs path: the output's inputs first, in their order, then the new ones in name
order, so every committed chunk is reused and only new chunks run. All state is in the
output (`_stages/run.json` names its inputs, each chunk its marker): a restart, or a kill,
loses no committed chunk. A file is taken once its size and mtime have held still for one
cycle (one still being copied or uploaded is left for the next), on a disk or in a store.

The documents pass runs for new files at once; the corpus stages (dedup, mixture, shards,
the report) run over everything when `corpus_every` seconds have passed since they last ran,
or on request (`request_corpus()`, the web page's button). SIGTERM sets `stop`: the chunk in
flight commits, no other starts, and serve returns.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field

from pyspark.sql import SparkSession

from curate_pipeline.config import Config
from curate_pipeline.location import Location
from curate_pipeline.outputs.publish import versions
from curate_pipeline.run import run_record
from curate_pipeline.run.chunks import Stopped
from curate_pipeline.run.inputs import InputError, expand_inputs, input_stamps

log = logging.getLogger(__name__)


@dataclass
class ServeState:
    """What the web page shows of the serving process."""

    state: str = "starting"  # watching | curating | corpus stages | stopped
    files_seen: int = 0
    files_done: int = 0
    cycles: int = 0
    corpus_runs: int = 0
    last_cycle: str = ""
    last_error: str = ""
    waiting: list[str] = field(default_factory=list)  # files still growing

    def view(self) -> dict:
        return asdict(self)


class Server:
    def __init__(self, cfg: Config, inputs: list[str], output: str, spark: SparkSession,
                 every: float = 30.0, corpus_every: float = 0.0,
                 config_path: str | None = None):  # fmt: skip
        self.cfg, self.inputs, self.spark = cfg, inputs, spark
        self.out = Location.of(output)
        self.every, self.corpus_every = every, corpus_every
        self.config_path = config_path
        self.stop = threading.Event()
        self.corpus_asked = threading.Event()
        self.status = ServeState()
        self.stamps: dict[str, list] = {}  # each listed file's [bytes, mtime] last cycle
        self.corpus_at = float("-inf")  # when the corpus stages last ran (perf_counter)
        self.on_output: list = []  # called after each run that wrote a manifest

    def request_corpus(self) -> None:
        self.corpus_asked.set()

    def ready_files(self) -> list[str]:
        """The watched inputs that are whole: listed, with the same size and mtime as last
        cycle (local files and objects in a store or HDFS alike; a file still being copied
        or uploaded is left for the next cycle). http(s) URLs have no stamp: taken at once."""
        try:
            listed = expand_inputs(self.inputs, self.cfg.input.listing_prefix)
        except InputError as e:  # an empty folder, a listing not there yet: nothing new
            log.debug("no inputs yet: %s", e)
            return []
        stamps = input_stamps(listed)
        ready = [f for f in listed if not stamps[f] or self.stamps.get(f) == stamps[f]]
        self.status.waiting = sorted(set(listed) - set(ready))
        self.stamps = stamps
        self.status.files_seen = len(listed)
        return ready

    def _corpus_inputs(self) -> int:
        """Inputs the last corpus run covered (its manifest's), -1 before any."""
        try:
            return len(versions.current(self.out).manifest["inputs"])
        except (OSError, ValueError, KeyError):  # NoVersion is an OSError
            return -1

    def cycle(self) -> bool:
        """One look at the inputs; curate what is new. True when something ran."""
        from curate_pipeline.run.orchestrate import run

        held = run_record.read(self.out)
        old = list(held.get("inputs", [])) if held else []
        held_set = set(old)
        new = sorted(f for f in self.ready_files() if f not in held_set)
        files = old + new
        asked = self.corpus_asked.is_set()
        pending = len(files) > self._corpus_inputs()  # files the corpus stages have not seen
        if not files or not (pending or asked):
            return False
        corpus = asked or time.perf_counter() - self.corpus_at >= self.corpus_every
        if not new and not corpus:  # every file's chunk is done; the corpus stages wait
            return False
        self.status.state = "corpus stages" if corpus else "curating"
        log.info("serve: %d new file(s), %d held%s", len(new), len(old),
                 "; then the corpus stages" if corpus else "")  # fmt: skip
        run(self.cfg, files, self.out, self.spark, config_path=self.config_path,
            stop=self.stop, documents_only=not corpus)  # fmt: skip
        self.status.files_done = len(files)
        if corpus:
            self.corpus_at = time.perf_counter()
            self.corpus_asked.clear()
            self.status.corpus_runs += 1
            for f in self.on_output:
                f()
        return True

    def serve(self) -> None:
        """Cycles until `stop` is set; an environment failure in a cycle is logged and tried
        again next cycle (the committed chunks stand)."""
        while not self.stop.is_set():
            try:
                self.cycle()
                self.status.last_error = ""
            except Stopped:
                break
            except Exception as e:  # a cycle that failed: said, and tried again
                if self.stop.is_set():
                    break
                self.status.last_error = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                log.warning("serve: cycle failed: %s", self.status.last_error)
            self.status.cycles += 1
            self.status.last_cycle = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            self.status.state = "watching"
            # wait for the next cycle, or a request for the corpus stages, or stop
            deadline = time.perf_counter() + self.every
            while not self.stop.is_set() and time.perf_counter() < deadline:
                if self.corpus_asked.wait(0.5):
                    break
        self.status.state = "stopped"
