"""document/dedup/clusters.py (near dedup on the driver) against a plain-Python reading of
the rules in stages/near_dedup.py (bucket_edges' docstring), by definition: dicts of buckets,
pairs checked one by one, union-find. Families of edited signatures in shared buckets, small
and large (anchors), in shuffled order."""

from __future__ import annotations

import numpy as np
import pytest

from curate_pipeline.document.dedup.clusters import NearSettings, near_clusters

NPERM, BANDS = 112, 14


def _by_definition(pos, sigs, bands, h, c: NearSettings) -> dict[int, tuple[int, int, float]]:
    row = {int(p): i for i, p in enumerate(pos)}

    def agree(a: int, b: int) -> float:
        return int((sigs[row[a]] == sigs[row[b]]).sum()) / NPERM

    buckets: dict[tuple[int, int], list[int]] = {}
    for i, p in enumerate(pos):
        for b, k in enumerate(bands[i]):
            buckets.setdefault((b, int(k)), []).append(int(p))
    edges = set()
    for members in buckets.values():
        if len(members) < 2:
            continue
        n, root = len(members), min(members)
        others = [m for m in members if m != root]
        failed = [m for m in others if not (c.verify and agree(m, root) >= c.threshold)]
        edges |= {(m, root) for m in others if m not in failed or not c.verify}
        if not c.verify or c.all_pairs <= 0:
            continue
        anchors = [m for m in others if h[row[m]] < float(1 << 31) * c.anchors / n]
        for m in failed:
            against = others if n <= c.all_pairs else anchors
            if n > c.all_pairs and m in anchors:
                against = others
            edges |= {(max(m, o), min(m, o)) for o in against
                      if o != m and agree(m, o) >= c.threshold}  # fmt: skip
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for u, v in edges:
        a, b = find(u), find(v)
        parent[max(a, b)] = min(a, b)
    comps: dict[int, list[int]] = {}
    for x in list(parent):
        comps.setdefault(find(x), []).append(x)
    return {x: (min(m), len(m), agree(x, min(m))) for m in comps.values() for x in m}


def _corpus(rng: np.random.Generator, families: int, size: int, big: int):
    sigs, bands = [], []
    for f in range(families + 1):
        base = rng.integers(1, 2**31 - 1, NPERM)
        n = big if f == families else rng.integers(1, size + 1)
        for _ in range(n):
            s = base.copy()
            changed = rng.choice(NPERM, rng.integers(0, 40), replace=False)
            s[changed] = rng.integers(1, 2**31 - 1, len(changed))
            sigs.append(s)
            # a shared key where the band is unchanged, else the document's own
            keys = [hash((f, b)) % 1000 if set(range(8 * b, 8 * b + 8)).isdisjoint(changed)
                    else int(rng.integers(10**6, 10**9)) for b in range(BANDS)]  # fmt: skip
            bands.append(keys)
    n = len(sigs)
    pos = rng.permutation(np.arange(n, dtype=np.int64) * 7 + 3)
    h = rng.integers(0, 2**31, n)
    return pos, np.array(sigs, dtype=np.int32), np.array(bands, dtype=np.int64), h


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "c",
    [NearSettings(0.8, True, 50, 8), NearSettings(0.8, True, 5, 2), NearSettings(0.8, True, 0, 8),
     NearSettings(0.8, False, 50, 8)],
    ids=["default", "small-all-pairs", "first-only", "no-verify"],
)  # fmt: skip
def test_driver_clusters_match_the_rules_by_definition(seed, c):
    rng = np.random.default_rng(seed)
    pos, sigs, bands, h = _corpus(rng, families=30, size=8, big=120)
    found = near_clusters(pos, sigs, bands, h, c)
    got = {int(x): (int(k), int(s), float(j))
           for x, k, s, j in zip(found.node, found.component, found.size, found.jaccard,
                                 strict=True)}  # fmt: skip
    want = _by_definition(pos, sigs, bands, h, c)
    assert got == want
    assert len(got) > 100  # the families did cluster


def test_nothing_shared_gives_no_clusters():
    rng = np.random.default_rng(0)
    sigs = rng.integers(1, 2**31 - 1, (5, NPERM)).astype(np.int32)
    bands = rng.integers(1, 2**62, (5, BANDS))
    found = near_clusters(np.arange(5), sigs, bands, np.zeros(5, np.int64),
                          NearSettings(0.8, True, 50, 8))  # fmt: skip
    assert len(found.node) == 0
    empty = near_clusters(np.zeros(0, np.int64), np.zeros((0, NPERM), np.int32),
                          np.zeros((0, BANDS), np.int64), np.zeros(0, np.int64),
                          NearSettings(0.8, True, 50, 8))  # fmt: skip
    assert len(empty.node) == 0
