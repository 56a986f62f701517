"""Orchestration: expand inputs, chain the stages, write data, ledger and manifest.

Layout of an output directory DIR:
  DIR/_stages/documents/chunk-NNNNN/  every record read, chunk by chunk (run/chunks.py):
                        extraction and each stage's per-document step ran in one pass
                        (kept rows, or dropped with the stage and reason); + _STAGE.json,
                        the chunk's completion marker a rerun resumes from
  DIR/_stages/<name>/   rows that reached a corpus stage (exact_dedup, near_dedup) + marker;
                        each reads the previous one's kept rows
  DIR/data/             kept documents, Parquet (zstd); data/lang=xx/ with route_by_language
  DIR/rejected/         the ledger: doc_id, url, stage, reason, detail, crawl_pos, warc_file
  DIR/manifest.json     inputs, config and hash, versions, times, counts, stage timings
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import reduce
from importlib import metadata

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.config import Config
from pipeline.document.extract import backend_version
from pipeline.document.warc.records import OFFSET_BITS
from pipeline.engine import driver_preload
from pipeline.engine.models import digest
from pipeline.engine.storage import default_fs_is_local, hadoop_uri, resolve, write_parquet
from pipeline.engine.warmup import warm_workers
from pipeline.location import Location, is_uri
from pipeline.outputs import report_examples
from pipeline.outputs.mixture.write import write_mixture
from pipeline.outputs.report import write_report
from pipeline.run import output_lock
from pipeline.run.chunks import EXTRACTION_STAGES, documents_pass, package_sources
from pipeline.run.inputs import expand_inputs
from pipeline.run.outcomes import LANG_BIN, SCORE_BIN, count_outcomes, damage_lines, damage_report
from pipeline.run.preflight import check_run
from pipeline.run.stage_store import StageResult, materialize, prune
from pipeline.stages.decontamination import summary as decont_summary
from pipeline.stages.quality import quality_model_path
from pipeline.stages.registry import STAGE_METADATA, enabled_stages
from pipeline.stages.step import Stage
from pipeline.stages.tokenize import driver_tokenizer
from pipeline.stages.unique_ids import unique_ids

log = logging.getLogger(__name__)

PACKAGES = (
    "curate-pipeline",
    "pyspark",
    "pyarrow",
    "warcio",
    "trafilatura",
    "brotli",
    "charset-normalizer",
    "fasttext-numpy2",
    "resiliparse",
    "numpy",
)


class NoRecords(RuntimeError):
    """Every input was unreadable, or damage only: a run with nothing in it."""


class TooManyUnreadable(RuntimeError):
    """More unreadable input files than input.max_unreadable_files (outputs are written)."""


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def code_hash() -> str:
    """Hash of the package's own source: changed code invalidates completed stages."""
    h = hashlib.sha256()
    for rel, data in package_sources():  # also from a --py-files zip
        h.update(rel.encode())
        h.update(data)
    return h.hexdigest()[:16]


