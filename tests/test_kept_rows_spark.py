"""The kept rows assembled where they lie (stages/kept_rows.py): the documents the corpus
stages kept, and only those, with the columns those stages added, whatever the input files,
lookup groups and storage path; the final steps run on them alone."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from curate_pipeline.document.warc.records import OFFSET_BITS
from curate_pipeline.location import Location
from curate_pipeline.stages.kept_rows import merge, write_lookup

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("io", ["hadoop", "python"])
def test_the_kept_rows_and_their_columns_and_nothing_else(spark, tmp_path, io):
    rng = random.Random(5)
    n_inputs = 5
    docs = [(f"d{fi}-{k}", (fi << OFFSET_BITS) | (k * 1000), f"text {fi} {k}")
            for fi in range(n_inputs) for k in range(40)]  # fmt: skip
    kept = {pos: (rng.randrange(1, 9), f"c{pos % 7}") for _, pos, _ in docs if rng.random() < 0.4}
    frame = spark.sparkContext.parallelize(docs, 3).toDF(
        "doc_id string, crawl_pos long, text string"
    )
    verdicts = spark.createDataFrame(
        [(p, c, k) for p, (c, k) in kept.items()], "crawl_pos long, copies int, cluster string"
    )
    lookup = write_lookup(verdicts, ["copies", "cluster"], Location.of(tmp_path / "lookup"),
                          n_inputs, 2, "zstd", io)  # fmt: skip
    assert sorted(lookup) == [0, 1]
    seen = spark.sparkContext.accumulator(0)

    def count(docs: list[dict]) -> list:
        seen.add(len(docs))
        for d in docs:
            d["n"] = len(d["text"])
        return [None] * len(docs)

    columns = [pa.field("copies", pa.int32()), pa.field("cluster", pa.string())]
    final = [("final", count, spark.sparkContext.accumulator(0.0))]
    merged = merge(frame, lookup, columns, n_inputs, 2, final, [pa.field("n", pa.int64())])
    out = merged.collect()
    got = {r["crawl_pos"]: (r["copies"], r["cluster"]) for r in out}
    assert got == kept
    assert all(r["n"] == len(r["text"]) for r in out)
    assert seen.value == len(kept)  # the final step ran on the kept rows alone
    # within a task, the rows come out in the order they came in
    per_task = merge(frame, lookup, columns, n_inputs, 2, [], []).rdd.glom().collect()
    for rows in per_task:
        positions = [r["crawl_pos"] for r in rows]
        assert positions == sorted(positions)
