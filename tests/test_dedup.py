"""Exact and near deduplication: the primer's numbers, datasketch equality, Spark stages."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import numpy as np
import pytest
from datasketch import MinHash

from curate_pipeline.config import Config
from curate_pipeline.document.dedup.minhash import (
    MERSENNE_PRIME,
    MinHasher,
    candidate_probability,
    estimate_jaccard,
    jaccard,
    shingle_hash,
    shingles,
)
from curate_pipeline.document.dedup.normalize import exact_key, simplify
from curate_pipeline.examples.sample import ARTICLE_BREAD, ARTICLE_RIVER


def test_primer_shingles_and_jaccard():
    a = set(shingles("the cat sat on the mat", 2))
    b = set(shingles("the cat sat on a mat", 2))
    assert len(a & b) == 3 and len(a | b) == 7
    assert round(jaccard(a, b), 2) == 0.43


def test_primer_candidate_curve():
    assert round(candidate_probability(0.8, bands=20, rows=5), 4) == 0.9996
    assert round(candidate_probability(0.3, bands=20, rows=5), 4) == 0.0475
    s = np.linspace(0.01, 0.99, 9801)
    slope = np.gradient([candidate_probability(x, 20, 5) for x in s], s)
    steepest = s[int(np.argmax(slope))]
    assert abs(steepest - (1 / 20) ** (1 / 5)) < 0.03  # (1/b)^(1/r) = 0.549


def test_prime_is_2_pow_61_minus_1():
    assert MERSENNE_PRIME == 2**61 - 1
    assert MERSENNE_PRIME != 1 << 61 - 1  # the known bug: that is 2**60


@pytest.mark.parametrize(
    ("bands", "rows", "seed", "k"), [(14, 8, 1, 5), (20, 5, 7, 5), (4, 2, 3, 2)]
)
def test_signatures_equal_datasketch(bands, rows, seed, k):
    hasher = MinHasher(k, bands, rows, seed)
    for text in (
        ARTICLE_RIVER,
        ARTICLE_BREAD,
        "short text",
        "Ünïcödé 2024 text, with punctuation!",
    ):
        ref = MinHash(num_perm=bands * rows, seed=seed, scheme="legacy", hashfunc=shingle_hash)
        for sh in shingles(text, k):
            ref.update(sh)
        assert np.array_equal(hasher.signature(text), ref.hashvalues.astype(np.uint32))


def test_estimate_spread_at_128_permutations():
    """J = 0.5 exactly; over many seeds the estimate's spread is sqrt(J(1-J)/k) = 0.0442."""
    rng = np.random.default_rng(0)
    pool = rng.choice(2**32 - 1, size=300, replace=False).astype(np.uint64)
    a, b = pool[:150], pool[50:200]  # |A & B| = 100, |A | B| = 200 -> J = 0.5
    estimates = []
    for seed in range(300):
        h = MinHasher(5, 16, 8, seed)
        estimates.append(estimate_jaccard(h.signature_of_hashes(a), h.signature_of_hashes(b)))
    mean, spread = float(np.mean(estimates)), float(np.std(estimates))
    # standard errors over 300 seeds: mean 0.0026, spread ~0.0018; allow 4 of them
    assert abs(mean - 0.5) < 0.011
    assert abs(spread - 0.0442) < 0.008, spread


def test_exact_key_ignores_case_and_layout():
    assert exact_key("The  River\n\nflows.") == exact_key("the river flows.")
    assert exact_key("The river flows.") != exact_key("The river flowed.")


def test_simplify():
    assert simplify("Crème Brûlée, 2024 — Ça va?") == "creme brulee 0000 ca va"


# --- Spark stages -----------------------------------------------------------------------

SCRAPER = ARTICLE_BREAD + "\nRead more on our site"
DOC_SCHEMA = (
    "doc_id string, crawl_pos long, text string, "
    "reject_stage string, reject_reason string, reject_detail string"
)


def _docs(spark, texts: list[str], parts: int = 2):
    rows = [(f"d{i}", i * 1000, t, None, None, None) for i, t in enumerate(texts)]
    return spark.createDataFrame(rows, DOC_SCHEMA).repartition(parts)


def _dedup(spark, docs, cfg: Config):
    from curate_pipeline.stages.dedup_components import cut_lineage
    from curate_pipeline.stages.exact_dedup import exact_dedup
    from curate_pipeline.stages.near_dedup import near_dedup

    first = cut_lineage(exact_dedup(spark, docs, cfg))  # as the pipeline reads it from disk
    kept = first.where("reject_reason is null")
    second = near_dedup(spark, kept, cfg)
    cols = ["doc_id", "reject_stage", "reject_reason", "reject_detail"]
    rows = first.where("reject_reason is not null").select(*cols).collect()
    rows += second.select(*cols, "dup_cluster", "dup_cluster_size").collect()
    return {r["doc_id"]: r.asDict() for r in rows}


