"""Faults of a store under a run on the moto S3 server: a run killed in its corpus half
resumes at the first rerun (issue 61), and a store that throttles (503 SlowDown storms, cut
reads) slows a run down without changing its output (issue 63). Apart from test_s3_spark.py
so that the two test processes share the S3 runs' time."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from run_outputs import published, run_outputs
from s3_server import OUT_BUCKET, _download, _finish, _popen

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("point", ["near_dedup", "publish"])
def test_killed_in_the_corpus_half_on_s3_resumes_at_the_first_rerun(
    s3, s3_inputs, local_ab, tmp_path, point
):
    """Issue 61: SIGKILL of the whole run (driver and executors) while the corpus half writes
    to the bucket, in near dedup's stage store or in the version's tables: the first rerun
    succeeds, equals a local run, and leaves nothing of the dead writer's."""
    client, env, _ = s3
    _, uris, _, config = s3_inputs
    out = f"s3://{OUT_BUCKET}/runs/killed-{point}"
    prefix = {"near_dedup": f"runs/killed-{point}/_stages/near_dedup/",
              "publish": f"runs/killed-{point}/data/"}[point]  # fmt: skip

    def seen() -> bool:
        listed = client.list_objects_v2(Bucket=OUT_BUCKET, Prefix=prefix).get("Contents", [])
        return any(o["Key"].endswith(".parquet") for o in listed)

    proc = _popen(env, config, [uris["a"], uris["b"]], out, tmp_path / "killed.log")
    deadline = time.monotonic() + 300
    while not seen() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, (tmp_path / "killed.log").read_text(errors="replace")[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    published_keys = client.list_objects_v2(
        Bucket=OUT_BUCKET, Prefix=f"runs/killed-{point}/_versions/"
    )
    assert not published_keys.get("KeyCount")  # nothing published
    _finish(_popen(env, config, [uris["a"], uris["b"]], out, tmp_path / "rerun.log"),
            tmp_path / "rerun.log")  # fmt: skip
    got = tmp_path / "got"
    names = _download(client, OUT_BUCKET, f"runs/killed-{point}/", got)
    assert run_outputs(got) == run_outputs(local_ab)
    m = json.loads((published(got) / "manifest.json").read_text())
    mine = m["path"].rsplit("/", 1)[-1]
    for top in ("versions", "data", "rejected"):  # the dead writer's folders are gone
        assert {n.split("/")[1] for n in names if n.startswith(f"{top}/")} - {"_delta_log"} == {
            mine}, top  # fmt: skip


def test_a_throttled_store_slows_a_run_down_and_changes_nothing(s3, s3_inputs, spark, tmp_path):
    """Issue 63 (6): input and output on a store that answers 503 SlowDown to everything for
    10 s in every 30 s, to 5% of the other requests, and cuts 3% of object reads mid-body
    (the moto server behind a proxy of our own): the run waits the storms out (reads resumed
    at their offset, every request retried over input.store_patience_s), finishes, and
    equals a local run; no fault becomes a record's verdict."""
    from s3_server import throttling_proxy

    from curate_pipeline.run.orchestrate import run

    client, env, _ = s3
    local_dir, uris, c, config = s3_inputs
    local = tmp_path / "local"
    run(c, [str(local_dir / "a.warc.gz")], local, spark)
    server, url, seen = throttling_proxy(env["AWS_ENDPOINT_URL"], storm_s=10, period_s=30,
                                         share_503=0.05, share_cut=0.03)  # fmt: skip
    try:
        out = f"s3://{OUT_BUCKET}/runs/throttled"
        slowed = {**env, "AWS_ENDPOINT_URL": url}
        _finish(_popen(slowed, config, [uris["a"]], out, tmp_path / "run.log"),
                tmp_path / "run.log")  # fmt: skip
    finally:
        server.shutdown()
    assert seen["storm"] and seen["503"] and seen["cut"], seen  # the faults happened
    got = tmp_path / "got"
    _download(client, OUT_BUCKET, "runs/throttled/", got)
    assert run_outputs(got) == run_outputs(local)
    m = json.loads((published(got) / "manifest.json").read_text())
    assert m["counts"] == json.loads((published(local) / "manifest.json").read_text())["counts"]
