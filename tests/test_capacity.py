"""Work is sized for the cores a cluster can reach, not the 2 it has at start under dynamic
allocation (issue 50 item 5): the chunk plan a 1,600-core dynamic-allocation cluster gets."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import load_config
from pipeline.engine.capacity import plan_capacity
from pipeline.run.chunks import chunk_bytes, cut_chunks

ROOT = Path(__file__).resolve().parents[1]
CRAWL = "s3://commoncrawl/crawl-data/CC-MAIN-2026-49/warc"
SNAPSHOT = [f"{CRAWL}/{i:05d}.warc.gz" for i in range(90_000)]
FILE_BYTES = 1_100_000_000


def _plan(conf: dict, master: str = "yarn", now: int = 2, chunks_cores: int = 0):
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cap = plan_capacity(conf, master, now, chunks_cores)
    sizes = [FILE_BYTES] * len(SNAPSHOT)
    chunks = cut_chunks(SNAPSHOT, cfg.chunks.files, chunk_bytes(cfg, cap.cores), sizes=sizes)
    shuffle = cfg.spark.shuffle_partitions_per_core * cap.cores
    print(f"{cap.line()}: {len(chunks)} chunks of {len(chunks[0].files)} files, "
          f"{shuffle:,} shuffle partitions")  # fmt: skip
    return cap, chunks, shuffle


def test_dynamic_allocation_plans_for_max_executors_not_start_up_cores():
    conf = {"spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.maxExecutors": "400", "spark.executor.cores": "4"}  # fmt: skip
    cap, chunks, shuffle = _plan(conf)
    assert cap.cores == 1600 and "maxExecutors 400" in cap.why
    # ceil(90,000 x 1.1 GB / (1,600 x 1 GiB)) = 58 chunks, not ~90,000 one-file chunks
    assert 55 <= len(chunks) <= 60
    assert shuffle == 3200
    # what start-up parallelism would have cut
    _, small, _ = _plan({}, master="yarn", now=2)
    assert len(small) == 90_000


def test_the_order_of_preference():
    base = {"spark.executor.cores": "8"}
    inst = plan_capacity({**base, "spark.executor.instances": "50"}, "yarn", 2)
    assert (inst.cores, inst.why) == (400, "spark.executor.instances 50 x spark.executor.cores 8")
    # dynamic allocation's bound wins over instances (its initial count)
    both = {**base, "spark.executor.instances": "50", "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.maxExecutors": "200"}  # fmt: skip
    assert plan_capacity(both, "yarn", 2).cores == 1600
    # unbounded dynamic allocation (Spark's default max) says nothing: chunks.cores, then now
    unbounded = {"spark.dynamicAllocation.enabled": "true"}
    assert plan_capacity(unbounded, "yarn", 2, chunks_cores=800).cores == 800
    fallback = plan_capacity(unbounded, "yarn", 2)
    assert fallback.cores == 2 and "maxExecutors" in fallback.why
    # executor cores unset: 1 each (YARN's and Kubernetes' default)
    k8s = plan_capacity({"spark.executor.instances": "8"}, "k8s://https://api:6443", 2)
    assert k8s.cores == 8 and "unset" in k8s.why
    assert plan_capacity({"spark.cores.max": "64"}, "spark://m:7077", 2).cores == 64
    # local mode has no executors to allocate: the cores it has
    assert plan_capacity(both, "local[2]", 2).cores == 2


def test_a_run_logs_the_capacity_it_sized_for(spark, caplog):
    import logging

    from pipeline.engine.capacity import capacity

    with caplog.at_level(logging.INFO, logger="pipeline.engine.capacity"):
        cap = capacity(spark, chunks_cores=3)  # a key not asked before: logged now
    assert cap.cores == spark.sparkContext.defaultParallelism
    assert "sizing work for 2 cores (local mode: local[2])" in caplog.text
