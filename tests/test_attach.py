"""stages/arrow_batches.attach: a small driver-side table's columns added to a DataFrame's
rows by key, as a left join on unique keys gives them, with no join (issue 65: a broadcast
join costs a Spark job), the rows in their order and partitions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from curate_pipeline.stages.arrow_batches import attach

pytestmark = pytest.mark.spark


def test_attach_gives_what_a_left_join_gives(spark):
    rows = [(i, f"k{i % 7}" if i % 5 else None, f"t{i}") for i in range(60)]
    df = spark.createDataFrame(rows, "pos long, key string, text string").repartition(3)
    table = pa.table({
        "key": pa.array(["k1", "k3", "k6", "absent"]),
        "first": pa.StructArray.from_arrays([pa.array([1, 3, 6, 99], pa.int64()),
                                             pa.array(["a", "b", None, "z"])], names=["p", "id"]),
        "n": pa.array([9, 8, 7, 1], pa.int64()),
    })  # fmt: skip
    got = attach(df, table, "key")
    assert got.columns == ["pos", "key", "text", "first", "n"]
    assert got.rdd.getNumPartitions() == 3  # no exchange
    from curate_pipeline.engine.compat import from_arrow

    joined = df.join(from_arrow(spark, table), "key", "left").select(*got.columns)
    assert sorted(got.collect()) == sorted(joined.collect())
    by_pos = {r["pos"]: r for r in got.collect()}
    assert by_pos[1]["n"] == 9 and by_pos[1]["first"]["p"] == 1
    assert by_pos[0]["first"] is None and by_pos[0]["n"] is None  # a null key meets nothing
    assert by_pos[2]["n"] is None  # k2: not in the table


def test_attach_by_another_key_name_and_an_empty_table(spark):
    df = spark.createDataFrame([(1, "a"), (2, "b")], "crawl_pos long, text string")
    table = pa.table({"node": pa.array([2], pa.int64()), "v": pa.array([0.5])})
    got = {r["crawl_pos"]: r["v"] for r in attach(df, table, "crawl_pos", "node").collect()}
    assert got == {1: None, 2: 0.5}
    empty = table.slice(0, 0)
    assert [r["v"] for r in attach(df, empty, "crawl_pos", "node").collect()] == [None, None]
