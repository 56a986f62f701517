"""Stage `decontamination`: documents holding evaluation items' n-grams dropped, or the
matches cut out (curate_pipeline/document/text/decontamination.py), a per-document step after the
quality
filters and before the dedup keys (they hash the text as it will be published).

The index is built once on the driver from the configured files and broadcast: each executor
receives it once, not with every task. Each document gets `decont_set` (the set of its first
match, null when clean) and `decont_removed_chars` (characters cut under `remove`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from curate_pipeline.config import Config, DecontaminationConf
from curate_pipeline.document.text.decontamination import Index, build_index, check, read_items
from curate_pipeline.engine.models import digest
from curate_pipeline.stages.step import DocumentStep, Drop, Stage, Verdict, each

DECONT_FIELDS = [pa.field("decont_set", pa.string()), pa.field("decont_removed_chars", pa.int32())]


@lru_cache(maxsize=2)
def _index(section_json: str, stamps: tuple) -> Index:  # noqa: ARG001 (stamps: cache key)
    c = DecontaminationConf.model_validate_json(section_json)
    sets = [(s.name, read_items(s.path, s.format, s.fields, s.id_field)) for s in c.sets]
    return build_index(sets, c.ngram)


def load_index(c: DecontaminationConf) -> Index:
    """The section's index, built once per process for the same files."""
    stamps = []
    for s in c.sets:
        st = Path(s.path).stat()
        stamps.append((s.path, st.st_size, st.st_mtime_ns))
    return _index(c.model_dump_json(), tuple(stamps))


def decont_settings(cfg: Config) -> object:
    """What a chunk's verdicts depend on: the section and the sets' contents."""
    c = cfg.decontamination
    return [cfg.section_hash("decontamination"), [digest(Path(s.path)) for s in c.sets]]


def summary(cfg: Config) -> dict:
    """The manifest's per-set figures of the index (documents are counted by outcomes)."""
    c = cfg.decontamination
    if not (c.enabled and c.sets):
        return {}
    index = load_index(c)
    return {
        "ngram": c.ngram,
        "policy": c.policy,
        "index_ngrams": int(len(index.hashes)),
        "sets": {
            s.name: {"items": s.items, "items_too_short": s.too_short, "ngrams": s.ngrams}
            for s in index.summaries
        },
    }


def decont_step(spark: SparkSession, cfg: Config) -> DocumentStep:
    c = cfg.decontamination
    shipped = spark.sparkContext.broadcast(load_index(c))
    policy, margin, max_pieces, min_piece = (
        c.policy, c.margin_chars, c.max_pieces, c.min_piece_chars
    )  # fmt: skip

    def decontaminate(doc: dict) -> Verdict:
        v = check(doc["text"] or "", shipped.value, policy, margin, max_pieces, min_piece)
        doc["decont_set"] = v.set_name
        doc["decont_removed_chars"] = v.removed_chars
        doc["text"] = v.text
        return Drop(v.set_name, v.detail) if v.rejected else None

    return DocumentStep(DECONT_FIELDS, each(decontaminate))


STAGE = Stage(
    "decontamination",
    ledger="decont",
    step=decont_step,
    settings=decont_settings,
    enabled=lambda c: c.decontamination.enabled and bool(c.decontamination.sets),
    passed="not contaminated",
)
