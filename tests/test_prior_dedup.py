"""Deduplicating against earlier outputs (`dedup.against`, curate_pipeline/stages/prior_dedup.py):
each version publishes a dedup index; a later run drops the exact copies and near duplicates
of what an earlier output kept, naming it, and keeps everything new."""

from __future__ import annotations

import json
import random

import pyarrow.parquet as pq
import pytest
from run_outputs import published, version_rows

from curate_pipeline.config import ConfigError
from curate_pipeline.examples.corpus import Page, small_edit, synthetic_pages, write_pages_warc

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def earlier(spark, cfg, tmp_path_factory):
    """Output A: 60 synthetic pages, its own dedup, its index."""
    from curate_pipeline.run.orchestrate import run

    root = tmp_path_factory.mktemp("prior")
    pages = synthetic_pages(60, seed=11, bad_share=0.0)
    write_pages_warc(root / "a.warc.gz", pages, tag="a")
    m = run(cfg, [str(root / "a.warc.gz")], root / "A", spark)
    return root, pages, m


def test_each_version_publishes_its_dedup_index(earlier):
    root, _, m = earlier
    index = version_rows(root / "A", "index")
    kept = [r["id"] for r in version_rows(root / "A", "data", ["id"])]
    assert sorted(r["doc_id"] for r in index) == sorted(kept) and len(kept) == m["counts"]["kept"]
    assert all(r["exact_key"] and len(r["minhash"]) == 112 and len(r["bands"]) == 14
               for r in index)  # fmt: skip
    record = json.loads((root / "A" / "_versions" / f"{m['version']:012d}.json").read_text())
    assert record["dedup_index"]["near"]["bands"] == 14
    assert sum(f["rows"] for f in record["files"]["index"]) == len(kept)


def test_a_later_run_drops_what_the_earlier_output_kept(earlier, spark, cfg):
    """B holds exact copies of 8 of A's kept pages and one-word edits of 8 others, under new
    URLs, and 20 pages of its own: the copies go to the ledger naming A's document, the
    new pages are kept; A is untouched."""
    from curate_pipeline.run.orchestrate import run

    root, pages, m = earlier
    a_dir = published(root / "A")
    a_kept = {r["url"]: r["id"] for r in version_rows(root / "A", "data")}
    originals = [p for p in pages if p.url in a_kept][:16]
    rng = random.Random(5)
    exact = [Page(f"https://mirror.example.net/{i}", p.html) for i, p in enumerate(originals[:8])]
    near = [Page(f"https://edits.example.net/{i}", small_edit(p.html, rng))
            for i, p in enumerate(originals[8:])]  # fmt: skip
    new = [Page(f"https://new.example.com/{i}", p.html)
           for i, p in enumerate(synthetic_pages(20, seed=99, bad_share=0.0))]  # fmt: skip
    mixed = exact + near + new
    rng.shuffle(mixed)
    write_pages_warc(root / "b.warc.gz", mixed, tag="b")
    c = cfg.model_copy(deep=True)
    c.dedup.against = [str(root / "A")]
    mb = run(c, [str(root / "b.warc.gz")], root / "B", spark)
    ledger = {r["url"]: r for r in version_rows(root / "B", "rejected")}
    for copy, original in zip(exact, originals[:8], strict=True):
        r = ledger[copy.url]
        assert (r["stage"], r["reason"]) == ("prior_dup", "exact"), r
        assert r["detail"] == f"in {root / 'A'} as {a_kept[original.url]}"
    for copy, original in zip(near, originals[8:], strict=True):
        r = ledger[copy.url]
        assert (r["stage"], r["reason"]) == ("prior_dup", "near"), r
        assert r["detail"].startswith(f"in {root / 'A'} as {a_kept[original.url]}, estimated")
    kept = {r["url"] for r in version_rows(root / "B", "data", ["url"])}
    own = {p.url for p in new if p.url not in ledger}
    assert kept == own and len(own) >= 18  # the new pages, but what B's own filters drop
    assert not any(r["stage"] == "prior_dup" for u, r in ledger.items() if "new." in u)
    assert mb["counts"]["rejected"]["prior_dup:exact"] == 8
    assert mb["counts"]["rejected"]["prior_dup:near"] == 8
    assert published(root / "A") == a_dir  # A keeps its version


def test_an_index_signed_otherwise_is_refused_before_spark(earlier, cfg):
    from curate_pipeline.run.preflight import check_dedup_against

    root, _, _ = earlier
    c = cfg.model_copy(deep=True)
    c.dedup.against = [str(root / "A")]
    c.near_dedup.bands = 20
    with pytest.raises(ConfigError, match="other near-dedup settings"):
        check_dedup_against(c, root / "C")
    c = cfg.model_copy(deep=True)
    c.dedup.against = [str(root / "nothing-here")]
    with pytest.raises(ConfigError, match="no published version"):
        check_dedup_against(c, root / "C")
    c.dedup.against = [str(root / "A")]
    with pytest.raises(ConfigError, match="this run's own --output"):
        check_dedup_against(c, root / "A")


