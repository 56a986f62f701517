"""Mixture weights by quality bucket (Nemotron-CC): each group of ensemble buckets
(quality.ensemble, the `quality_bucket` column) multiplies its documents' epochs by its weight
before the draw, as rehydration does by cluster size. A document without a bucket (a language
no classifier scores) or in no group counts once. The weights are the config's
(`curate_pipeline.config.GroupWeights`, which also checks them when the config is read)."""

from __future__ import annotations

from curate_pipeline.config import NO_GROUP, GroupWeights

__all__ = ["NO_GROUP", "GroupWeights"]
