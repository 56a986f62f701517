"""What earlier outputs already hold, for an append small enough for one process: the same
answer as stages/prior_dedup.py's joins, from the same rows, without a Spark job per join
(issue 65: a serve cycle's append).

Every rule is the distributed path's, decision for decision:
- exact: a new document whose exact key an indexed document has; the earliest of them by
  (output, crawl position, id) is named;
- near, for the new documents not dropped as exact copies: per LSH bucket (band, key) one of
  them falls in, the indexed documents in it are its candidates: the bucket's first (the
  smallest (output, crawl position)) always; all of them in a bucket of up to `all_pairs`
  indexed documents, else its anchors (anchor hash < 2^31 x anchors / n); a candidate whose
  signature agrees on at least `threshold` of the values is a match; per document, the
  match with the largest (Jaccard, output, id) is named and the distinct (output, id)
  matched are counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from curate_pipeline.document.dedup.clusters import (
    NearSettings,
    agreement,
    distinct,
    pairs_within,
    slices,
)


@dataclass
class Indexed:
    """The earlier outputs' index rows: output name, crawl position, id, exact key (or None),
    signatures and band keys (rows without them: None in `has_bands`), anchor hash."""

    output: list[str]
    pos: np.ndarray
    ids: list[str]
    keys: list[str | None]
    sigs: np.ndarray  # (n, values); rows without a signature are zeros
    bands: np.ndarray  # (n, bands)
    has_bands: np.ndarray  # bool
    anchor_hash: np.ndarray


@dataclass
class Given:
    pos: np.ndarray
    keys: list[str | None]
    sigs: np.ndarray
    bands: np.ndarray
    has_bands: np.ndarray


def exact_matches(given: Given, index: Indexed) -> dict[int, tuple[str, int, str]]:
    """Per given row with an indexed exact key: the earliest (output, crawl_pos, id)."""
    first: dict[str, tuple[str, int, str]] = {}
    for o, p, i, k in zip(index.output, index.pos.tolist(), index.ids, index.keys, strict=True):
        if k is not None:
            t = (o, p, i or "")
            if k not in first or t < first[k]:
                first[k] = t
    return {r: first[k] for r, k in enumerate(given.keys) if k is not None and k in first}


def near_matches(given: Given, index: Indexed, rows: np.ndarray, c: NearSettings
                 ) -> dict[int, tuple[tuple[float, str, str], int]]:  # fmt: skip
    """Per given row among `rows` near an indexed document: its best match (Jaccard,
    output, id) and how many distinct (output, id) it matches."""
    rows = rows[given.has_bands[rows]]
    their = np.flatnonzero(index.has_bands)
    if len(rows) == 0 or len(their) == 0:
        return {}
    n_bands = given.bands.shape[1]
    band = np.concatenate([np.tile(np.arange(n_bands), len(their)),
                           np.tile(np.arange(n_bands), len(rows))])  # fmt: skip
    key = np.concatenate([index.bands[their].reshape(-1), given.bands[rows].reshape(-1)])
    row = np.concatenate([np.repeat(their, n_bands), np.repeat(rows, n_bands)])
    mine = np.repeat([False, True], [len(their) * n_bands, len(rows) * n_bands])
    order = np.lexsort((row, mine, key, band))
    band, key, row, mine = band[order], key[order], row[order], mine[order]
    new = np.ones(len(row), dtype=bool)
    new[1:] = (band[1:] != band[:-1]) | (key[1:] != key[:-1])
    bucket = np.cumsum(new) - 1
    n_buckets = int(bucket[-1]) + 1
    n_theirs = np.bincount(bucket[~mine], minlength=n_buckets)
    n_mine = np.bincount(bucket[mine], minlength=n_buckets)
    touched = (n_theirs > 0) & (n_mine > 0)
    # a bucket's first indexed document: the smallest (output, crawl position)
    rank = np.empty(len(index.pos), np.int64)
    rank[sorted(range(len(index.pos)), key=lambda i: (index.output[i], int(index.pos[i])))] = (
        np.arange(len(index.pos)))  # fmt: skip
    t_at = np.flatnonzero(~mine & touched[bucket])
    t_bucket = bucket[t_at]
    first = np.full(n_buckets, np.iinfo(np.int64).max)
    np.minimum.at(first, t_bucket, rank[row[t_at]])
    n = n_theirs[t_bucket]
    compared = rank[row[t_at]] == first[t_bucket]
    if c.verify and c.all_pairs > 0:
        anchor = index.anchor_hash[row[t_at]] < np.float64(1 << 31) * np.float64(c.anchors) / n
        compared |= (n <= c.all_pairs) | anchor
    t_at = t_at[compared]
    starts, sizes = slices(bucket[t_at], n_buckets)
    m_at = np.flatnonzero(mine & touched[bucket])
    a, b = pairs_within(bucket, m_at, starts, sizes, t_at)
    code = distinct(row[a] * len(index.pos) + row[b])  # (given row, indexed row) once
    g, t = code // len(index.pos), code % len(index.pos)
    j = agreement(given.sigs, g, t, index.sigs)
    ok = j >= c.threshold
    best: dict[int, tuple[tuple[float, str, str], set]] = {}
    for gi, ti, ji in zip(g[ok].tolist(), t[ok].tolist(), j[ok].tolist(), strict=True):
        m = (ji, index.output[ti], index.ids[ti] or "")
        have = best.setdefault(gi, (m, set()))
        have[1].add(m[1:])
        if m > have[0]:
            best[gi] = (m, have[1])
    return {r: (m, len(linked)) for r, (m, linked) in best.items()}
