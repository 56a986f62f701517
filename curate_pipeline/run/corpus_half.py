"""Everything after the documents pass: the corpus stages, the kept rows, data/, rejected/
and the mixture, over a documents DataFrame (the run's, or a benchmark's).

What moves between tasks: the corpus stages shuffle narrow rows
(id, crawl position, URL, input file, key or signature); the kept rows are assembled where
the documents pass wrote them (stages/kept_rows.py); data/ and rejected/ are narrowed to files
sized by bytes (run/sizing.py) without a shuffle; the only exchange of text is the shards'
global shuffle of the kept documents (outputs/mixture/write.py), which is the product.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce

from pyspark import Accumulator
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from curate_pipeline.config import Config
from curate_pipeline.engine.capacity import capacity
from curate_pipeline.engine.compat import to_arrow
from curate_pipeline.engine.progress import SparkProgress
from curate_pipeline.engine.spark import size_shuffles
from curate_pipeline.engine.storage import hadoop_uri, partition_value, read_parquet, write_parquet
from curate_pipeline.location import Location
from curate_pipeline.outputs import report_examples
from curate_pipeline.outputs.mixture.write import write_mixture
from curate_pipeline.outputs.publish.versions import TABLES, table_folder
from curate_pipeline.run.outcomes import Outcomes, count_outcomes
from curate_pipeline.run.sizing import DATA_BYTES_PER_TEXT_BYTE, data_files, ledger_files
from curate_pipeline.run.stage_store import StageResult, materialize, prune
from curate_pipeline.stages.kept_rows import (
    DATA_GROUP,
    LOCAL_LOOKUP_ROWS,
    added_columns,
    cut_groups,
    data_groups,
    lookup_groups,
    merge,
    narrow,
    text_per_input,
    write_lookup,
)
from curate_pipeline.stages.prior_dedup import INDEX, index_frame
from curate_pipeline.stages.registry import stage_metadata
from curate_pipeline.stages.step import Stage

log = logging.getLogger(__name__)


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def step_settings(st: Stage, cfg: Config) -> object:
    return st.settings(cfg) if st.settings else cfg.section_hash(*st.sections)


def kept(rows: DataFrame) -> DataFrame:
    return rows.where(F.col("reject_reason").isNull())


def output_frame(rows: DataFrame, cfg: Config) -> DataFrame:
    """Kept rows in the published shape: id, text, url, source, lang, metadata struct."""
    return rows.select(
        F.col("doc_id").alias("id"),
        "text",
        "url",
        "source",
        "lang",
        F.struct(
            "lang_score",
            "lang_key",
            "host",
            "warc_date",
            "warc_file",
            "warc_offset",
            "crawl_pos",
            "http_status",
            "content_type",
            "charset",
            "extractor",
            "input_metadata",
            *[f"{name}_stats" for name in cfg.rules.rule_sets],
            *[c for c in stage_metadata(cfg) if c in rows.columns],
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
    """Every stage's drops, narrowed to `parts` files without a shuffle: each task reads the
    drops where their stage wrote them (the documents store's rows in crawl order), so the
    rows never leave the tasks that read them. Each file's rows in crawl order (a row is
    dropped once, so the order is total): the order a stage's store holds its rows in (a
    join's hash partitions, or its input's order) does not show."""
    ledger = reduce(DataFrame.unionByName, [ledger_frame(f) for f in frames])
    return ledger.coalesce(max(1, parts)).sortWithinPartitions("crawl_pos")


def grouped_data(spark: SparkSession, cfg: Config, kept_dir: Location, files: list[str],
                 schema) -> DataFrame:  # fmt: skip
    """data/'s rows without a shuffle: one partition per data group (the kept store's
    `dgrp=K/` folders: runs of input files, ~file_bytes each), read by one task and sorted
    there by crawl position. The same rows in the same files in the same order, whatever
    the partitioning of the stages before."""
    by_group: dict[int, list[Location]] = {}
    for f in files:
        by_group.setdefault(int(partition_value(f, DATA_GROUP)), []).append(kept_dir / f)
    parts = [
        output_frame(
            kept(read_parquet(spark, by_group[k], schema, cfg.output.spark_io)), cfg
        ).coalesce(1)  # this group's files, in one task
        for k in sorted(by_group)
    ]
    if not parts:
        return output_frame(kept(spark.createDataFrame([], schema)), cfg)
    return reduce(DataFrame.unionByName, parts).sortWithinPartitions(F.col("metadata.crawl_pos"))


def _links(st: Stage, frames: list[DataFrame], corpus: list[Stage]) -> dict:
    """`links=`: the rows that stages before `st` among `corpus` (whose outputs are
    `frames[1:]`) dropped as near copies, for those st.links names; {} when none runs."""
    near = F.col("reject_reason").startswith("near")
    found = [frames[1 + i].where((F.col("reject_stage") == b.ledger) & near)
             for i, b in enumerate(corpus[: corpus.index(st)]) if b.ledger in st.links]  # fmt: skip
    return {"links": reduce(DataFrame.unionByName, found)} if found else {}


def _progress(res: StageResult) -> None:
    log.info("stage %-12s %-7s %9d records  %7.1f s", res.name, res.status, res.rows, res.seconds)


@dataclass
class CorpusHalf:
    frames: list[DataFrame]  # the documents pass, each corpus stage's rows, the kept rows
    results: dict[str, StageResult]  # per corpus stage and final step
    outcomes: Outcomes
    published: dict[str, list[dict]]  # data/ and rejected/: their files
    shown: dict  # the report's examples
    budget: dict
    write_seconds: float = 0.0
    mixture_seconds: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)


def corpus_half(
    spark: SparkSession,
    cfg: Config,
    docs: DataFrame,
    read_rows: int,
    n_inputs: int,
    out: Location,
    fp: str,
    keys: list[str],
    enabled: list[Stage],
    models: dict[str, str | None],
    version: object,
    timers: dict[str, Accumulator],
    force: bool = False,
    guard: Callable[[], None] | None = None,
    publish: Location | None = None,
) -> CorpusHalf:
    """The corpus stages over `docs` (every row of the documents pass; `keys`: the columns
    their per-document halves wrote), the kept rows, data/, rejected/, shards and tokens;
    the stages' stores go under `out`/_stages, what is published under `publish` (the
    run's version folder; `out` itself when None)."""
    publish = publish or out
    sc = spark.sparkContext
    fence = guard or (lambda: None)
    # connected components checkpoint their rounds here (shared by driver and executors),
    # where the cluster has a Hadoop connector for the output; else in executor storage
    checkpoints = out / "_stages" / "_checkpoints"
    checkpoint_uri = hadoop_uri(spark, checkpoints)
    if checkpoint_uri:
        sc.setCheckpointDir(checkpoint_uri)
    # The corpus stages move narrow rows (id, crawl position, URL, key or signature), never
    # the text: each decides from the previous one's kept rows. Their shuffles are sized by
    # the cores the cluster has once the documents pass ran (executors have registered).
    size_shuffles(spark, cfg)
    results: dict[str, StageResult] = {}
    # columns a corpus stage reads from another stage's step (scores): moved, never dropped
    reads = [c for st in enabled if st.corpus and st.reads for c in st.reads(cfg)]
    given = narrow(docs, [*keys, *(c for c in reads if c not in keys)])
    frames = [docs]
    prev = given
    corpus = [st for st in enabled if st.corpus]
    # what the console names while each runs: "stage near_dedup (2 of 5)"
    order = [*(st.name for st in corpus), "kept", "write", "mixture"]

    def step(name: str) -> SparkProgress:
        label = name if name in ("write", "mixture") else f"stage {name}"
        where = f"{label} ({order.index(name) + 1} of {len(order)})"
        return SparkProgress(sc, where, cfg.output.progress_seconds)

    def _extra(st: Stage) -> dict:
        return {
            **({"out": out} if st.stored else {}),
            **({"rows": read_rows} if st.sized else {}),
            **_links(st, frames, corpus),
        }

    for st in corpus:
        fp = fingerprint(fp, cfg.section_hash(*st.sections), models[st.name], version,
                         *([st.corpus_inputs(cfg)] if st.corpus_inputs else []))  # fmt: skip
        with step(st.name):
            rows, res = materialize(
                spark,
                st.name,
                out / "_stages" / st.name,
                fp,
                lambda st=st, prev=prev: st.corpus(spark, kept(prev), cfg, **_extra(st)),
                cfg.output.compression,
                force=force,
                io=cfg.output.spark_io,
                guard=guard,
            )
        frames.append(rows)
        prev = rows
        results[st.name] = res
        _progress(res)
    # The kept documents, whole: the corpus stages' verdicts brought to the rows where the
    # documents pass wrote them, then the final steps (the tokenizer: after the last drop).
    finals = [st for st in enabled if st.step and st.final]
    routed = cfg.langid.route_by_language
    sizing = (cfg.output.file_bytes, cfg.output.data_files, routed)  # how data/ is cut
    fp = fingerprint(fp, [(st.name, step_settings(st, cfg), models[st.name]) for st in finals],
                     sizing, version)  # fmt: skip
    lookup_dir = out / "_stages" / "_lookup"

    def build_kept() -> DataFrame:
        made = {st.name: st.step(spark, cfg) for st in finals}  # on the driver: load, ship
        running = [(st.ledger, made[st.name].check, timers[st.name]) for st in finals]
        fields = [f for st in finals for f in made[st.name].fields]
        base = kept(docs).drop(*keys)
        last = kept(frames[-1] if len(frames) > 1 else given)
        added = added_columns(frames[-1], given.columns)  # reads stay in base: not added
        arrow = to_arrow_schema(frames[-1].select(*added).schema)
        text_per_file = cfg.output.file_bytes / DATA_BYTES_PER_TEXT_BYTE
        if read_rows <= LOCAL_LOOKUP_ROWS:
            # a small run: the kept narrow rows collected once, the lookup shipped with the
            # tasks and data/'s files cut on the driver (one job where four were)
            table = to_arrow(last.select("crawl_pos", "text_bytes", *added))
            per_input = text_per_input(table, n_inputs)
            bounds = None if routed else cut_groups(per_input, text_per_file, cfg.output.data_files)
            lookup = table.select(["crawl_pos", *added]).sort_by("crawl_pos")
            if len(frames) == 1:
                return merge(base, None, [], n_inputs, 1, running, fields, bounds)
            return merge(base, lookup, list(arrow), n_inputs, 1, running, fields, bounds)
        # data/'s files: runs of input files holding ~file_bytes of Parquet, from narrow rows
        bounds = None if routed else data_groups(last, n_inputs, text_per_file,
                                                 cfg.output.data_files)  # fmt: skip
        if len(frames) == 1:  # no corpus stage: every kept document goes on
            return merge(base, None, [], n_inputs, 1, running, fields, bounds)
        groups = lookup_groups(n_inputs, capacity(spark, cfg.chunks.cores).cores)
        lookup_dir.delete()
        lookup = write_lookup(kept(frames[-1]), added, lookup_dir, n_inputs, groups,
                              cfg.output.compression, cfg.output.spark_io)  # fmt: skip
        return merge(base, lookup, list(arrow), n_inputs, groups, running, fields, bounds)

    kept_dir = out / "_stages" / "kept"
    with step("kept"):
        kept_rows, kept_res = materialize(spark, "kept", kept_dir, fp, build_kept,
                                          cfg.output.compression, force=force,
                                          io=cfg.output.spark_io, guard=guard,
                                          partition_by=None if routed else DATA_GROUP)  # fmt: skip
    lookup_dir.delete()
    _progress(kept_res)
    frames.append(kept_rows)
    for st in finals:
        results[st.name] = StageResult(st.name, kept_res.path, kept_res.status,
                                       timers[st.name].value, kept_res.rows)  # fmt: skip

    with step("write"):
        t0 = time.perf_counter()
        # counted first (narrow columns of the stored rows): the output files are sized from it
        outcomes = count_outcomes(read_rows, frames, docs)
        counts = outcomes.counts
        if routed:
            # ranges of (language, hash of id): most tasks hold one language, so data/lang=xx/
            # gets about n_files files in all, in proportion to each language's size, not one
            # per language per task (13M small files on a snapshot with hash partitioning)
            kept_text = sum(b for _, _, b in outcomes.sources.values())
            n_files = cfg.output.data_files or data_files(kept_text, cfg.output.file_bytes)
            data = output_frame(kept(kept_rows), cfg)
            data = data.repartitionByRange(n_files, "lang", F.xxhash64("id")).sortWithinPartitions(
                "lang", F.col("metadata.crawl_pos")
            )
        else:
            data = grouped_data(spark, cfg, kept_dir, kept_res.files or [], kept_rows.schema)
        n_ledger = ledger_files(sum(counts["rejected"].values()), cfg.output.file_bytes,
                                capacity(spark, cfg.chunks.cores).cores,
                                cfg.output.ledger_min_file_bytes)  # fmt: skip
        # into this run's own version folder, which no reader lists before its commit
        fence()
        # each table into its own root's folder for this writer (DIR/data/F/, DIR/rejected/F/:
        # a Delta table's root each, versions.table_folder), which no reader lists before
        # the commit; entries named relative to the table's root
        tables = {sub: table_folder(publish, sub) for sub in TABLES}
        written = {
            "data": write_parquet(data, tables["data"], cfg.output.compression,
                                  cfg.output.spark_io, file_rows=True,
                                  route_by="lang" if routed else None),
            "rejected": write_parquet(ledger_output(frames, n_ledger), tables["rejected"],
                                      cfg.output.compression, cfg.output.spark_io, file_rows=True),
        }  # fmt: skip
        if cfg.dedup.index and len(frames) > 2:  # what a later run's dedup.against reads
            last = kept(frames[-2])  # the last corpus stage's narrow rows, with the dedup keys
            finals_dropped = sum(n for k, n in counts["rejected"].items()
                                 if k.split(":")[0] in {st.ledger for st in finals})  # fmt: skip
            if finals_dropped:  # only what the final steps kept too (a join)
                last = last.join(kept(kept_rows).select("crawl_pos"), "crawl_pos")
            written[INDEX] = write_parquet(index_frame(last), tables[INDEX],
                                           cfg.output.compression, cfg.output.spark_io,
                                           file_rows=True)  # fmt: skip
        fence()
        for sub, w in written.items():  # a glob of the writer's folder sees its files only
            prune(tables[sub], w.files)
            w.files = [f | {"file": f"{publish.name}/{f['file']}"} for f in w.files]
        shown = outcomes.examples  # a few documents per reason and source, texts from docs
        report_examples.fill_texts(docs, shown)
        write_seconds = time.perf_counter() - t0
    log.info("write: data/ %d file(s), rejected/ %d file(s), %.1f s", len(written["data"].files),
             len(written["rejected"].files), write_seconds)  # fmt: skip
    t0 = time.perf_counter()
    with step("mixture"):
        budget = write_mixture(spark, kept(kept_rows), cfg, publish, outcomes.sources, guard)
    mixture_seconds = time.perf_counter() - t0
    log.info("mixture: %.1f s", mixture_seconds)
    checkpoints.delete()
    return CorpusHalf(frames, results, outcomes, {s: w.files for s, w in written.items()},
                      shown, budget, write_seconds, mixture_seconds)  # fmt: skip
