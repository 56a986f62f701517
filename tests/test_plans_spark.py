"""Nothing corpus-wide funnels through one task: the physical plans of the corpus stages and of
the ledger write hold no exchange to a single partition, and no window (a group in one task)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_corpus_stages_and_ledger_have_no_single_partition_exchange(spark, cfg, sample_warc,
                                                                     tmp_path):  # fmt: skip
    from pipeline.run.orchestrate import ledger_output, run
    from pipeline.stages.exact_dedup import exact_dedup
    from pipeline.stages.near_dedup import near_dedup

    out = tmp_path / "out"
    run(cfg, [str(sample_warc)], out, spark)
    docs = spark.read.parquet(str(out / "_stages" / "documents" / "chunk-*"))
    kept = docs.where(F.col("reject_reason").isNull())
    exact = exact_dedup(spark, kept, cfg)
    near = near_dedup(spark, exact.where(F.col("reject_reason").isNull()), cfg)
    for name, df in {
        "exact": exact,
        "near": near,
        "ledger": ledger_output([docs, exact], 4),
    }.items():
        plan = _plan(df)
        assert "SinglePartition" not in plan, (name, plan)
        assert "coalesce 1" not in plan.lower(), (name, plan)
        # a window holds a whole group in one task: a page copied a million times, ~8 GB
        assert "Window" not in plan, (name, plan)
