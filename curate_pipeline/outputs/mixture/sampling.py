"""Deterministic mixture sampling: never rand(), never partition order.

A document of a source seen `epochs` times appears floor(epochs) whole times, plus once more
when u(doc_id, seed, repeat) < the fractional part, where u is a uniform number in [0, 1)
from SHA-1: the same document gets the same copies on every run and every partitioning.
"""

from __future__ import annotations

import hashlib
import math


def uniform(doc_id: str, seed: int, repeat: int) -> float:
    digest = hashlib.sha1(f"{seed}\0{repeat}\0{doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def copies(doc_id: str, epochs: float, seed: int) -> list[int]:
    """The repeat indices of a document: 0 .. floor(epochs)-1, plus floor(epochs) if drawn."""
    whole = math.floor(epochs)
    frac = epochs - whole
    out = list(range(whole))
    if frac > 0 and uniform(doc_id, seed, whole) < frac:
        out.append(whole)
    return out