def _fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def splits_per_file(spark: SparkSession, cfg: Config, n_files: int) -> int:
    """Tasks per input file: 2 tasks per core in all. Each task costs ~0.6 s of fixed overhead
    (measured: 2-4 tasks per core 19 s, 8 per core 25 s on the 724-page benchmark), while the
    skew of per-page cost averages out within a task of more than a few dozen pages."""
    if cfg.read.splits_per_file:
        return cfg.read.splits_per_file
    return max(1, -(-2 * spark.sparkContext.defaultParallelism // n_files))


def output_frame(kept: DataFrame, cfg: Config) -> DataFrame:
    """Kept rows in the published shape: id, text, url, source, lang, metadata struct."""
    return kept.select(
        F.col("doc_id").alias("id"),
        "text",
        "url",
        "source",
        "lang",
        F.struct(
            "lang_score",
            "host",
            "warc_date",
            "warc_file",
            "warc_offset",
            "crawl_pos",
            "http_status",
            "content_type",
            "charset",
            *[f"{name}_stats" for name in cfg.rules.rule_sets],
            *[c for c in STAGE_METADATA if c in kept.columns],
        ).alias("metadata"),
    )


def ledger_frame(stage_rows: DataFrame) -> DataFrame:
    return stage_rows.where(F.col("reject_reason").isNotNull()).select(
        "doc_id",
        "url",
        F.col("reject_stage").alias("stage"),
        F.col("reject_reason").alias("reason"),
        F.col("reject_detail").alias("detail"),
        "crawl_pos",
        "warc_file",
    )


def ledger_output(frames: list[DataFrame], parts: int) -> DataFrame:
    """Every stage's drops, in `parts` parts by input file (a file's rows in one part, in
    crawl order): spread over the executors, and the same parts whatever the partitioning of
    the stages before."""
    ledger = reduce(DataFrame.unionByName, [ledger_frame(f) for f in frames])
    by_file = F.shiftright("crawl_pos", OFFSET_BITS)
    return ledger.repartition(max(1, parts), by_file).sortWithinPartitions("crawl_pos")


EXTRACTED = "text extracted (or language decided before)"


def _kept(rows: DataFrame) -> DataFrame:
    return rows.where(F.col("reject_reason").isNull())


def _step_settings(st: Stage, cfg: Config) -> object:
    return st.settings(cfg) if st.settings else cfg.section_hash(*st.sections)


def _rows_reaching_steps(stages: list[StageResult], enabled: list[Stage], counts: dict) -> None:
    """Rows reaching each per-document step: read minus the drops of everything before it
    (the steps share one pass, so no stage output of their own counts them)."""
    dropped_by: dict[str, int] = {}
    for key, n in counts["rejected"].items():
        stage = key.split(":", 1)[0]
        dropped_by[stage] = dropped_by.get(stage, 0) + n
    left = counts["read"] - sum(dropped_by.get(s, 0) for s in EXTRACTION_STAGES)
    results = {r.name: r for r in stages}
    for st in enabled:
        if not st.corpus:
            results[st.name].rows = left
        left -= dropped_by.get(st.ledger, 0)


def _decontamination(cfg: Config, matched: dict[str, dict[str, int]]) -> dict:
    out = decont_summary(cfg)
    none = dict.fromkeys(("documents_matched", "documents_dropped", "documents_trimmed"), 0)
    for name, figures in out.get("sets", {}).items():
        figures.update(matched.get(name, none | {"chars_removed": 0}))
    return out


def _quality_model(cfg: Config) -> dict | None:
    """The classifier that scores this run, said on the console (a toy one loudly)."""
    if not cfg.quality.enabled:
        log.info("quality classifier: off (quality.enabled: false)")
        return None
    from pipeline.document.quality.model import TOY_DOCUMENTS, describe

    d = describe(quality_model_path(cfg), cfg.quality.backend)
    log.info("quality classifier: %s (%s, trained on %s documents)", d["path"], d["backend"],
             d["documents"] or "an unknown number of")  # fmt: skip
    if d["toy"]:
        log.warning(
            "quality classifier %s was trained on fewer than %d documents: a toy for the demo "
            "and the tests, not for real data (train one: README, quality classifier)",
            d["path"], TOY_DOCUMENTS,
        )  # fmt: skip
    return d


def _progress(res: StageResult) -> None:
    log.info("stage %-12s %-7s %9d records  %7.1f s", res.name, res.status, res.rows, res.seconds)


def run(
    cfg: Config,
    inputs: list[str],
    output: str | Location,
    spark: SparkSession,
    force: bool = False,
) -> dict:
    """Run the pipeline; returns the manifest (also written to DIR/manifest.json)."""
    started = datetime.now(UTC).isoformat()
    t_start = time.perf_counter()
    out = resolve(spark, output)  # the place Spark's default filesystem makes it
    if not default_fs_is_local(spark):  # scheme-less inputs: that filesystem's too
        inputs = [a if is_uri(a) or a.startswith("file:") else resolve(spark, a).uri
                  for a in inputs]  # fmt: skip
    files = expand_inputs(inputs, cfg.input.listing_prefix)
    check_run(cfg, files, out)
    warm = warm_workers(spark, cfg)
    out.mkdir()
    with output_lock.hold(out, cfg.output.lock_lease_seconds) as lease:
        return _run_stages(cfg, files, out, spark, force, started, t_start, warm, lease.check)


def _run_stages(
    cfg: Config,
    files: list[str],
    out: Location,
    spark: SparkSession,
    force: bool,
    started: str,
    t_start: float,
    warm: threading.Thread | None = None,
    guard: Callable[[], None] | None = None,
) -> dict:
    driver_preload.start()  # started by get_spark already, unless the session came from elsewhere
    # the mixture needs the tokenizer on the driver at the end: load it meanwhile
    threading.Thread(target=driver_tokenizer, args=(cfg,), daemon=True).start()
    log.info("%d input file(s)", len(files))
    ui = spark.sparkContext.uiWebUrl
    if ui:
        log.info("Spark UI: %s", ui)
    version = (metadata.version("curate-pipeline"), code_hash())

    # The documents pass, chunk by chunk: read, extract and every stage's per-document step in
    # the same tasks; the raw HTML is never shuffled nor written, the text crosses into the
    # JVM once. Chunks already done are reused; only steps' settings changed: steps rerun.
    enabled = enabled_stages(cfg)
    scorer = _quality_model(cfg)
    stepped = [st for st in enabled if st.step]
    models = {st.name: digest(st.model(cfg)) if st.model else None for st in enabled}
    steps_fp = _fingerprint(
        [(st.name, _step_settings(st, cfg), models[st.name]) for st in stepped], version
    )
    sc = spark.sparkContext
    timers = {name: sc.accumulator(0.0) for name in ["extract", *(st.name for st in stepped)]}
    if warm is not None:
        # The warm-up's workers go back to Spark's idle pool when its job ends: a documents
        # task started before that would fork workers of its own beside the idle warm ones.
        warm.join(timeout=120)
    t_docs = time.perf_counter()
    built = {st.name: st.step(spark, cfg) for st in stepped}  # on the driver: load, ship
    docs, chunk_results, progress = documents_pass(
        spark, cfg, files, out / "_stages" / "documents",
        steps=[(st.ledger, built[st.name].check, timers[st.name]) for st in stepped],
        fields=[f for st in stepped for f in built[st.name].fields],
        steps_fingerprint=steps_fp, version=version[0],
        splits_for=lambda n: splits_per_file(spark, cfg, n),
        extract_seconds=timers["extract"], force=force, guard=guard,
    )  # fmt: skip
    statuses = {r.status for r in chunk_results}
    extract_status = "ran" if "ran" in statuses else "reused"
    steps_status = "reused" if statuses == {"reused"} else "ran"
    res = StageResult("documents", str(out / "_stages" / "documents"), extract_status,
                      time.perf_counter() - t_docs, sum(r.rows for r in chunk_results))  # fmt: skip
    fp = _fingerprint([r.fingerprint for r in chunk_results])  # what dedup is made from
    n_parts = sum(r.files * splits_per_file(spark, cfg, r.files) for r in chunk_results)
    docs = unique_ids(docs)  # a repeated WARC-Record-ID: later copies get their place appended
    read_rows = res.rows  # one row per record, and per damaged stretch of a file
    log.info("documents pass: %d records, %.1f s (%s)", res.rows, res.seconds,
             ", ".join(f"{sum(r.status == k for r in chunk_results)} chunk(s) {k}"
                       for k in ("ran", "retuned", "reused")))  # fmt: skip
    # Per stage: the documents pass's wall time under `extract`; each step's task-seconds
    # (summed over cores, so comparable between stages, not with wall time).
    results = {"extract": StageResult("extract", res.path, res.status, res.seconds, read_rows)}
    for st in stepped:
        if not st.corpus:  # rows: set once the counts are known (_rows_reaching_steps)
            results[st.name] = StageResult(st.name, res.path, steps_status,
                                           timers[st.name].value, 0)  # fmt: skip

    # connected components checkpoint their rounds here (shared by driver and executors),
    # where the cluster has a Hadoop connector for the output; else in executor storage
    checkpoints = out / "_stages" / "_checkpoints"
    checkpoint_uri = hadoop_uri(spark, checkpoints)
    if checkpoint_uri:
        sc.setCheckpointDir(checkpoint_uri)
    frames = [docs]
    for st in (st for st in enabled if st.corpus):
        fp = _fingerprint(fp, cfg.section_hash(*st.sections), models[st.name], version)
        rows, res = materialize(
            spark,
            st.name,
            out / "_stages" / st.name,
            fp,
            lambda st=st, prev=frames[-1]: st.corpus(spark, _kept(prev), cfg),
            cfg.output.compression,
            force=force,
            io=cfg.output.spark_io,
        )
        frames.append(rows)
        results[st.name] = res
        _progress(res)
    stages = [results["extract"], *(results[st.name] for st in enabled)]
    # the report's funnel: what a record that passed each stage is (a stage with none drops
    # nothing but errors and is left out of the funnel)
    passed = {"extract": EXTRACTED, **{st.name: st.passed for st in enabled}}

    t0 = time.perf_counter()
    n_files = cfg.output.data_files or n_parts
    data = output_frame(_kept(frames[-1]), cfg)
    if cfg.langid.route_by_language:
        # ranges of (language, hash of id): most tasks hold one language, so data/lang=xx/
        # gets about n_files files in all, in proportion to each language's size, not one
        # per language per task (13M small files on a snapshot with hash partitioning)
        data = data.repartitionByRange(n_files, "lang", F.xxhash64("id")).sortWithinPartitions(
            "lang", F.col("metadata.crawl_pos")
        )
    else:
        data = data.repartition(n_files, "id").sortWithinPartitions(F.col("metadata.crawl_pos"))
    # the manifest lists what data/ and rejected/ hold: it goes first, and comes back last
    (out / "manifest.json").delete()
    for sub in ("data", "rejected"):
        (out / sub).delete()
    published = {
        "data": write_parquet(data, out / "data", cfg.output.compression, cfg.output.spark_io,
                              "lang" if cfg.langid.route_by_language else None),
        "rejected": write_parquet(ledger_output(frames, min(n_files, len(files))),
                                  out / "rejected", cfg.output.compression, cfg.output.spark_io),
    }  # fmt: skip
    for sub, written in published.items():  # readers of data/ open every file there
        prune(out / sub, written)
    outcomes = count_outcomes(read_rows, frames, docs)
    shown = report_examples.examples(frames)  # a few documents per reason and source
    counts = outcomes.counts
    _rows_reaching_steps(stages, enabled, counts)
    stages.append(
        StageResult("write", str(out / "data"), "ran", time.perf_counter() - t0, counts["kept"])
    )
    t0 = time.perf_counter()
    budget = write_mixture(spark, _kept(frames[-1]), cfg, out, outcomes.sources)
    stages.append(
        StageResult("mixture", str(out / "shards"), "ran", time.perf_counter() - t0,
                    sum(s["docs_after"] for s in budget["sources"].values()))
    )  # fmt: skip
    checkpoints.delete()

    manifest = {
        "inputs": files,
        "output": str(out),
        "config": cfg.model_dump(mode="json"),
        "config_hash": cfg.section_hash(),
        "versions": package_versions(),
        "extractor": backend_version(cfg.extract.backend),
        "spark": {
            "master": spark.sparkContext.master,
            "version": spark.version,
            "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
            "executor_memory": spark.sparkContext.getConf().get("spark.executor.memory", None),
        },
        "started": started,
        "finished": datetime.now(UTC).isoformat(),
        "seconds": round(time.perf_counter() - t_start, 3),
        "counts": counts,
        "tokens": {
            "total": budget["total_tokens"],
            "shards": budget["shards"],
            "per_source": {k: v["tokens_after"] for k, v in budget["sources"].items()},
        },
        "damage": damage_report(outcomes.damage),
        # what the report plots, aggregated by Spark (pipeline/run/outcomes.py)
        "distributions": {
            "quality_score_bin_width": SCORE_BIN,
            "lang_score_bin_width": LANG_BIN,
            **{k: {str(b): n for b, n in v.items()} for k, v in outcomes.distributions.items()},
        },
        "quality_model": scorer,  # what scored the run (null: the stage was off)
        "examples": shown,
        "rule_failures": outcomes.rule_failures,
        "pii": outcomes.pii,  # replacements in kept documents (empty when the stage is off)
        # the index per evaluation set, and the documents that matched it (empty when off)
        "decontamination": _decontamination(cfg, outcomes.decontamination),
        "languages": outcomes.languages,
        "stages": [
            {"name": s.name, "status": s.status, "seconds": round(s.seconds, 3), "rows": s.rows}
            | ({"passed": passed[s.name]} if passed.get(s.name) else {})
            for s in stages
        ],
        # extraction and the steps all run in the documents pass (the `extract` stage's time);
        # the steps' `seconds` above are their task time summed over cores, as these are
        "documents_pass_task_seconds": {k: round(t.value, 3) for k, t in timers.items()},
        # the documents pass chunk by chunk: ran, retuned (steps only) or reused
        "chunks": [
            {
                "name": r.name,
                "files": r.files,
                "status": r.status,
                "rows": r.rows,
                "seconds": round(r.seconds, 3),
            }
            for r in chunk_results
        ],
        "documents_pass": progress,
        # the Parquet files of data/ and rejected/ (relative names, rows): what this run wrote
        "files": published,
    }
    if guard is not None:
        guard()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    write_report(out)
    for line in damage_lines(manifest["damage"]):
        log.warning("%s", line)
    file_rows = sum(r["rows"] for k, r in manifest["damage"].items() if k != "corrupt_record")
    if counts["read"] == file_rows:
        raise NoRecords(
            f"no input yielded any record ({len(files)} file(s); ledger in {out / 'rejected'})"
        )
    unreadable = manifest["damage"].get("unreadable_file", {}).get("files", 0)
    if unreadable > cfg.input.max_unreadable_files:
        raise TooManyUnreadable(
            f"{unreadable} of {len(files)} input files are unreadable, more than "
            f"input.max_unreadable_files={cfg.input.max_unreadable_files} (they are listed in "
            f"{out / 'manifest.json'} and the ledger, read:unreadable_file); fix the inputs, or "
            "raise the limit to keep this output"
        )
    return manifest
