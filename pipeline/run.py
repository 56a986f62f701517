"""Orchestration: expand inputs, chain the stages, write data, ledger and manifest.

Layout of an output directory DIR:
  DIR/_stages/<name>/   rows that reached a stage (kept, or dropped here with a reason) +
                        _STAGE.json; each stage reads the previous one's kept rows
  DIR/data/             kept documents, Parquet (zstd); data/lang=xx/ with route_by_language
  DIR/rejected/         the ledger: doc_id, url, stage, reason, detail, crawl_pos, warc_file
  DIR/manifest.json     inputs, config and hash, versions, times, counts, stage timings
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from importlib import metadata
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.config import Config
from pipeline.inputs import expand_inputs
from pipeline.mixture.write import write_mixture
from pipeline.models import digest
from pipeline.preflight import check_run
from pipeline.report import preload as preload_report
from pipeline.report import write_report
from pipeline.stage_store import StageResult, materialize
from pipeline.stages.exact_dedup import exact_dedup
from pipeline.stages.extract import read_and_extract
from pipeline.stages.langid import identify_language, lid_model_path
from pipeline.stages.near_dedup import near_dedup
from pipeline.stages.quality import quality_model_path, score_quality
from pipeline.stages.rules import apply_rules
from pipeline.stages.tokenize import tokenize
from pipeline.warmup import warm_workers

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
    "numpy",
)


@dataclass(frozen=True)
class Stage:
    """A filter stage after extraction: `build(spark, kept_so_far, cfg)` returns every row it
    was given, with its own columns added and its drops marked with a reason."""

    name: str
    sections: tuple[str, ...]  # config sections it reads: a change reruns it
    build: Callable[[SparkSession, DataFrame, Config], DataFrame]
    model: Callable[[Config], Path] | None = None  # its model file is in the fingerprint too
    enabled: Callable[[Config], bool] = lambda cfg: True


STAGES = [
    Stage("langid", ("langid",), identify_language, lid_model_path),
    Stage("rules", ("rules",), apply_rules),
    Stage(
        "quality",
        ("quality",),
        score_quality,
        quality_model_path,
        enabled=lambda cfg: cfg.quality.enabled,
    ),
    Stage("exact_dedup", ("exact_dedup",), exact_dedup, enabled=lambda c: c.exact_dedup.enabled),
    Stage("near_dedup", ("near_dedup",), near_dedup, enabled=lambda c: c.near_dedup.enabled),
    Stage("tokenize", ("sources", "tokenizer"), tokenize),
]

# Per-document columns stages add, published in data/'s metadata struct when present.
STAGE_METADATA = (
    "quality_score",
    "exact_copies",
    "dup_cluster",
    "dup_cluster_size",
    "n_tokens",
)


def enabled_stages(cfg: Config) -> list[Stage]:
    return [st for st in STAGES if st.enabled(cfg)]


class ReconcileError(RuntimeError):
    """Counts that do not add up: some record was neither kept nor rejected."""


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
    root = Path(__file__).parent
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
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


def _kept(rows: DataFrame) -> DataFrame:
    return rows.where(F.col("reject_reason").isNull())


def count_outcomes(read_rows: int, frames: list[DataFrame]) -> dict:
    """`{"read", "kept", "rejected": {"stage:reason": n}}` over the stage outputs in order,
    checked to reconcile: every row read is kept by the last stage or dropped by one."""
    drops = reduce(
        DataFrame.unionByName,
        [f.select("reject_stage", "reject_reason").where(F.col("reject_reason").isNotNull())
         for f in frames],
    )  # fmt: skip
    agg = drops.groupBy("reject_stage", "reject_reason").count().collect()  # one row a reason
    kept = _kept(frames[-1]).count()
    rejected = {f"{r['reject_stage']}:{r['reject_reason']}": int(r["count"]) for r in agg}
    counts = {"read": read_rows, "kept": kept, "rejected": dict(sorted(rejected.items()))}
    if read_rows != kept + sum(rejected.values()):
        raise ReconcileError(
            f"counts do not reconcile: read {read_rows} != kept {kept} + rejected "
            f"{sum(rejected.values())} ({rejected}); this is a pipeline bug, please report it"
        )
    return counts


def rule_failures(rules_rows: DataFrame) -> dict[str, int]:
    """How many documents broke each rule (a document can break several)."""
    agg = (
        rules_rows.select(F.explode("failed_rules").alias("rule")).groupBy("rule").count()
    ).collect()
    return {r["rule"]: int(r["count"]) for r in sorted(agg, key=lambda r: (-r["count"], r["rule"]))}


def language_counts(lang_rows: DataFrame) -> dict[str, dict[str, int]]:
    """Per language label: documents identified, and how many of them the stage kept."""
    agg = (
        lang_rows.groupBy("lang")
        .agg(F.count("*").alias("docs"), F.count(F.when(F.col("reject_reason").isNull(), 1)))
        .collect()
    )
    rows = sorted(agg, key=lambda r: (-r["docs"], r["lang"] or ""))
    return {(r["lang"] or "unknown"): {"docs": int(r[1]), "kept": int(r[2])} for r in rows}


def _progress(res: StageResult) -> None:
    log.info("stage %-12s %-7s %9d records  %7.1f s", res.name, res.status, res.rows, res.seconds)


def run(
    cfg: Config,
    inputs: list[str],
    output: str | Path,
    spark: SparkSession,
    force: bool = False,
) -> dict:
    """Run the pipeline; returns the manifest (also written to DIR/manifest.json)."""
    started = datetime.now(UTC).isoformat()
    t_start = time.perf_counter()
    warm_workers(spark)
    out = Path(output).resolve()
    files = expand_inputs(inputs, cfg.input.listing_prefix)
    check_run(cfg, files, out)
    out.mkdir(parents=True, exist_ok=True)
    threading.Thread(target=preload_report, name="preload-report", daemon=True).start()
    log.info("%d input file(s)", len(files))
    ui = spark.sparkContext.uiWebUrl
    if ui:
        log.info("Spark UI: %s", ui)
    version = (metadata.version("curate-pipeline"), code_hash())
    stages: list[StageResult] = []

    # read + extract run in the same tasks: the raw HTML is never shuffled nor written.
    splits = splits_per_file(spark, cfg, len(files))
    n_parts = len(files) * splits
    fp_extract = _fingerprint(files, cfg.section_hash("input", "read", "extract"), version)
    docs, res = materialize(
        spark,
        "extract",
        out / "_stages" / "extract",
        fp_extract,
        lambda: read_and_extract(spark, files, cfg, splits),
        cfg.output.compression,
        force=force,
    )
    stages.append(res)
    _progress(res)
    read_rows = res.rows  # one row per WARC record (or per unreadable file tail)

    # connected components checkpoint their rounds here (shared by driver and executors)
    checkpoints = out / "_stages" / "_checkpoints"
    spark.sparkContext.setCheckpointDir(str(checkpoints))
    frames = [docs]
    by_name = {"extract": docs}
    fp = fp_extract
    for st in enabled_stages(cfg):
        model = digest(st.model(cfg)) if st.model else None
        fp = _fingerprint(fp, cfg.section_hash(*st.sections), model, version)
        rows, res = materialize(
            spark,
            st.name,
            out / "_stages" / st.name,
            fp,
            lambda st=st, prev=frames[-1]: st.build(spark, _kept(prev), cfg),
            cfg.output.compression,
            force=force,
        )
        frames.append(rows)
        by_name[st.name] = rows
        stages.append(res)
        _progress(res)

    t0 = time.perf_counter()
    n_files = cfg.output.data_files or n_parts
    data = (
        output_frame(_kept(frames[-1]), cfg)
        .repartition(n_files, "id")
        .sortWithinPartitions(F.col("metadata.crawl_pos"))
    )
    for sub in ("data", "rejected"):
        shutil.rmtree(out / sub, ignore_errors=True)
    writer = data.write.option("compression", cfg.output.compression)
    if cfg.langid.route_by_language:
        writer = writer.partitionBy("lang")
    writer.parquet(str(out / "data"))
    ledger = reduce(DataFrame.unionByName, [ledger_frame(f) for f in frames])
    ledger.repartition(1).sortWithinPartitions("crawl_pos").write.option(
        "compression", cfg.output.compression
    ).parquet(str(out / "rejected"))
    counts = count_outcomes(read_rows, frames)
    stages.append(
        StageResult("write", str(out / "data"), "ran", time.perf_counter() - t0, counts["kept"])
    )
    t0 = time.perf_counter()
    budget = write_mixture(spark, _kept(frames[-1]), cfg, out)
    stages.append(
        StageResult("mixture", str(out / "shards"), "ran", time.perf_counter() - t0,
                    sum(s["docs_after"] for s in budget["sources"].values()))
    )  # fmt: skip
    shutil.rmtree(checkpoints, ignore_errors=True)

    manifest = {
        "inputs": files,
        "output": str(out),
        "config": cfg.model_dump(mode="json"),
        "config_hash": cfg.section_hash(),
        "versions": package_versions(),
        "spark": {"master": spark.sparkContext.master, "version": spark.version},
        "started": started,
        "finished": datetime.now(UTC).isoformat(),
        "seconds": round(time.perf_counter() - t_start, 3),
        "counts": counts,
        "tokens": {
            "total": budget["total_tokens"],
            "shards": budget["shards"],
            "per_source": {k: v["tokens_after"] for k, v in budget["sources"].items()},
        },
        "rule_failures": rule_failures(by_name["rules"]),
        "languages": language_counts(by_name["langid"]),
        "stages": [
            {"name": s.name, "status": s.status, "seconds": round(s.seconds, 3), "rows": s.rows}
            for s in stages
        ],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    write_report(out)
    return manifest
