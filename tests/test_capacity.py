"""Work is sized for the cores a cluster can reach, not the 2 it has at start under dynamic
allocation (issue 50 item 5): the chunk plan a 1,600-core dynamic-allocation cluster gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate_pipeline.config import load_config
from curate_pipeline.engine.capacity import (
    CapacityUnknown,
    plan_capacity,
    standalone_cores,
    yarn_cores,
)
from curate_pipeline.run.chunks import chunk_bytes, cut_chunks

ROOT = Path(__file__).resolve().parents[1]
CRAWL = "s3://commoncrawl/crawl-data/CC-MAIN-2026-49/warc"
SNAPSHOT = [f"{CRAWL}/{i:05d}.warc.gz" for i in range(90_000)]
FILE_BYTES = 1_100_000_000


def _plan(conf: dict, master: str = "yarn", now: int = 2, chunks_cores: int = 0,
          cluster_cores: int | None = None):  # fmt: skip
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cap = plan_capacity(conf, master, now, chunks_cores, cluster_cores, "YARN's metrics")
    sizes = [FILE_BYTES] * len(SNAPSHOT)
    chunks = cut_chunks(SNAPSHOT, cfg.chunks.files, chunk_bytes(cfg, cap.cores), sizes=sizes)
    shuffle = cfg.spark.shuffle_partitions_per_core * cap.cores
    print(f"{cap.line()}: {len(chunks)} chunks of {len(chunks[0].files)} files, "
          f"{shuffle:,} shuffle partitions")  # fmt: skip
    return cap, chunks, shuffle


DYNAMIC = {"spark.dynamicAllocation.enabled": "true", "spark.executor.cores": "4"}


def test_dynamic_allocation_sizes_for_the_cluster_never_for_its_ceiling():
    """Issue 63 (1): maxExecutors is a ceiling. A 1,600-vcore YARN cluster: 1,600 cores
    whatever the ceiling says (Dataproc's logged 10000, unset, Int.MaxValue), the ceiling
    only when it is lower; unknown cluster: refused, naming chunks.cores."""
    for most in (None, "10000", str(2**31 - 1)):
        conf = DYNAMIC | ({"spark.dynamicAllocation.maxExecutors": most} if most else {})
        cap, chunks, shuffle = _plan(conf, cluster_cores=1600)
        assert cap.cores == 1600 and "1,600 cores" in cap.why
        # ceil(90,000 x 1.1 GB / (1,600 x 1 GiB)) = 58 chunks, not 5 nor 90,000
        assert 55 <= len(chunks) <= 60 and shuffle == 3200
        with pytest.raises(CapacityUnknown, match="chunks.cores"):
            plan_capacity(conf, "yarn", 2)
    low = DYNAMIC | {"spark.dynamicAllocation.maxExecutors": "100"}
    assert _plan(low, cluster_cores=1600)[0].cores == 400  # the ceiling below the cluster
    assert _plan(DYNAMIC, chunks_cores=800)[0].cores == 800  # the user's word first


def test_the_order_of_preference():
    base = {"spark.executor.cores": "8"}
    inst = plan_capacity({**base, "spark.executor.instances": "50"}, "yarn", 2)
    assert (inst.cores, inst.why) == (400, "spark.executor.instances 50 x spark.executor.cores 8")
    # a static request beyond the cluster: the cluster
    assert plan_capacity({**base, "spark.executor.instances": "50"}, "yarn", 2,
                         cluster_cores=96, cluster_source="YARN").cores == 96  # fmt: skip
    # executor cores unset: 1 each (YARN's and Kubernetes' default)
    k8s = plan_capacity({"spark.executor.instances": "8"}, "k8s://https://api:6443", 2)
    assert k8s.cores == 8 and "unset" in k8s.why
    assert plan_capacity({"spark.cores.max": "64"}, "spark://m:7077", 2).cores == 64
    # standalone hands an application its cores at once: those registered
    assert plan_capacity({}, "spark://m:7077", 12).cores == 12
    # nothing said and nothing readable on YARN or Kubernetes: refused, not guessed
    with pytest.raises(CapacityUnknown):
        plan_capacity({}, "k8s://https://api:6443", 2)
    # local mode has no executors to allocate: the cores it has
    assert plan_capacity(DYNAMIC, "local[2]", 2).cores == 2


def test_a_resource_manager_that_answers_gives_the_cores(tmp_path):
    """The figures are read from the resource manager's own REST API: a server answering as
    YARN's /ws/v1/cluster/metrics and a standalone master's /json/ do."""
    import http.server
    import json
    import threading

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = {"/ws/v1/cluster/metrics": {"clusterMetrics": {"totalVirtualCores": 1536}},
                    "/json/": {"cores": 48}}.get(self.path)  # fmt: skip
            self.send_response(200 if body else 404)
            self.end_headers()
            self.wfile.write(json.dumps(body or {}).encode())

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port = srv.server_address[1]
        cores, source = yarn_cores({"yarn.resourcemanager.webapp.address": f"127.0.0.1:{port}"})
        assert cores == 1536 and "cluster/metrics" in source
        cores, _ = standalone_cores("spark://m:7077", f"http://127.0.0.1:{port}")
        assert cores == 48
        cores, why = yarn_cores({"yarn.resourcemanager.webapp.address": "127.0.0.1:9"})
        assert cores is None and "did not answer" in why
    finally:
        srv.shutdown()


def test_a_run_logs_the_capacity_it_sized_for(spark, caplog):
    import logging

    from curate_pipeline.engine.capacity import capacity

    with caplog.at_level(logging.INFO, logger="curate_pipeline.engine.capacity"):
        cap = capacity(spark, chunks_cores=3)  # a key not asked before: logged now
    assert cap.cores == spark.sparkContext.defaultParallelism
    assert "sizing work for 2 cores (local mode: local[2])" in caplog.text
