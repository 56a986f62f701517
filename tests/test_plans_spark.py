"""Nothing corpus-wide funnels through one task: the physical plans of the corpus stages and of
the ledger write hold no exchange to a single partition, and no window (a group in one task)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def shuffled_columns(df) -> list[set[str]]:
    """The columns each shuffle (an Exchange that is not a broadcast) of `df`'s physical plan
    moves: Spark's own plan, before adaptive execution changes it."""
    out: list[set[str]] = []

    def walk(node) -> None:
        name = node.nodeName()
        if name == "AdaptiveSparkPlan":
            walk(node.inputPlan())
            return
        if name.endswith("Exchange") and "Broadcast" not in name:
            attrs = node.output()
            out.append({attrs.apply(i).name() for i in range(attrs.size())})
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    return out


def test_repeated_ids_are_renamed_without_moving_the_rows(spark):
    """unique_ids: the repeated ids travel (an aggregation of two columns, then a broadcast);
    the rows, their text included, stay in their tasks."""
    from curate_pipeline.stages.unique_ids import unique_ids

    rows = [(f"<urn:{i % 50}>", i, "text " * 20) for i in range(200)]
    schema = "doc_id string, crawl_pos long, text string"
    docs = spark.sparkContext.parallelize(rows, 3).toDF(schema)  # 3 partitions, no shuffle
    out = unique_ids(docs)
    moved = shuffled_columns(out)
    assert all("text" not in cols for cols in moved), moved
    assert "BroadcastHashJoin" in _plan(out)
    got = out.collect()
    assert len({r["doc_id"] for r in got}) == 200
    # counted on the driver (a small run): the same ids, the rows still where they were
    local = unique_ids(docs, rows=len(rows))
    assert all("text" not in cols for cols in shuffled_columns(local))
    by_pos = {r["crawl_pos"]: r["doc_id"] for r in local.collect()}
    assert by_pos == {r["crawl_pos"]: r["doc_id"] for r in got}
    assert by_pos[0] == "<urn:0>" and by_pos[50] == "<urn:0>#0:50"  # the first keeps its id
    assert (
        unique_ids(docs.where("crawl_pos < 50"), rows=50).collect()
        == docs.where("crawl_pos < 50").collect()
    )  # nothing repeats: the rows as they were


def test_corpus_stages_and_ledger_have_no_single_partition_exchange(spark, cfg, sample_warc,
                                                                     tmp_path):  # fmt: skip
    """As the run builds them: the corpus stages over narrow rows, the kept rows merged where
    they were read, data/ narrowed to its files, the ledger by input file. No exchange moves
    a document's text; the merge and data/ have no exchange at all."""
    from curate_pipeline.location import Location
    from curate_pipeline.run.corpus_half import grouped_data, ledger_output
    from curate_pipeline.run.orchestrate import run
    from curate_pipeline.run.stage_store import read_marker
    from curate_pipeline.stages.exact_dedup import exact_dedup
    from curate_pipeline.stages.kept_rows import merge, narrow
    from curate_pipeline.stages.near_dedup import near_dedup

    out = tmp_path / "out"
    run(cfg, [str(sample_warc)], out, spark)
    docs = spark.read.parquet(str(out / "_stages" / "documents" / "chunk-*" / "w-*"))
    given = narrow(docs, ["exact_key", "minhash", "bands"])
    kept = given.where(F.col("reject_reason").isNull())
    exact = exact_dedup(spark, kept, cfg)
    near = near_dedup(spark, exact.where(F.col("reject_reason").isNull()), cfg)
    merged = merge(docs.where(F.col("reject_reason").isNull()), {}, [], 1, 1, [], [])
    kept_dir = Location.of(out / "_stages" / "kept")
    marker = read_marker(kept_dir)
    stored = spark.read.parquet(str(kept_dir))
    data = grouped_data(spark, cfg, kept_dir, [f["file"] for f in marker["files"]],
                        stored.drop("dgrp").schema)  # fmt: skip
    for name, df in {
        "exact": exact,
        "near": near,
        "ledger": ledger_output([docs, exact], 4),
        "merge": merged,
        "data": data,
    }.items():
        plan = _plan(df)
        assert "SinglePartition" not in plan, (name, plan)
        if name != "data":  # data/: each file's group is read by one task, by design
            assert "coalesce 1" not in plan.lower(), (name, plan)
        # a window holds a whole group in one task: a page copied a million times, ~8 GB
        assert "Window" not in plan, (name, plan)
        moved = shuffled_columns(df)
        assert all("text" not in cols for cols in moved), (name, moved)
        if name in ("merge", "data"):
            assert not moved, (name, moved)


def test_the_corpus_stages_never_read_the_text_column(spark, cfg, sample_warc, tmp_path):
    """The narrow rows take the text's length the documents pass stored (`text_bytes`, equal
    to Spark's own octet_length of the stored text in every row), so their scan of the
    documents store reads no `text` column (issue 52: it read the whole text again)."""
    import re

    from curate_pipeline.run.orchestrate import run
    from curate_pipeline.stages.kept_rows import narrow

    out = tmp_path / "out"
    run(cfg, [str(sample_warc)], out, spark)
    docs = spark.read.parquet(str(out / "_stages" / "documents" / "chunk-*" / "w-*"))
    assert docs.where(F.col("text").isNotNull()).count() > 0
    wrong = docs.where(F.col("text_bytes").eqNullSafe(F.octet_length("text")) == F.lit(False))
    assert wrong.count() == 0
    scans = re.findall(r"FileScan parquet \[([^\]]*)\]", _plan(narrow(docs, ["exact_key"])))
    read = [c.split("#")[0] for scan in scans for c in scan.split(",")]
    assert "text_bytes" in read and "text" not in read, read
