"""The stage registry: every stage after extraction, in the order its per-document steps
run, with what the run needs to know of it (config sections, step, fields, corpus half,
model, when it is on, its ledger name). `run/orchestrate.py` chains them; `run/preflight.py`
checks them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pipeline.config import Config
from pipeline.stages.arrow_batches import RowStep
from pipeline.stages.decontamination import DECONT_FIELDS, decont_settings, decont_step
from pipeline.stages.exact_dedup import KEY_FIELDS, exact_dedup, key_step
from pipeline.stages.langid import LANG_FIELDS, language_step, lid_model_path
from pipeline.stages.near_dedup import SIG_FIELDS, near_dedup, signature_settings, signature_step
from pipeline.stages.pii import PII_FIELDS, pii_step
from pipeline.stages.quality import QUALITY_FIELDS, quality_model_path, quality_step
from pipeline.stages.rules import rule_fields, rules_step
from pipeline.stages.tokenize import TOKEN_FIELDS, tokens_step


@dataclass(frozen=True)
class Stage:
    """A stage after extraction, in one or two halves.

    `step(spark, cfg)` is its per-document half: a function over a batch of row dicts that
    sets `fields(cfg)` and marks drops with a reason. Every step runs inside the extract tasks
    (the documents pass: one job, one write). `corpus(spark, kept_so_far, cfg)` is a half that
    needs all documents at once (dedup): its own materialised stage, which returns every row
    it was given with its columns added and its drops marked.
    """

    name: str
    sections: tuple[str, ...]  # config sections it reads: a change reruns it
    step: Callable[[SparkSession, Config], RowStep] | None = None
    fields: Callable[[Config], list[pa.Field]] = lambda cfg: []
    corpus: Callable[[SparkSession, DataFrame, Config], DataFrame] | None = None
    model: Callable[[Config], Path] | None = None  # its model file is in the fingerprint too
    enabled: Callable[[Config], bool] = lambda cfg: True
    # what of the config the step reads (default: all its sections)
    step_settings: Callable[[Config], object] | None = None
    reject_as: str | None = None  # the `stage` its drops carry in the ledger


STAGES = [
    Stage("langid", ("langid",), language_step, lambda c: LANG_FIELDS, model=lid_model_path,
          reject_as="lang"),
    Stage("rules", ("rules",), rules_step, rule_fields, reject_as="rules"),
    Stage("quality", ("quality",), quality_step, lambda c: QUALITY_FIELDS,
          model=quality_model_path, enabled=lambda c: c.quality.enabled, reject_as="quality"),
    Stage("decontamination", ("decontamination",), decont_step, lambda c: DECONT_FIELDS,
          enabled=lambda c: c.decontamination.enabled and bool(c.decontamination.sets),
          step_settings=decont_settings, reject_as="decont"),
    Stage("exact_dedup", ("exact_dedup",), key_step, lambda c: KEY_FIELDS, exact_dedup,
          enabled=lambda c: c.exact_dedup.enabled, step_settings=lambda c: None,
          reject_as="exact_dup"),
    Stage("near_dedup", ("near_dedup",), signature_step, lambda c: SIG_FIELDS, near_dedup,
          enabled=lambda c: c.near_dedup.enabled, step_settings=signature_settings,
          reject_as="near_dup"),
    Stage("pii", ("pii",), pii_step, lambda c: PII_FIELDS, enabled=lambda c: c.pii.enabled),
    Stage("tokenize", ("sources", "tokenizer"), tokens_step, lambda c: TOKEN_FIELDS),
]  # fmt: skip

# Per-document columns stages add, published in data/'s metadata struct when present.
STAGE_METADATA = (
    "quality_score",
    "exact_copies",
    "dup_cluster",
    "dup_cluster_size",
    "decont_set",
    "decont_removed_chars",
    "pii_emails",
    "pii_ips",
    "n_tokens",
)


def enabled_stages(cfg: Config) -> list[Stage]:
    return [st for st in STAGES if st.enabled(cfg)]
