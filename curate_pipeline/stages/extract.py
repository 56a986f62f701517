"""Stage `extract`, and the documents pass built on it: decode each candidate page, extract
its main text with trafilatura, then run the per-document stages on it in the same task.

Extraction dominates the run. It runs inside the read tasks (which split large files by byte
range), so the raw HTML goes from the WARC to trafilatura without a shuffle or a trip
through the JVM. The per-document halves of the later stages (language ID, rules, quality,
dedup keys and signatures, tokens) follow on each batch of extracted rows before anything
leaves Python (run by the step mechanism, step.py), so the pass is one Spark job and one
write, whatever the number of stages.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from functools import partial

import pyarrow as pa
from pyspark import Accumulator, Broadcast
from pyspark.sql import DataFrame, SparkSession

from curate_pipeline.config import Config
from curate_pipeline.document.extract import Screen, process_record
from curate_pipeline.document.langid import (
    cheap_view,
    load_fasttext,
    predict_languages,
    prefilter_verdict,
)
from curate_pipeline.document.url_filter import list_digests, load_url_filter
from curate_pipeline.engine.models import load_shipped, ship
from curate_pipeline.stages.arrow_batches import with_fields
from curate_pipeline.stages.langid import lid_model_path
from curate_pipeline.stages.read import read_warcs
from curate_pipeline.stages.schema import DOC_SCHEMA
from curate_pipeline.stages.step import Running, run_steps


def language_screen(spark: SparkSession, cfg: Config) -> Screen | None:
    """The language pre-filter (langid.prefilter): lid.176 on the page's cheap text view."""
    conf = cfg.langid
    if not conf.prefilters():
        return None
    name = ship(spark, lid_model_path(cfg))

    def screen(html: str) -> tuple[str, str, str, dict] | None:
        model = load_shipped(name, load_fasttext)
        view = cheap_view(html, conf.prefilter_view, conf.prefilter_chars)
        if not view.strip():
            return None
        ((lang, score),) = predict_languages(model, [view])
        verdict = prefilter_verdict(lang, score, conf)
        return ("lang", *verdict, {"lang": lang, "lang_score": score}) if verdict else None

    return screen


_url_filters: dict[tuple, Broadcast | None] = {}
_url_filters_lock = threading.Lock()


def url_filter_broadcast(spark: SparkSession, cfg: Config) -> Broadcast | None:
    """The URL filter's lists, loaded on the driver and broadcast once per session and lists
    (millions of domains): every chunk's job uses the same broadcast, not one of its own."""
    key = (spark.sparkContext.applicationId, cfg.section_hash("url_filter"),
           tuple(sorted(list_digests(cfg.url_filter).items())))  # fmt: skip
    with _url_filters_lock:  # chunks start from several driver threads
        if key not in _url_filters:
            url_filter = load_url_filter(cfg.url_filter)
            _url_filters[key] = (
                None if url_filter is None else spark.sparkContext.broadcast(url_filter)
            )
        return _url_filters[key]


def read_and_extract(
    spark: SparkSession,
    files: list[str],
    cfg: Config,
    splits_per_file: int,
    steps: Sequence[Running] = (),
    fields: Sequence[pa.Field] = (),
    extract_seconds: Accumulator | None = None,
    first_index: int = 0,
    unopened: Accumulator | None = None,
    sizes: dict[str, int] | None = None,
    pack_bytes: int = 0,
) -> DataFrame:
    """A row for every record of `files`; decode/extract failures and the steps' drops are
    rejections. `extract_seconds`, if given, sums the time spent decoding and extracting.
    `sizes`, `pack_bytes`: small files read several to a task (stages/read.py plan_tasks)."""
    # One cache scope per run: payloads repeated within this run are extracted once.
    extract = partial(process_record, s=cfg.extract, read=cfg.read, scope=uuid.uuid4().hex,
                      screen=language_screen(spark, cfg))  # fmt: skip
    lists = url_filter_broadcast(spark, cfg)
    if lists is not None:
        unfiltered = extract

        def extract(row: dict) -> dict:
            if row.get("reject_reason") is None:
                blocked = lists.value.verdict(row.get("url"))
                if blocked:  # decided before extraction: the page is never parsed
                    row["reject_stage"], row["reject_reason"] = "url", blocked[0]
                    row["reject_detail"] = blocked[1][:500]
                    row["payload"] = None
                    return row
            return unfiltered(row)

    if extract_seconds is not None:
        plain = extract

        def extract(row: dict) -> dict:
            t0 = time.perf_counter()
            out = plain(row)
            extract_seconds.add(time.perf_counter() - t0)
            return out

    prepare = partial(run_steps, steps=steps) if steps else None
    return read_warcs(
        spark, files, cfg, splits_per_file, then=extract, schema=with_fields(DOC_SCHEMA, fields),
        prepare=prepare, first_index=first_index, unopened=unopened, sizes=sizes,
        pack_bytes=pack_bytes,
    )  # fmt: skip