CORPUS = [
    ARTICLE_RIVER,  # d0
    ARTICLE_BREAD,  # d1
    "  " + ARTICLE_RIVER.upper().replace(" ", "   ") + "\n",  # d2: exact dup of d0
    SCRAPER,  # d3: near dup of d1
    "A completely different page about the history of railway signalling in small towns, "
    "with timetables, gauges and the people who kept the lines running for a century.",  # d4
    SCRAPER + " Subscribe today",  # d5: near dup of d1 and d3
]


@pytest.mark.spark
def test_exact_and_near_duplicates_found(spark):
    out = _dedup(spark, _docs(spark, CORPUS), Config())
    assert out["d2"]["reject_stage"] == "exact_dup" and out["d2"]["reject_detail"] == "kept d0"
    for d in ("d3", "d5"):
        assert out[d]["reject_stage"] == "near_dup", d
        assert out[d]["reject_detail"].startswith("kept d1, estimated Jaccard 0.9")
    assert out["d1"]["reject_reason"] is None and out["d1"]["dup_cluster_size"] == 3
    assert out["d4"]["reject_reason"] is None and out["d4"]["dup_cluster_size"] == 1
    assert out["d0"]["reject_reason"] is None and out["d0"]["dup_cluster"] == "d0"


@pytest.mark.spark
def test_same_answer_with_1_2_and_7_partitions(spark):
    results = [_dedup(spark, _docs(spark, CORPUS, parts), Config()) for parts in (1, 2, 7)]
    assert results[0] == results[1] == results[2]


def _union_find(nodes, edges):
    parent = {n: n for n in nodes}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    return {n: find(n) for n in nodes}


@pytest.mark.spark
@pytest.mark.parametrize("local_max_edges", [0, 50, 100_000], ids=["rounds", "too-many", "driver"])
def test_connected_components_match_union_find(spark, local_max_edges):
    """Distributed rounds, the driver's solver, and its fallback when edges exceed the cap."""
    from curate_pipeline.stages.dedup_components import connected_components

    rng = random.Random(3)
    edges = [(rng.randrange(400), rng.randrange(400)) for _ in range(250)]
    edges += [(1000 + i, 1001 + i) for i in range(60)]  # a long chain: many rounds
    edges += [(5000, 5000 + i) for i in range(1, 40)]  # a big star
    df = spark.createDataFrame(edges, "u long, v long").repartition(3)
    comps = connected_components(df, local_max_edges=local_max_edges)
    got = {r["node"]: r["component"] for r in comps.collect()}
    nodes = {n for e in edges for n in e if e[0] != e[1]}
    want = _union_find(nodes, [e for e in edges if e[0] != e[1]])
    assert got == want


@pytest.mark.spark
def test_every_real_exact_duplicate_group_is_found(spark, shared_data):
    from curate_pipeline.stages.exact_dedup import exact_dedup

    path = next((shared_data / "text").glob("*.jsonl"))
    texts = [
        json.loads(line)["text"] for line in path.read_text(encoding="utf-8").split("\n") if line
    ]
    texts = [t for t in texts if t.strip()]  # empty pages never reach dedup
    groups = defaultdict(list)
    for i, t in enumerate(texts):
        groups[t].append(f"d{i}")
    real = [sorted(g) for g in groups.values() if len(g) > 1]
    assert sorted(map(len, real)) == [2, 3, 7]
    docs = _docs(spark, texts, 4)
    out = exact_dedup(spark, docs, Config()).collect()
    # the groups counted on the driver (a small run): the same rows, the same columns
    on_driver = exact_dedup(spark, docs, Config(), rows=len(texts)).collect()
    assert sorted(on_driver) == sorted(out)
    assert sorted(r["exact_copies"] or 0 for r in out)[-1] == 7
    kept_of = {
        r["doc_id"]: (r["reject_detail"] or "").removeprefix("kept ") or r["doc_id"] for r in out
    }
    for g in real:
        assert len({kept_of[d] for d in g}) == 1, g
        assert kept_of[g[0]] == min(g, key=lambda d: int(d[1:]))  # the first in crawl order


@pytest.mark.spark
def test_edges_are_built_once_when_too_many_for_the_driver(spark):
    """Above local_max_edges the distributed rounds start from the edges the driver counted:
    the band join behind them runs once (it ran twice, once per attempt)."""
    from curate_pipeline.stages.dedup_components import connected_components

    built = spark.sparkContext.accumulator(0)

    def make(batches):
        for b in batches:
            built.add(b.num_rows)
            yield b

    edges = [(i, i + 1) for i in range(0, 200, 2)]
    df = spark.createDataFrame(edges, "u long, v long").repartition(2)
    df = df.mapInArrow(make, df.schema)
    comps = connected_components(df, local_max_edges=10)
    assert comps.count() == 200
    assert built.value == len(edges)
