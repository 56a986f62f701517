"""Mixture weights by quality bucket (Nemotron-CC): each group of ensemble buckets
(quality.ensemble, the `quality_bucket` column) multiplies its documents' epochs by its weight
before the draw, as rehydration does by cluster size. A document without a bucket (a language
no classifier scores) or in no group counts once."""

from __future__ import annotations

from pipeline.config import QualityGroup

NO_GROUP = "(no group)"


class GroupWeights:
    def __init__(self, groups: dict[str, QualityGroup], buckets: int):
        self.of: dict[int, tuple[str, float]] = {}
        for name, g in groups.items():
            lo, hi = g.buckets
            if not 0 <= lo <= hi < buckets:
                raise ValueError(
                    f"mixture.quality_groups.{name}: buckets [{lo}, {hi}] are not within "
                    f"0..{buckets - 1} (quality.ensemble.buckets)"
                )
            for b in range(lo, hi + 1):
                if b in self.of:
                    raise ValueError(f"mixture.quality_groups: bucket {b} is in both "
                                     f"{self.of[b][0]} and {name}")  # fmt: skip
                self.of[b] = (name, g.weight)

    def weight(self, bucket: int | None) -> float:
        return self.of.get(bucket, (NO_GROUP, 1.0))[1] if bucket is not None else 1.0

    def group(self, bucket: int | None) -> str:
        return self.of.get(bucket, (NO_GROUP, 1.0))[0] if bucket is not None else NO_GROUP