def test_a_document_near_two_earlier_ones_links_them_and_retracts_neither(spark, cfg, tmp_path):
    """Indexed A and B (estimated Jaccard 0.73: not near each other, both kept); C agrees
    with A on 96 of 112 MinHash values and with B on 98, sharing a band with each: a run over
    all three at once would cluster them; here C goes to the ledger as prior_dup:near_links
    naming the closer one, and the index is untouched."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from curate_pipeline.outputs.publish import versions
    from curate_pipeline.stages.near_dedup import hasher_of
    from curate_pipeline.stages.prior_dedup import INDEX, INDEX_SCHEMA, index_settings, prior_dedup

    hasher = hasher_of(cfg)
    a = np.arange(1, 113, dtype=np.uint32) * 7919
    b = a.copy()
    b[:30] += 1  # bands 0-2 and 6 rows of band 3 differ
    c = a.copy()
    c[:16] = b[:16]  # bands 0-1 are B's; the rest A's

    def row(doc: str, pos: int, sig: np.ndarray) -> dict:
        return {"doc_id": doc, "crawl_pos": pos, "exact_key": f"key-{doc}",
                "minhash": sig.view(np.int32).tolist(),
                "bands": hasher.band_keys(sig).tolist()}  # fmt: skip

    out = tmp_path / "earlier"
    index_dir = versions.table_folder(versions.folder(out, 1), INDEX)  # DIR/index/F
    index_dir.mkdir()
    arrow = to_arrow_schema(INDEX_SCHEMA)
    pq.write_table(
        pa.Table.from_pylist([row("A", 1, a), row("B", 2, b)], schema=arrow),
        index_dir.uri + "/part-0.parquet",
    )
    versions.commit(out, 1, {"files": {INDEX: [{"file": f"{index_dir.name}/part-0.parquet",
                                                 "rows": 2}]},
                             "dedup_index": index_settings(cfg)})  # fmt: skip
    c_cfg = cfg.model_copy(deep=True)
    c_cfg.dedup.against = [str(out)]
    docs = spark.createDataFrame(
        [{**row("C", 1 << 40, c), "reject_stage": None, "reject_reason": None,
          "reject_detail": None}],
        "doc_id string, crawl_pos long, exact_key string, minhash array<int>, "
        "bands array<bigint>, reject_stage string, reject_reason string, reject_detail string",
    )  # fmt: skip
    got = prior_dedup(spark, docs, c_cfg).collect()[0]
    assert prior_dedup(spark, docs, c_cfg, rows=1).collect()[0] == got  # matched on the driver
    assert (got["reject_stage"], got["reject_reason"]) == ("prior_dup", "near_links")
    assert got["reject_detail"] == (f"in {out} as B, estimated Jaccard {98 / 112:.3f}; links 2 "
                                    "earlier documents' clusters (none retracted)")  # fmt: skip


def test_an_edited_copy_is_found_behind_the_other_pages_of_its_buckets(spark, cfg, tmp_path):
    """Issue 61 (6): indexed, a canonical page X and a templated family of 39 pages crawled
    before it, three sharing each of X's bands 1-13 (and nothing else). Y, an edit of X
    (13 of 14 bands equal: estimated Jaccard 0.929), falls only in buckets whose first page
    is one of the family. near_dedup would compare Y with every member of such a bucket
    (all_pairs); so must the append: Y is prior_dup:near naming X. With all_pairs 0, the
    first members alone, Y is kept (what the append did before)."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from curate_pipeline.outputs.publish import versions
    from curate_pipeline.stages.near_dedup import hasher_of
    from curate_pipeline.stages.prior_dedup import INDEX, INDEX_SCHEMA, index_settings, prior_dedup

    hasher = hasher_of(cfg)
    n_bands, r = cfg.near_dedup.bands, cfg.near_dedup.rows
    rng = np.random.default_rng(5)
    x = rng.integers(1, 1 << 31, n_bands * r, dtype=np.uint32)
    y = x.copy()
    y[:r] += 1  # band 0 differs

    def row(doc: str, pos: int, sig: np.ndarray) -> dict:
        return {"doc_id": doc, "crawl_pos": pos, "exact_key": f"key-{doc}",
                "minhash": sig.view(np.int32).tolist(),
                "bands": hasher.band_keys(sig).tolist()}  # fmt: skip

    family = []
    for k in range(1, n_bands):
        for j in range(3):
            sig = rng.integers(1, 1 << 31, n_bands * r, dtype=np.uint32)
            sig[k * r : (k + 1) * r] = x[k * r : (k + 1) * r]
            family.append(row(f"F{k}-{j}", len(family) + 1, sig))
    out = tmp_path / "earlier"
    index_dir = versions.table_folder(versions.folder(out, 1), INDEX)  # DIR/index/F
    index_dir.mkdir()
    pq.write_table(
        pa.Table.from_pylist([*family, row("X", 10_000, x)], schema=to_arrow_schema(INDEX_SCHEMA)),
        index_dir.uri + "/part-0.parquet",
    )
    versions.commit(out, 1, {"files": {INDEX: [{"file": f"{index_dir.name}/part-0.parquet",
                                                 "rows": 40}]},
                             "dedup_index": index_settings(cfg)})  # fmt: skip
    docs = spark.createDataFrame(
        [{**row("Y", 1 << 40, y), "reject_stage": None, "reject_reason": None,
          "reject_detail": None}],
        "doc_id string, crawl_pos long, exact_key string, minhash array<int>, "
        "bands array<bigint>, reject_stage string, reject_reason string, reject_detail string",
    )  # fmt: skip
    verdicts = {}
    for all_pairs in (cfg.near_dedup.all_pairs, 0):
        c_cfg = cfg.model_copy(deep=True)
        c_cfg.dedup.against = [str(out)]
        c_cfg.near_dedup.all_pairs = all_pairs
        got = prior_dedup(spark, docs, c_cfg).collect()[0]
        assert prior_dedup(spark, docs, c_cfg, rows=1).collect()[0] == got  # on the driver
        verdicts[all_pairs] = (got["reject_reason"], got["reject_detail"])
    assert verdicts[cfg.near_dedup.all_pairs] == (
        "near",
        f"in {out} as X, estimated Jaccard {(n_bands - 1) / n_bands:.3f}",
    )
    assert verdicts[0] == (None, None)
