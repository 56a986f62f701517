"""The documents pass in chunks: units of work and of commit.

The inputs are cut into chunks in crawl order (`chunks.files`, `chunks.bytes`, by default
`chunks.bytes_per_core` x the cores, kept for reruns in `_CHUNKING.json`). A chunk's
documents pass (read, extract, every per-document step) is one Spark job writing
`_stages/documents/chunk-NNNNN/`, committed by its marker `_STAGE.json`, which names two
fingerprints:
- extraction: the chunk's files (their place in the crawl, size and mtime, local or in a store),
  the `input`/`read`/`extract` settings that change rows, and the code that reads and extracts;
- steps: each per-document step's settings and model, and the package's code.

A rerun reuses a chunk whose fingerprints both match; reruns only the steps, from the stored
text, when only the steps' changed (a retune: no page is extracted again); and runs the whole
chunk otherwise, or when it has no marker (a run killed in it). Inputs appended after the old
ones form new chunks; the old ones are reused. Chunks run `chunks.parallel` at a time; each
chunk's rows depend on its files and settings only, so the output does not depend on which
ran when.

A file that could not be opened (missing, HTTP 4xx) is a ledger row, and its chunk's marker
names it: a rerun tries it again and runs the chunk anew if it opens now, so an outage of
the store does not become a permanent verdict.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from curate_pipeline.config import Config
from curate_pipeline.document.url_filter import list_digests
from curate_pipeline.document.warc.streams import is_url
from curate_pipeline.engine.capacity import capacity
from curate_pipeline.engine.models import digest
from curate_pipeline.engine.progress import RunningTasks
from curate_pipeline.engine.storage import read_parquet
from curate_pipeline.location import Location
from curate_pipeline.run.inputs import input_stamps
from curate_pipeline.run.stage_store import MARKER, commit, listed_files, read_marker, write_guarded
from curate_pipeline.stages.arrow_batches import text_bytes
from curate_pipeline.stages.extract import read_and_extract
from curate_pipeline.stages.langid import lid_model_path
from curate_pipeline.stages.read import Paths, opens_now
from curate_pipeline.stages.schema import DOC_SCHEMA, spark_schema
from curate_pipeline.stages.step import Running, run_steps

log = logging.getLogger(__name__)

# Stages whose drops happen before the per-document steps: a retune keeps them as they are.
EXTRACTION_STAGES = ("read", "url", "decode", "extract")
# The code a chunk's extraction depends on (curate_pipeline/...): a change here re-extracts.
EXTRACTION_CODE = ("document/warc", "document/extract.py", "document/extract_strategy.py",
                   "document/extractors.py", "document/url_filter.py",
                   "document/langid.py", "stages/schema.py", "run/inputs.py", "stages/read.py",
                   "stages/extract.py", "stages/arrow_batches.py")  # fmt: skip


@dataclass(frozen=True)
class Chunk:
    index: int
    first: int  # crawl-order index of its first file
    files: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"chunk-{self.index:05d}"


@dataclass
class ChunkResult:
    name: str
    files: int
    status: str  # "ran", "retuned" (steps only, from the stored text) or "reused"
    rows: int
    seconds: float
    fingerprint: str  # of its rows: extraction and steps
    parts: list[str]  # its committed Parquet files (what its marker lists)


def _size(path: str, default: int) -> int:
    if is_url(path):
        return default
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # unreadable: its ledger row costs nothing


def cut_chunks(
    files: Sequence[str],
    max_files: int,
    max_bytes: int,
    unknown_bytes: int | None = None,
    sizes: Sequence[int] | None = None,
) -> list[Chunk]:
    """Consecutive runs of files, each at most `max_files` files (0: any number) and
    `max_bytes` bytes (a file larger than that is a chunk of its own). A file's size is its
    own (local), `sizes[i]` when given, else `unknown_bytes` (default: max_bytes / max_files).
    Appending files never moves a boundary before the last chunk."""
    if unknown_bytes is None:
        unknown_bytes = max_bytes // max_files if max_files else max_bytes
    chunks: list[Chunk] = []
    start, size = 0, 0
    for i, f in enumerate(files):
        s = sizes[i] if sizes is not None else _size(f, unknown_bytes)
        if i > start and ((max_files and i - start >= max_files) or size + s > max_bytes):
            chunks.append(Chunk(len(chunks), start, tuple(files[start:i])))
            start, size = i, 0
        size += s
    if start < len(files):
        chunks.append(Chunk(len(chunks), start, tuple(files[start:])))
    return chunks


def settled_chunks(root: Location, files: Sequence[str]) -> tuple[list[Chunk], dict[str, dict]]:
    """The committed chunks that still hold the first of `files`, in order (each marker's
    `files_read`), and their markers: they stay as they are when inputs are added, the last
    one too, so an append's documents pass runs its new inputs only, and a committed chunk's
    fingerprint changes only with its own files or the per-document settings."""
    names = sorted(n for n in root.names() if n.startswith("chunk-"))
    with ThreadPoolExecutor(min(16, max(1, len(names)))) as pool:
        markers = list(pool.map(lambda n: read_marker(root / n), names))
    out: list[Chunk] = []
    pos = 0
    for i, (name, marker) in enumerate(zip(names, markers, strict=True)):
        if name != f"chunk-{i:05d}" or marker is None:
            break
        held = tuple(marker.get("files_read") or ())
        if not held or tuple(files[pos : pos + len(held)]) != held:
            break
        out.append(Chunk(i, pos, held))
        pos += len(held)
    return out, {c.name: m for c, m in zip(out, markers, strict=False)}


CHUNKING = "_CHUNKING.json"


def chunk_bytes(cfg: Config, cores: int, root: Location | None = None) -> int:
    """Input bytes per chunk: `chunks.bytes`, else `bytes_per_core` x `cores`, as the first
    run of this output chose it (kept in root/_CHUNKING.json), so a rerun on a cluster of
    another size cuts the same chunks and reuses them."""
    if cfg.chunks.bytes:
        return cfg.chunks.bytes
    if root is not None:
        try:
            return int(json.loads((root / CHUNKING).read_text())["bytes"])
        except (OSError, ValueError, KeyError):
            pass
    chosen = cfg.chunks.bytes_per_core * max(1, cores)
    if root is not None:
        (root / CHUNKING).write_text(json.dumps({"bytes": chosen, "cores": cores}))
    return chosen


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _sources(node, prefix: str = "") -> Iterator[tuple[str, bytes]]:
    """(relative path, bytes) of the package's .py files and the data files its code reads,
    from a folder or from a zip (spark-submit --py-files), in a stable order."""
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        rel = f"{prefix}{child.name}"
        if rel == "conf":
            continue  # the presets: settings, fingerprinted as a run's settings, not as code
        if child.is_dir():
            yield from _sources(child, rel + "/")
        elif child.name.endswith((".py", ".json")):
            yield rel, child.read_bytes()


def package_sources() -> Iterator[tuple[str, bytes]]:
    return _sources(resources.files("curate_pipeline"))


def extraction_code_hash() -> str:
    h = hashlib.sha256()
    for rel, data in package_sources():
        if any(rel == c or rel.startswith(c + "/") for c in EXTRACTION_CODE):
            h.update(rel.encode())
            h.update(data)
    return h.hexdigest()[:16]


def extraction_fingerprint(chunk: Chunk, cfg: Config, version: str,
                           stamps: dict[str, list] | None = None) -> str:  # fmt: skip
    """`stamps`: each file's size and mtime (run/inputs.py input_stamps), so a replaced or
    grown input, local or in a store, runs its chunk again."""
    rows_input = cfg.input.model_dump(mode="json", include={"on_unreadable", "listing_prefix"})
    if stamps is None:
        stamps = input_stamps(chunk.files)
    return _hash(
        chunk.first, chunk.files, [stamps.get(f, []) for f in chunk.files], rows_input,
        cfg.section_hash("read", "extract", "url_filter"), extraction_code_hash(), version,
        list_digests(cfg.url_filter),  # the lists' contents, not only their names
        prefilter_settings(cfg),
    )  # fmt: skip


def prefilter_settings(cfg: Config) -> list:
    """What the language pre-filter's drops depend on (nothing when it cannot drop)."""
    c = cfg.langid
    if not c.prefilters():
        return []
    picked = c.model_dump(mode="json", include={"prefilter_threshold", "prefilter_view",
                                                 "prefilter_chars", "keep_languages"})  # fmt: skip
    return [picked, digest(lid_model_path(cfg))]


