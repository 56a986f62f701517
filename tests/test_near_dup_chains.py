"""Near duplicates inside one LSH bucket (issue 35): a page similar to a bucket's third member
but not its first links all the same (A~B, B~C, A!~C), with constructed signatures and with
real pages; a giant bucket costs n x (anchors + 1) pairs; the verdicts are the same whatever
the partitioning."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from curate_pipeline.config import Config
from curate_pipeline.document.dedup.minhash import estimate_jaccard

SCHEMA = (
    "doc_id string, crawl_pos long, text string, minhash array<int>, bands array<bigint>, "
    "reject_stage string, reject_reason string, reject_detail string"
)
NPERM = 14 * 8


def _near(spark, rows, parts: int, cfg: Config | None = None) -> dict[str, tuple]:
    from curate_pipeline.stages.near_dedup import near_dedup

    df = spark.createDataFrame(rows, SCHEMA).repartition(parts)
    got = []
    # on the cluster, and on the driver (up to local_max_documents): the same verdicts
    for given in (None, len(rows)):
        out = near_dedup(spark, df, cfg or Config(), rows=given)
        got.append({r["doc_id"]: (r["reject_reason"], r["reject_detail"], r["dup_cluster"],
                                  r["dup_cluster_size"]) for r in out.collect()})  # fmt: skip
    assert got[0] == got[1]
    return {d: v[:3] for d, v in got[0].items()}


def _row(doc_id: str, pos: int, sig: np.ndarray, keys: list[int]) -> tuple:
    return (doc_id, pos, doc_id, sig.astype(np.int32).tolist(), keys, None, None, None)


def _changed(sig: np.ndarray, where: range, rng: np.random.Generator) -> np.ndarray:
    out = sig.copy()
    out[list(where)] = rng.integers(1, 2**31 - 1, len(where))
    return out


@pytest.mark.spark
def test_a_chain_inside_one_bucket_links(spark):
    rng = np.random.default_rng(35)
    a = rng.integers(1, 2**31 - 1, NPERM)
    b = _changed(a, range(0, 16), rng)  # A~B: 96/112 = 0.857
    c = _changed(b, range(16, 32), rng)  # B~C 0.857; A~C 80/112 = 0.714 < 0.8
    assert estimate_jaccard(a, c) < 0.8 <= min(estimate_jaccard(a, b), estimate_jaccard(b, c))
    shared = 777  # one band key the three share; their other keys are their own
    for order in ("ABC", "CAB"):
        sigs = {"A": a, "B": b, "C": c}
        rows = [_row(d, 100 * (i + 1), sigs[d], [shared] + [1000 * (i + 1) + k for k in range(13)])
                for i, d in enumerate(order)]  # fmt: skip
        rows.append(_row("X", 50, rng.integers(1, 2**31 - 1, NPERM), list(range(1, 15))))
        got = [_near(spark, rows, p) for p in (1, 3)]
        assert got[0] == got[1], order
        out = got[0]
        first = order[0]
        assert out[first][0] is None and out["X"][0] is None, order
        dropped = sorted(d for d in "ABC" if out[d][0] == "duplicate")
        assert dropped == sorted(set("ABC") - {first}), (order, out)
        # the page linked to the kept one only through B says so
        far = "C" if first == "A" else "A" if first == "C" else None
        if far:
            assert out[far][1].startswith(f"kept {first}") and "chain" in out[far][1], out


@pytest.mark.spark
def test_a_giant_bucket_costs_n_times_anchors(spark):
    """400 pages share one bucket: half near the first page, half near each other but far
    from it. The far half links through the anchors; the pairs checked stay ~n x anchors."""
    from curate_pipeline.stages.near_dedup import bucket_edges

    rng = np.random.default_rng(7)
    base, other = rng.integers(1, 2**31 - 1, NPERM), rng.integers(1, 2**31 - 1, NPERM)
    n = 400
    rows = [_row(f"d{i}", i, _changed(base if i % 2 == 0 else other, range(i % 50, i % 50 + 6),
                                      rng), [5] + [10_000 * i + k for k in range(13)])
            for i in range(n)]  # fmt: skip
    cfg = Config()
    df = spark.createDataFrame(rows, SCHEMA).select("crawl_pos", "minhash", "bands")
    _, checked = bucket_edges(df, cfg.near_dedup, NPERM)
    pairs = checked.count()
    assert n - 1 <= pairs <= n * (2 * cfg.near_dedup.anchors + 2), pairs  # never n^2 / 2
    got = [_near(spark, rows, p) for p in (1, 4)]
    assert got[0] == got[1]
    out = got[0]
    kept = sorted(d for d, v in out.items() if v[0] is None)
    assert kept == ["d0", "d1"], kept  # the first page, and the first of the far half
    assert all(out[f"d{i}"][2] == "d1" for i in range(3, n, 2))


def _real_chains(texts: list[str], want: int) -> list[tuple[str, str, str]]:
    """(A, B, C) from real pages: B is A with words replaced, C is B with others replaced,
    such that A~B and B~C pass the threshold, A~C does not, and every bucket C shares with B
    also holds A: where the bucket's first member was the only check, C stayed."""
    from curate_pipeline.stages.near_dedup import hasher_of

    h = hasher_of(Config())
    rng = random.Random(35)
    out = []
    for text in texts:
        words = text.split()
        if len(words) < 300:
            continue
        for _ in range(40):
            m = max(3, len(words) // 60)
            b = list(words)
            for i in rng.sample(range(len(b)), m):
                b[i] = f"zz{rng.randrange(10**6)}"
            c = list(b)
            for i in rng.sample(range(len(c)), m):
                c[i] = f"qq{rng.randrange(10**6)}"
            sa, sb, sc = (h.signature(" ".join(x)) for x in (words, b, c))
            ka, kb, kc = (set(h.band_keys(s).tolist()) for s in (sa, sb, sc))
            if (estimate_jaccard(sa, sc) < 0.8 <= estimate_jaccard(sa, sb)
                    and estimate_jaccard(sb, sc) >= 0.8 and kb & kc and kb & kc <= ka):  # fmt: skip
                out.append((text, " ".join(b), " ".join(c)))
                break
        if len(out) == want:
            break
    return out


@pytest.mark.spark
def test_real_page_chains_link(spark, shared_data):
    from curate_pipeline.stages.near_dedup import signature_step
    from curate_pipeline.stages.step import transform

    path = next((shared_data / "text").glob("dolma_*.jsonl"))
    texts = [json.loads(line)["text"] for line in path.read_text().split("\n") if line.strip()]
    chains = _real_chains(texts, 4)
    assert len(chains) == 4
    rows, k = [], 0
    for n, chain in enumerate(chains):
        for name, text in zip("ABC", chain, strict=True):
            rows.append((f"{name}{n}", k, text, None, None, None))
            k += 1
    rows += [(f"other{i}", 1000 + i, t, None, None, None) for i, t in enumerate(texts[:40])]
    df = spark.createDataFrame(
        rows,
        "doc_id string, crawl_pos long, text string, "
        "reject_stage string, reject_reason string, reject_detail string",
    )
    cfg = Config()
    signed = transform(df, "near_dup", signature_step(spark, cfg))
    from curate_pipeline.stages.near_dedup import near_dedup

    got = []
    for parts, rows_given in ((1, None), (3, None), (3, len(rows))):  # the last: on the driver
        out = near_dedup(spark, signed.repartition(parts), cfg, rows=rows_given)
        got.append({r["doc_id"]: (r["reject_reason"], r["reject_detail"]) for r in out.collect()})
    assert got[0] == got[1] == got[2]
    for n in range(len(chains)):
        assert got[0][f"A{n}"][0] is None
        assert got[0][f"B{n}"][0] == "duplicate" and got[0][f"C{n}"][0] == "duplicate", n


@pytest.mark.spark
def test_a_document_near_one_an_append_dropped_as_a_published_copy_goes_too(spark):
    """Issue 61 (6): E published; the append's N1 ~ E (prior_dup:near), N2 ~ N1, N2 !~ E. One
    run over everything clusters E, N1, N2 and keeps E alone; so near_dedup takes N1 as a
    link: N2 goes, naming N1 and what N1 was dropped for. Without the link N2 was kept."""
    from curate_pipeline.stages.near_dedup import near_dedup

    rng = np.random.default_rng(61)
    e = rng.integers(1, 2**31 - 1, NPERM)
    n1 = _changed(e, range(0, 16), rng)
    n2 = _changed(n1, range(16, 32), rng)
    assert estimate_jaccard(e, n2) < 0.8 <= estimate_jaccard(n1, n2)
    keys1 = [777] + [1000 + k for k in range(13)]
    keys2 = [777] + [2000 + k for k in range(13)]
    link = spark.createDataFrame(
        [("N1", 10, "N1", n1.astype(np.int32).tolist(), keys1, "prior_dup", "near",
          "in out as E, estimated Jaccard 0.857")], SCHEMA)  # fmt: skip
    other = rng.integers(1, 2**31 - 1, NPERM)
    docs = spark.createDataFrame([_row("N2", 20, n2, keys2),
                                  _row("Y", 30, other, list(range(1, 15)))], SCHEMA)  # fmt: skip
    got = {r["doc_id"]: r for r in near_dedup(spark, docs, Config(), links=link).collect()}
    on_driver = near_dedup(spark, docs, Config(), links=link, rows=3).collect()
    assert {r["doc_id"]: r for r in on_driver} == got
    assert set(got) == {"N2", "Y"}  # the link is not a row of the output
    assert (got["N2"]["reject_stage"], got["N2"]["reject_reason"]) == ("near_dup", "duplicate")
    assert got["N2"]["reject_detail"].startswith(
        "near N1, dropped as a near copy of a published document (in out as E"
    )
    assert got["Y"]["reject_reason"] is None
    alone = {r["doc_id"]: r["reject_reason"] for r in near_dedup(spark, docs, Config()).collect()}
    assert alone == {"N2": None, "Y": None}
