"""The stage registry: every stage after extraction, in the order its per-document steps
run. Each stage module defines its entry (`STAGE`, a `curate_pipeline.stages.step.Stage`: name,
ledger name, step, corpus half, config sections, when it is on, settings, model);
`run/orchestrate.py` chains them; `run/preflight.py` checks them."""

from __future__ import annotations

from curate_pipeline.config import Config
from curate_pipeline.document.text import regex_filter
from curate_pipeline.stages import (
    decontamination,
    exact_dedup,
    langid,
    near_dedup,
    pii,
    prior_dedup,
    quality,
    quality_buckets,
    rules,
    tokenize,
)
from curate_pipeline.stages.step import Stage, per_document

# In the order their steps run. Each entry is defined beside its stage's code (`STAGE`).
STAGES: list[Stage] = [
    langid.STAGE,
    rules.STAGE,
    # a filter with nothing to load or ship: its per-document check is the whole stage
    Stage(
        "regex_filter",
        ledger="regex",
        step=per_document(regex_filter.checker),
        enabled=lambda c: c.regex_filter.enabled and bool(c.regex_filter.patterns),
        passed="no pattern matched",
    ),
    quality.STAGE,
    decontamination.STAGE,  # after the filters (it reads their kept text), before dedup keys
    prior_dedup.STAGE,  # what earlier outputs hold (dedup.against), before this run's dedup
    exact_dedup.STAGE,
    near_dedup.STAGE,
    quality_buckets.STAGE,  # after dedup: the percentiles of the corpus that is kept
    pii.STAGE,
    tokenize.STAGE,
]

# Per-document columns stages add, published in data/'s metadata struct when present.
STAGE_METADATA = (
    "quality_score",
    "quality_bucket",
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
    """The stages a run with `cfg` runs, in order, the user's steps (steps.custom) among them."""
    from curate_pipeline.stages.custom import with_custom

    return with_custom([st for st in STAGES if st.enabled(cfg)], cfg, [st.name for st in STAGES])


def stage_metadata(cfg: Config) -> list[str]:
    """STAGE_METADATA and the score column of each classifier in the quality registry."""
    scores = [c.score_column for c in cfg.quality.registry()] if cfg.quality.enabled else []
    return [*STAGE_METADATA, *(c for c in scores if c not in STAGE_METADATA)]
