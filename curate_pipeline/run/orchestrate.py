"""Orchestration: expand inputs, chain the stages, write data, ledger and manifest.

Layout of an output directory DIR:
  DIR/_stages/documents/chunk-NNNNN/  every record read, chunk by chunk (run/chunks.py):
                        extraction and each stage's per-document step ran in one pass
                        (kept rows, or dropped with the stage and reason); + _STAGE.json,
                        the chunk's completion marker a rerun resumes from
  DIR/_stages/<name>/   narrow rows (id, crawl position, key) that reached a corpus stage
                        (exact_dedup, near_dedup) + marker; each reads the previous one's kept rows
  DIR/_stages/kept/     the kept documents, whole, where they were read: the corpus stages'
                        columns brought to them (stages/kept_rows.py), final steps (tokenize) run
  DIR/data/F/           kept documents of the writer F (its lock generation), Parquet (zstd),
                        files sized by output.file_bytes; data/F/xx/ with route_by_language;
                        DIR/data/ is a Delta table (outputs/publish/delta.py)
  DIR/rejected/F/       the ledger: doc_id, url, stage, reason, detail, crawl_pos, warc_file
  DIR/versions/F/       the rest of what a run publishes (outputs/publish/versions.py):
    shards/, tokens/, budget.json   the mixture (outputs/mixture/write.py)
    manifest.json       inputs, config and hash, versions, times, counts, stage timings
    report.html, report.json
  DIR/_versions/N.json  version N's commit, created once, atomically: the newest is current
  DIR/README.md         a dataset card: load_dataset(DIR) reads the current version's data/
                        ("rejected": its ledger)
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
from importlib import metadata

from pyspark.sql import SparkSession

from curate_pipeline.config import Config, ConfigError
from curate_pipeline.config.needs import needed_modules
from curate_pipeline.document.extract import extractor_provenance
from curate_pipeline.engine.capacity import capacity
from curate_pipeline.engine.executor_check import check_executors, wanted_for
from curate_pipeline.engine.models import digest, shipped_names
from curate_pipeline.engine.storage import (
    StorageError,
    check_shared_output,
    default_fs_is_local,
    lock_files,
    resolve,
)
from curate_pipeline.location import Location, NoExclusiveCreate, check_conditional_create, is_uri
from curate_pipeline.outputs.publish import delta, versions
from curate_pipeline.outputs.publish.card import card_versions, publish_card
from curate_pipeline.outputs.report import write_report
from curate_pipeline.run import driver_preload, increment, output_lock, run_record
from curate_pipeline.run.chunks import EXTRACTION_STAGES, Stopped, documents_pass, package_sources
from curate_pipeline.run.corpus_half import corpus_half, fingerprint, step_settings
from curate_pipeline.run.inputs import expand_inputs, input_stamps
from curate_pipeline.run.outcomes import LANG_BIN, SCORE_BIN, damage_lines, damage_report
from curate_pipeline.run.preflight import check_run, clear_output
from curate_pipeline.run.stage_store import StageResult
from curate_pipeline.run.warmup import warm_workers
from curate_pipeline.stages.custom import customs
from curate_pipeline.stages.decontamination import summary as decont_summary
from curate_pipeline.stages.prior_dedup import INDEX, index_settings
from curate_pipeline.stages.quality import quality_model_paths
from curate_pipeline.stages.registry import enabled_stages
from curate_pipeline.stages.step import Stage
from curate_pipeline.stages.tokenize import driver_tokenizer
from curate_pipeline.stages.unique_ids import unique_ids

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


def splits_per_file(spark: SparkSession, cfg: Config, n_files: int) -> int:
    """Tasks per input file: 2 tasks per core in all. Each task costs ~0.6 s of fixed overhead
    (measured: 2-4 tasks per core 19 s, 8 per core 25 s on the 724-page benchmark), while the
    skew of per-page cost averages out within a task of more than a few dozen pages."""
    if cfg.read.splits_per_file:
        return cfg.read.splits_per_file
    return max(1, -(-2 * capacity(spark, cfg.chunks.cores).cores // n_files))


EXTRACTED = "text extracted (or language decided before)"


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
        if not st.corpus and not st.final:
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
    from curate_pipeline.document.quality.model import TOY_DOCUMENTS, describe

    if cfg.quality.classifiers:  # the registry: published models, described by their conf
        out = []
        for c, path in zip(cfg.quality.classifiers, quality_model_paths(cfg), strict=True):
            drop = "" if c.threshold is None else f", drop < {c.threshold:g}"
            log.info("quality classifier %s: %s (%s, %s preprocessing, %s of %s -> %s%s)",
                     c.name, path, c.kind, c.preprocessing, c.output, c.label or "logit 0",
                     c.score_column, drop)  # fmt: skip
            out.append({"name": c.name, "path": str(path), "kind": c.kind,
                        "preprocessing": c.preprocessing, "output": c.output, "label": c.label,
                        "score_column": c.score_column, "threshold": c.threshold})  # fmt: skip
        return {"classifiers": out}
    d = describe(quality_model_paths(cfg)[0], cfg.quality.backend)
    log.info("quality classifier: %s (%s, trained on %s documents)", d["path"], d["backend"],
             d["documents"] or "an unknown number of")  # fmt: skip
    if d["toy"]:
        log.warning(
            "quality classifier %s was trained on fewer than %d documents: a toy for the demo "
            "and the tests, not for real data (train one: docs/configuration.md, quality "
            "classifier)",
            d["path"], TOY_DOCUMENTS,
        )  # fmt: skip
    return d


def lock_files_for(spark: SparkSession, cfg: Config, out: Location):
    """How the run lock reaches `out` (engine/storage.py lock_files): None for pyarrow.fs,
    the cluster's Hadoop connector for gs://, hdfs://, abfs://. An s3:// store is probed
    first (a key created twice: the second must be refused). Where nothing can create
    atomically, refused unless output.single_writer (then the run goes unlocked)."""
    try:
        check_conditional_create(out / output_lock.LOCK_NAME)
    except NoExclusiveCreate as e:
        if cfg.output.single_writer:
            return output_lock.Unlocked(str(e))
        raise ConfigError(
            f"{e}; set output.single_writer: true if only this run ever writes there, or use "
            "a store that honours conditional writes (docs/running.md: the run lock)"
        ) from None
    try:
        return lock_files(spark, out)
    except StorageError as e:
        if cfg.output.single_writer:
            return None
        raise ConfigError(
            f"{e}, so the run cannot lock it and two runs writing there at once would corrupt "
            "each other; set output.single_writer: true if only this run ever writes there, "
            "or write to a local disk or s3:// (docs/running.md: the run lock)"
        ) from None


def run(
    cfg: Config,
    inputs: list[str],
    output: str | Location,
    spark: SparkSession,
    force: bool = False,
    config_path: str | None = None,
    stop: threading.Event | None = None,
    documents_only: bool = False,
    overwrite: bool = False,
) -> dict:
    """Run the pipeline and publish a new version of DIR (outputs/publish/versions.py); returns
    the manifest (also in DIR/versions/<version>/manifest.json).
    `overwrite`: what an earlier run wrote there is deleted first, under this run's lock, at
    the place Spark resolves the output to (a scheme-less path on HDFS under YARN).
    `stop`: once set, no further chunk starts (those in flight commit), and the run raises
    Stopped. `documents_only`: the documents pass alone (`curate serve` between corpus
    runs); returns its chunks."""
    started = datetime.now(UTC).isoformat()
    t_start = time.perf_counter()
    out = resolve(spark, output)  # the place Spark's default filesystem makes it
    check_shared_output(spark, output, out)  # not one local disk per executor
    if not default_fs_is_local(spark):  # scheme-less inputs: that filesystem's too
        inputs = [a if is_uri(a) or a.startswith("file:") else resolve(spark, a).uri
                  for a in inputs]  # fmt: skip
    files = expand_inputs(inputs, cfg.input.listing_prefix)
    check_run(cfg, files, out)
    warm = warm_workers(spark, cfg)
    out.mkdir()
    files_for_lock = lock_files_for(spark, cfg, out)
    with output_lock.hold(out, cfg.output.lock_lease_seconds, files_for_lock) as lease:
        lease.check()
        if overwrite:  # the working state only: published versions go by retention
            clear_output(out)
        run_record.write(out, files, cfg, config_path)  # what the output holds, from now on
        # the version this run publishes: one past the newest now (the store refuses it if
        # another writer publishes that number first), from a folder of its lock generation
        base = versions.newest(out)
        writer = versions.writer_folder(out, lease.generation)
        return _run_stages(cfg, files, out, spark, force or overwrite, started, t_start, warm,
                           lease.check, stop, documents_only, base, writer,
                           files_for_lock.create if files_for_lock else None)  # fmt: skip


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
    stop: threading.Event | None = None,
    documents_only: bool = False,
    base: int | None = None,
    writer: int = 0,
    create: Callable[[Location, bytes], bool] | None = None,
) -> dict:
    base = versions.newest(out) if base is None else base
    number = base + 1  # its place in the log
    writer = writer or versions.writer_folder(out, 0)
    vdir = versions.folder(out, writer)  # what this run publishes, invisible until committed
    driver_preload.start()  # started before get_spark already, unless a caller made the session
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
    stepped = [st for st in enabled if st.step and not st.final]
    finals = [st for st in enabled if st.step and st.final]  # run on the kept rows
    models = {st.name: digest(st.model(cfg)) if st.model else None for st in enabled}
    steps_fp = fingerprint(
        [(st.name, step_settings(st, cfg), models[st.name]) for st in stepped], version
    )
    sc = spark.sparkContext
    timers = {name: sc.accumulator(0.0)
              for name in ["extract", *(st.name for st in (*stepped, *finals))]}  # fmt: skip
    if warm is not None:
        # The warm-up's workers go back to Spark's idle pool when its job ends: a documents
        # task started before that would fork workers of its own beside the idle warm ones.
        warm.join(timeout=120)
    t_docs = time.perf_counter()
    built = {st.name: st.step(spark, cfg) for st in stepped}  # on the driver: load, ship
    if cfg.spark.executor_check and not sc.master.startswith("local"):
        # before any chunk: every executor has what the work needs (its Python, the job's
        # dependencies, the stores' credentials, the shipped models), or one line says why not
        modules = [m for mods in needed_modules(cfg).values() for m in mods]
        check_executors(spark, wanted_for(files, out.uri, shipped_names(spark), modules))
    # the inputs' sizes and mtimes, read once: the chunks' fingerprints and the commit's
    # record of what an append may extend (one listing per folder on a store)
    stamps = input_stamps(files)
    docs, chunk_results, progress = documents_pass(
        spark, cfg, files, out / "_stages" / "documents",
        steps=[(st.ledger, built[st.name].check, timers[st.name]) for st in stepped],
        fields=[f for st in stepped for f in built[st.name].fields],
        steps_fingerprint=steps_fp, version=version[0],
        splits_for=lambda n: splits_per_file(spark, cfg, n),
        extract_seconds=timers["extract"], force=force, guard=guard, stop=stop,
        stamps=stamps,
    )  # fmt: skip
    if stop is not None and stop.is_set():  # the chunks are committed; the corpus stages wait
        raise Stopped("stopped after the documents pass")
    if documents_only:
        return {"documents_only": True, "rows": sum(r.rows for r in chunk_results),
                "chunks": [{"name": r.name, "files": r.files, "status": r.status,
                            "rows": r.rows} for r in chunk_results]}  # fmt: skip
    statuses = {r.status for r in chunk_results}
    extract_status = "ran" if "ran" in statuses else "reused"
    steps_status = "reused" if statuses == {"reused"} else "ran"
    res = StageResult("documents", str(out / "_stages" / "documents"), extract_status,
                      time.perf_counter() - t_docs, sum(r.rows for r in chunk_results))  # fmt: skip
    fp = fingerprint([r.fingerprint for r in chunk_results])  # what dedup is made from
    read_rows = res.rows  # one row per record, and per damaged stretch of a file
    # appending (run/increment.py): the corpus half sees the new inputs' rows alone, and
    # dedups them against the current version's index too (prior_dedup, as dedup.against)
    # what decides the documents (not how the run executes: run_record.NEUTRAL)
    settings = fingerprint(run_record.sections(cfg), version, models)
    base = increment.find_base(out, cfg, files, stamps, settings, number - 1, force)
    rerun = increment.rerun_within(chunk_results, base) if base is not None else None
    if rerun:
        log.info("a whole new version of %s: %s holds earlier inputs and ran again", out, rerun)
        base = None
    run_cfg = cfg
    if base is not None:
        docs = increment.new_documents(spark, cfg, chunk_results, base, docs.schema)
        read_rows = docs.count()
        fp = fingerprint(fp, "append", base.version.number, base.inputs)
        against = [*cfg.dedup.against, str(out)]
        run_cfg = cfg.model_copy(update={"dedup": cfg.dedup.model_copy(
            update={"against": against})})  # fmt: skip
    # a repeated WARC-Record-ID: later copies get their place appended
    docs = unique_ids(docs, rows=read_rows)
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

    corpus_stages = enabled_stages(run_cfg)
    for st in corpus_stages:  # prior_dedup, when this run appends
        models.setdefault(st.name, digest(st.model(run_cfg)) if st.model else None)
    half = corpus_half(spark, run_cfg, docs, read_rows, len(files), out, fp,
                       keys=[f.name for st in corpus_stages if st.corpus and st.name in built
                             for f in built[st.name].fields],
                       enabled=corpus_stages, models=models, version=version, timers=timers,
                       force=force, guard=guard, publish=vdir)  # fmt: skip
    enabled = corpus_stages
    results.update(half.results)
    stages = [results["extract"], *(results[st.name] for st in enabled)]
    # the report's funnel: what a record that passed each stage is (a stage with none drops
    # nothing but errors and is left out of the funnel)
    passed = {"extract": EXTRACTED, **{st.name: st.passed for st in enabled}}
    outcomes, counts, budget = half.outcomes, half.outcomes.counts, half.budget
    _rows_reaching_steps(stages, enabled, counts)
    stages.append(StageResult("write", str(versions.table_folder(vdir, "data")), "ran",
                              half.write_seconds,
                              counts["kept"]))  # fmt: skip
    stages.append(
        StageResult("mixture", str(vdir / "shards"), "ran", half.mixture_seconds,
                    sum(s["docs_after"] for s in budget["sources"].values()))
    )  # fmt: skip
    published, shown = half.published, half.shown
    token_index = None
    fence = guard or (lambda: None)
    if base is not None:  # the earlier version's files listed beside this run's new ones
        subs = set(published) | set(base.version.record.get("files", {}))
        published = {sub: increment.taken_over(base, sub) + published.get(sub, [])
                     for sub in sorted(subs)}  # fmt: skip
        fence()
        budget = increment.merged_budget(base.version.budget, budget, cfg)
        (vdir / "budget.json").write_text(json.dumps(budget, indent=2) + "\n")
        token_index = increment.merged_token_index(
            base, json.loads((vdir / "tokens" / "index.json").read_text())
        )
        (vdir / "tokens" / "index.json").write_text(json.dumps(token_index, indent=2) + "\n")
    # the mixture's shards it holds (an appended version: the earlier ones' too)
    index_now = token_index or json.loads((vdir / "tokens" / "index.json").read_text())
    published = {**published, "shards": increment.shard_files(index_now)}

    manifest = {
        "inputs": files,
        "output": str(out),
        # its place in DIR/_versions/ (curate_pipeline/outputs/publish/versions.py)
        "version": number,
        "path": vdir.relative_to(out),  # its folder: versions/<the writer's lock generation>
        "layout": versions.LAYOUT,  # its tables' files: DIR/<table>/<that folder's name>/
        "config": cfg.model_dump(mode="json"),
        "config_hash": cfg.section_hash(),
        # the user's steps: function, place, settings and the hash of their code
        "custom_steps": [c.record() for c in customs(cfg)],
        "versions": package_versions(),
        "extractor": extractor_provenance(cfg.extract),
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
        # what the report plots, aggregated by Spark (curate_pipeline/run/outcomes.py)
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
    if base is not None:  # the figures of the whole output; this run's under "increment"
        manifest = increment.merged_manifest(base.version.manifest, manifest)
    fence()
    (vdir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    fence()
    write_report(vdir)
    # the switch: readers see this version from the instant its commit record exists
    record = {"generation": writer, "manifest": "manifest.json", "counts": manifest["counts"],
              "files": published,
              # what a later run appending to this version checks (run/increment.py)
              "increment": increment.record(settings, files, stamps),
              # the earlier versions' folders whose files it lists (kept while it is)
              "holds": increment.references(published, token_index),
              "custom_steps": manifest["custom_steps"]}  # fmt: skip
    if INDEX in published:  # what a later run's dedup.against may compare with
        record["dedup_index"] = index_settings(cfg)
    versions.commit(out, number, record, guard, create, writer)
    try:  # published: what follows tidies up, and a lost lock is said, never hidden
        if cfg.output.delta:  # the Delta logs follow the commit (never ahead of it)
            delta.sync(out, guard)
        shown = publish_card(out)  # the card follows the log (the newest version's)
        versions.remove_legacy(out, guard)
        gone = versions.prune(out, cfg.output.keep_versions, number, guard,
                              cfg.output.keep_hours * 3600, pinned=card_versions(out))  # fmt: skip
    except output_lock.OutputBusy as e:
        raise output_lock.OutputBusy(f"version {number} ({vdir}) was published, but {e}") from None
    log.info("published version %d (%s)%s", number, vdir, f"; removed {gone}" if gone else "")
    if shown != number:
        log.warning("the dataset card names version %d, published after this one", shown)
    for line in damage_lines(manifest["damage"]):
        log.warning("%s", line)
    file_rows = sum(r["rows"] for k, r in manifest["damage"].items() if k != "corrupt_record")
    if manifest["counts"]["read"] == file_rows:
        raise NoRecords(
            f"no input yielded any record ({len(files)} file(s); ledger in "
            f"{versions.table_folder(vdir, 'rejected')})"
        )
    unreadable = manifest["damage"].get("unreadable_file", {}).get("files", 0)
    if unreadable > cfg.input.max_unreadable_files:
        raise TooManyUnreadable(
            f"{unreadable} of {len(files)} input files are unreadable, more than "
            f"input.max_unreadable_files={cfg.input.max_unreadable_files} (they are listed in "
            f"{vdir / 'manifest.json'} and the ledger, read:unreadable_file); fix the inputs, or "
            "raise the limit to keep this output"
        )
    return manifest
