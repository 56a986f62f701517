"""Near-duplicate clusters of a corpus that fits one process, in numpy: the same answer as
stages/near_dedup.py's distributed joins (bucket_edges, then connected components), from the
same signatures, without a Spark job per join (issue 65: a small run's near dedup took 17).

Every rule is the distributed path's, decision for decision:
- buckets: one per (band, key) holding more than one document; its root is its smallest
  crawl position; its size `n` counts the root;
- star pairs (member, root), verified when the signatures agree on at least `threshold` of
  their values (the estimated Jaccard: equal values / number of values, in float64, as the
  JVM divides);
- a member that failed its root: against every other member of a bucket of up to `all_pairs`
  documents; in a larger bucket against its anchors (members whose `anchor_hash` < 2^31 x
  anchors / n), and a failed anchor against every member;
- components: the smallest node of each connected component is its label (scipy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class NearSettings:
    threshold: float
    verify: bool
    all_pairs: int
    anchors: int


def components_of(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, component) for the nodes on the edges u-v: a component is labelled by its
    smallest node."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if len(u) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    nodes, index = np.unique(np.concatenate([u, v]), return_inverse=True)
    m = len(u)
    graph = coo_matrix((np.ones(m, dtype=np.int8), (index[:m], index[m:])), (len(nodes),) * 2)
    n_comp, labels = connected_components(graph, directed=False)
    smallest = np.full(n_comp, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(smallest, labels, nodes)
    return nodes.astype(np.int64), smallest[labels]


def agreement(sigs: np.ndarray, a: np.ndarray, b: np.ndarray,
              others: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Share of equal signature values of rows sigs[a[i]] and (others or sigs)[b[i]]
    (float64, as the JVM divides)."""
    if len(a) == 0:
        return np.zeros(0)
    theirs = sigs if others is None else others
    same = np.zeros(len(a), dtype=np.int64)
    step = max(1, 4_000_000 // max(1, sigs.shape[1]))  # bounded temporaries
    for s in range(0, len(a), step):
        same[s : s + step] = (sigs[a[s : s + step]] == theirs[b[s : s + step]]).sum(axis=1)
    return same / np.float64(sigs.shape[1])


Pairs = tuple[np.ndarray, np.ndarray]


def distinct(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values (by sorting: numpy's hash-based unique is ~10x slower here)."""
    x = np.sort(x)
    return x[np.concatenate(([True], x[1:] != x[:-1]))] if len(x) else x


def pairs_within(group_of: np.ndarray, rows: np.ndarray, starts: np.ndarray,
                  sizes: np.ndarray, members: np.ndarray) -> Pairs:  # fmt: skip
    """For each row r in `rows` (a member row index, its group group_of[r]): pairs (r, o)
    with every row o in `members` of its group. `members` sorted by group; `starts`/`sizes`:
    each group's slice of it."""
    g = group_of[rows]
    counts = sizes[g]
    left = np.repeat(rows, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    right = members[np.repeat(starts[g], counts) + offsets]
    return left, right


def slices(groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group's start and size in `groups` (sorted group numbers)."""
    sizes = np.bincount(groups, minlength=n_groups)
    return np.cumsum(sizes) - sizes, sizes


def near_edges(pos: np.ndarray, sigs: np.ndarray, bands: np.ndarray,
               anchor_hash: np.ndarray, c: NearSettings) -> Pairs:  # fmt: skip
    """Verified edges (u, v) as row numbers, as bucket_edges finds them, for documents given
    in crawl order (row i: crawl position pos[i], increasing; signature sigs[i], band keys
    bands[i], the anchor hash pmod(xxhash64(pos), 2^31) as Spark computes it). Rows are in
    crawl order, so u > v as rows is u > v as crawl positions."""
    n_docs, n_bands = bands.shape
    none = np.zeros(0, np.int64)
    if n_docs == 0:
        return none, none
    row = np.repeat(np.arange(n_docs, dtype=np.int64), n_bands)
    band = np.tile(np.arange(n_bands), n_docs)
    key = bands.reshape(-1)
    order = np.lexsort((row, key, band))  # by bucket, then crawl position
    row, band, key = row[order], band[order], key[order]
    new = np.ones(len(row), dtype=bool)
    new[1:] = (band[1:] != band[:-1]) | (key[1:] != key[:-1])
    bucket = np.cumsum(new) - 1
    n_of = np.bincount(bucket)
    root_row = row[new][bucket]  # each bucket's first row: its smallest crawl position
    shared = (n_of[bucket] > 1) & (row != root_row)
    m_row, m_bucket, m_root = row[shared], bucket[shared], root_row[shared]
    star = distinct(m_row * n_docs + m_root)  # (member, root) once, however many bands
    su, sv = star // n_docs, star % n_docs
    if not c.verify:
        return su, sv
    ok = agreement(sigs, su, sv) >= c.threshold
    first = star[ok]
    if c.all_pairs <= 0:
        return su[ok], sv[ok]
    failed = ~np.isin(m_row * n_docs + m_root, first)  # members that failed their root
    n_bucket = n_of[m_bucket]
    small = n_bucket <= c.all_pairs
    picked = anchor_hash[m_row] < np.float64(1 << 31) * np.float64(c.anchors) / n_bucket
    # the member rows are sorted by bucket: each bucket's slice of (a subset of) them
    idx = np.arange(len(m_row))
    every = slices(m_bucket, len(n_of))
    anchors = idx[picked & ~small]
    of_anchors = slices(m_bucket[anchors], len(n_of))
    found = []
    for rows, members, (starts, sizes) in (
        (idx[failed & small], idx, every),  # every other member
        (idx[failed & ~small], anchors, of_anchors),  # the bucket's anchors
        (idx[failed & ~small & picked], idx, every),  # a failed anchor: every member
    ):
        a, b = pairs_within(m_bucket, rows, starts, sizes, members)
        a, b = m_row[a], m_row[b]
        found.append(np.maximum(a, b) * n_docs + np.minimum(a, b))
        found[-1] = found[-1][a != b]
    second = distinct(np.concatenate(found))
    tu, tv = second // n_docs, second % n_docs
    ok2 = agreement(sigs, tu, tv) >= c.threshold
    edges = distinct(np.concatenate([first, second[ok2]]))  # each edge once
    return edges // n_docs, edges % n_docs


@dataclass
class Clusters:
    """Per document on a verified edge: its component (the smallest crawl position), the
    component's size, and its estimated Jaccard to that document."""

    node: np.ndarray
    component: np.ndarray
    size: np.ndarray
    jaccard: np.ndarray


def near_clusters(pos: np.ndarray, sigs: np.ndarray, bands: np.ndarray,
                  anchor_hash: np.ndarray, c: NearSettings) -> Clusters:  # fmt: skip
    """The clusters of documents given in any order (row i: crawl position pos[i], unique)."""
    order = np.argsort(pos, kind="stable")
    pos, sigs, bands, anchor_hash = pos[order], sigs[order], bands[order], anchor_hash[order]
    u, v = near_edges(pos, sigs, bands, anchor_hash, c)
    node, component = components_of(u, v)  # rows; a component's label: its smallest row
    _, inverse, counts = np.unique(component, return_inverse=True, return_counts=True)
    return Clusters(pos[node], pos[component], counts[inverse].astype(np.int32),
                    agreement(sigs, node, component))  # fmt: skip