def pack_bytes(sizes: dict[str, int], cores: int, least: int) -> int:
    """Files below this size are packed into shared tasks: a chunk's known bytes over twice
    the cores (the tasks the splits aim at), at least `least` (read.pack_min_bytes)."""
    return max(least, sum(sizes.values()) // max(1, 2 * cores))


def restep(stored: DataFrame, steps: Sequence[Running], schema: pa.Schema) -> DataFrame:
    """A chunk's stored rows with the per-document steps run again from their text: drops by
    extraction stay, every later drop and step field is recomputed."""
    # (the language of pages the pre-filter dropped is kept; the langid step relabels the rest)
    lang = [c for c in ("lang", "lang_score") if c in stored.columns and c in schema.names]
    base = stored.select(*[f.name for f in DOC_SCHEMA], *lang)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = batch.to_pylist()
            for r in rows:
                # drops decided before extraction (no text: the language pre-filter's) stay
                if r["reject_stage"] not in EXTRACTION_STAGES and r["text"] is not None:
                    r["reject_stage"] = r["reject_reason"] = r["reject_detail"] = None
            yield text_bytes(pa.RecordBatch.from_pylist(run_steps(rows, steps), schema=schema))

    return base.mapInArrow(run, spark_schema(schema))


class Stopped(RuntimeError):
    """The run was asked to stop (SIGTERM to `curate serve`): committed chunks stand."""


class _Progress:
    """A console line at most every `every` seconds: chunks and files done, records, rate,
    the tasks of the chunks running now (Spark's tracker), and an ETA from the files done,
    counting a running chunk's files in the share of its tasks done; reused chunks count as
    done but not in the rate."""

    def __init__(self, chunks: list[Chunk], every: float = 10.0, tasks: RunningTasks | None = None):
        self.total_chunks = len(chunks)
        self.total_files = sum(len(c.files) for c in chunks)
        self.done_chunks = self.done_files = self.records = 0
        self.ran_files = 0  # files done by running (not reusing) their chunk: the rate's
        self.in_flight: dict[str, int] = {}  # running chunks: their files
        self.tasks = tasks
        self.t0 = time.perf_counter()
        self.every = every
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.figures: dict = {}

    def begin(self, chunk: Chunk) -> None:
        with self.lock:
            self.in_flight[chunk.name] = len(chunk.files)

    def add(self, chunk: Chunk, rows: int, reused: bool = False) -> None:
        with self.lock:
            self.in_flight.pop(chunk.name, None)
            self.done_chunks += 1
            self.done_files += len(chunk.files)
            self.ran_files += 0 if reused else len(chunk.files)
            self.records += rows

    def line(self) -> str:
        fig = self.tasks.figures() if self.tasks is not None else None
        with self.lock:
            s = time.perf_counter() - self.t0
            rate = self.records / s if s > 0 else 0.0
            share = fig.done / fig.tasks if fig is not None and fig.tasks else 0.0
            ran = self.ran_files + sum(self.in_flight.values()) * share
            left = self.total_files - self.done_files - sum(self.in_flight.values()) * share
            eta = s / ran * left if ran > 0 else (0.0 if left <= 0 else None)
            self.figures = {"chunks": self.done_chunks, "files": self.done_files,
                            "records": self.records, "seconds": round(s, 1),
                            "records_per_s": round(rate, 1)}  # fmt: skip
            running = (f"tasks {fig.done:,}/{fig.tasks:,} of the running chunk(s), "
                       if fig is not None and fig.running and self.in_flight else "")  # fmt: skip
            return (f"documents pass: {self.done_chunks}/{self.total_chunks} chunks, "
                    f"{self.done_files}/{self.total_files} files, {self.records:,} records, "
                    f"{rate:,.0f} records/s, {running}"
                    + (f"ETA {eta:,.0f} s" if eta is not None else "ETA unknown"))  # fmt: skip

    def run(self) -> None:
        while not self.stop.wait(self.every):
            try:
                log.info("%s", self.line())
            except Exception:  # the context is stopping (Ctrl-C, a failed run): no line
                return


def documents_pass(
    spark: SparkSession,
    cfg: Config,
    files: list[str],
    root: Location,
    steps: Sequence[Running],
    fields: Sequence[pa.Field],
    steps_fingerprint: str,
    version: str,
    splits_for: Callable[[int], int],
    extract_seconds=None,
    force: bool = False,
    guard: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
    stamps: dict[str, list] | None = None,
) -> tuple[DataFrame, list[ChunkResult], dict]:
    """Every chunk done (run, retuned or reused); returns all chunks' rows, what each chunk
    did, and the progress figures. `guard()` runs before each chunk's commit (the run's
    lease on the output). Once `stop` is set no chunk starts; those in flight commit, then
    Stopped is raised. `stamps`: the inputs' input_stamps, when the caller has them."""
    from curate_pipeline.stages.arrow_batches import with_fields

    schema = with_fields(DOC_SCHEMA, fields)
    io = cfg.output.spark_io
    root.mkdir()
    if force:
        (root / CHUNKING).delete()
    cores = capacity(spark, cfg.chunks.cores).cores
    per_chunk = chunk_bytes(cfg, cores, root)
    settled, markers = ([], {}) if force else settled_chunks(root, files)
    done = sum(len(c.files) for c in settled)
    chunks = settled + [  # the inputs past the committed chunks: new chunks after them
        Chunk(len(settled) + c.index, done + c.first, c.files)
        for c in cut_chunks(files[done:], cfg.chunks.files, per_chunk, cfg.chunks.file_bytes)
    ]  # fmt: skip
    (root / MARKER).delete()  # complete again once every chunk is
    if chunks:  # what a crash can cost: the chunks in flight, at most
        most = max(len(c.files) for c in chunks)
        log.info("%d chunk(s) of up to %d file(s), ~%.1f GB each, for %d cores; a crash loses "
                 "at most the %d in flight (rerun: committed chunks are reused)", len(chunks),
                 most, per_chunk / 1e9, cores, cfg.chunks.parallel)  # fmt: skip
    if stamps is None:  # sizes and mtimes: one listing per folder on a store
        stamps = input_stamps(files)
    progress = _Progress(chunks, cfg.output.progress_seconds, RunningTasks(spark.sparkContext))
    ticker = threading.Thread(target=progress.run, daemon=True)
    ticker.start()

    def one(chunk: Chunk) -> ChunkResult:
        if stop is not None and stop.is_set():
            raise Stopped(f"stopped before {chunk.name}")
        if guard is not None:  # a run that lost its lock starts nothing more
            guard()
        path = root / chunk.name
        fp_x = extraction_fingerprint(chunk, cfg, version, stamps)
        marker = None if force else markers.get(chunk.name) or read_marker(path)
        t0 = time.perf_counter()
        progress.begin(chunk)
        unopened = marker.get("unopened", []) if marker else []
        if unopened and any(opens_now(f, cfg) for f in unopened):
            log.info("%s: a file it could not open opens now: the chunk runs again", chunk.name)
            marker = None
        if marker and marker.get("extraction") == fp_x and marker.get("steps") == steps_fingerprint:
            status = "reused"
        else:
            if marker and marker.get("extraction") == fp_x:
                # steps only, from the stored text: the new files go beside the old ones, and
                # the new marker replaces the old (a crash before it: the old version stands)
                status = "retuned"
                stored = read_parquet(spark, listed_files(path, marker),
                                      spark_schema(marker_schema(marker)), io)  # fmt: skip
                rows_df = restep(stored, steps, schema)
            else:
                status = "ran"  # written beside what is there; the commit prunes the rest
                told = spark.sparkContext.accumulator([], Paths())
                sizes = {f: stamps[f][0] for f in chunk.files if stamps.get(f)}
                rows_df = read_and_extract(
                    spark, list(chunk.files), cfg, splits_for(len(chunk.files)), steps=steps,
                    fields=fields, extract_seconds=extract_seconds, first_index=chunk.first,
                    unopened=told, sizes=sizes,
                    # splits the user set are kept as set: no packing then
                    pack_bytes=0 if cfg.read.splits_per_file
                    else pack_bytes(sizes, cores, cfg.read.pack_min_bytes),
                )  # fmt: skip
            written = write_guarded(rows_df, path, cfg.output.compression, io, guard=guard)
            if status == "ran":
                unopened = sorted(set(told.value))
            marker = commit(path, {
                "stage": "documents", "chunk": chunk.name, "files_read": list(chunk.files),
                "extraction": fp_x, "steps": steps_fingerprint,
                "seconds": time.perf_counter() - t0,
                "schema": schema.serialize().to_pybytes().hex(),
                "unopened": unopened,  # tried again by the next run
            }, written, guard)  # fmt: skip
        rows = int(marker["rows"])
        seconds = time.perf_counter() - t0
        progress.add(chunk, rows, reused=status == "reused")
        log.info("%s %-7s %3d file(s) %9d records %7.1f s", chunk.name, status,
                 len(chunk.files), rows, seconds)  # fmt: skip
        return ChunkResult(chunk.name, len(chunk.files), status, rows, seconds,
                           _hash(fp_x, steps_fingerprint, unopened),  # rows differ by these
                           [f.uri for f in listed_files(path, marker)])  # fmt: skip

    try:
        with ThreadPoolExecutor(max_workers=cfg.chunks.parallel) as pool:
            results = list(pool.map(one, chunks))
    finally:
        progress.stop.set()
    log.info("%s", progress.line())
    if guard is not None:
        guard()
    (root / MARKER).write_text(json.dumps({
        "stage": "documents", "chunks": len(chunks), "rows": sum(r.rows for r in results),
    }, indent=2))  # fmt: skip
    parts = [Location(u) for r in results for u in r.parts]
    docs = read_parquet(spark, parts, spark_schema(schema), io)
    return docs, results, progress.figures


def marker_schema(marker: dict) -> pa.Schema:
    """The Arrow schema a chunk was written with (from its marker)."""
    return pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(marker["schema"])))


def committed(out: Location) -> tuple[int, int]:
    """(chunks, records) of the documents pass committed in the output `out`: what a rerun
    into it reuses (each chunk's marker; one listing and a small read per chunk)."""
    root = out / "_stages" / "documents"
    chunks = rows = 0
    for name in root.names():
        if name.startswith("chunk-"):
            marker = read_marker(root / name)
            if marker is not None:
                chunks += 1
                rows += int(marker.get("rows", 0))
    return chunks, rows
