"""Percentile buckets of classifier scores, and their ensemble (Nemotron-CC, Su et al. 2024).

A classifier's cuts are its scores at the corpus percentiles 100/B, 2*100/B, ..., (B-1)*100/B
(B buckets; Nemotron-CC: 20, cuts at 5, 10, ..., 95). A score's bucket is the number of cuts
at or below it (`numpy.digitize(score, cuts)`, as NeMo's Nemotron-CC recipe maps scores),
0 .. B-1. The ensemble bucket of a document is the maximum (Nemotron-CC) or the rounded mean
of its classifiers' buckets; classifiers that did not score it (another language) are left
out, and a document none scored has no bucket.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence


def percentiles(buckets: int) -> list[float]:
    """The probabilities whose quantiles cut `buckets` buckets: 0.05 .. 0.95 for 20."""
    return [k / buckets for k in range(1, buckets)]


def bucket(score: float, cuts: Sequence[float]) -> int:
    """numpy.digitize(score, cuts) for ascending cuts: the cuts <= score."""
    return bisect.bisect_right(cuts, score)


def ensemble(buckets: Sequence[int | None], rule: str) -> int | None:
    got = [b for b in buckets if b is not None]
    if not got:
        return None
    if rule == "max":
        return max(got)
    return math.floor(sum(got) / len(got) + 0.5)  # mean, halves rounded up
