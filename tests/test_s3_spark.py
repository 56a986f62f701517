"""Inputs in an S3-compatible object store (moto's server on localhost): a Common Crawl style
`warc.paths.gz` listing in a bucket, whose relative lines are keys of that bucket, read by
`curate run` in its own process. The documents and the ledger equal a run over the same
files on disk, a rerun resumes every chunk, and each input file costs a handful of GET
requests (reads go through an 8 MiB buffer, not one ranged GET per 16 KiB read)."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from run_outputs import run_outputs

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]
BUCKET = "commoncrawl"
PREFIX = "crawl-data/CC-TEST-2026-49"


class _Requests(logging.Handler):
    """Counts the server's requests by method and path (werkzeug logs one line each)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter = Counter()  # emit() runs under the handler's own lock

    def emit(self, record: logging.LogRecord) -> None:
        m = re.search(r"(GET|HEAD|PUT) (/[^ ?]*) HTTP", record.getMessage())
        if m:
            self.seen[(m.group(1), m.group(2))] += 1


@pytest.fixture(scope="module")
def s3():
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    counter = _Requests()
    werkzeug_log = logging.getLogger("werkzeug")
    werkzeug_log.setLevel(logging.INFO)  # one line per request
    werkzeug_log.addHandler(counter)
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "test",
           "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")  # fmt: skip
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client, env, counter
    finally:
        logging.getLogger("werkzeug").removeHandler(counter)
        srv.stop()


def _curate(env: dict, listing: str, out: Path) -> dict:
    r = subprocess.run(
        [str(Path(sys.executable).parent / "curate"), "run", "--config", "conf/default.yaml",
         "--input", listing, "--output", str(out)],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + "\n----\n" + r.stderr[-4000:]
    return json.loads((out / "manifest.json").read_text())


def test_s3_listing_matches_local_resumes_and_reads_in_few_requests(
    s3, spark, cfg, sample_warc, tmp_path
):
    from pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc
    from pipeline.run.orchestrate import run

    client, env, counter = s3
    local_dir = tmp_path / "files"
    local_dir.mkdir()
    (local_dir / "a.warc.gz").write_bytes(sample_warc.read_bytes())
    write_pages_warc(local_dir / "b.warc.gz", with_duplicates(synthetic_pages(120, seed=9)))
    keys = [f"{PREFIX}/segments/0/warc/{name}" for name in ("a.warc.gz", "b.warc.gz")]
    for key, name in zip(keys, ("a.warc.gz", "b.warc.gz"), strict=True):
        client.put_object(Bucket=BUCKET, Key=key, Body=(local_dir / name).read_bytes())
    # relative lines, as Common Crawl's listings: keys of the listing's own bucket
    listing = gzip.compress(("\n".join(keys) + "\n").encode())
    client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/warc.paths.gz", Body=listing)

    local = tmp_path / "local"
    run(cfg, [str(local_dir / "a.warc.gz"), str(local_dir / "b.warc.gz")], local, spark)
    out = tmp_path / "from-s3"
    counter.seen.clear()
    m = _curate(env, f"s3://{BUCKET}/{PREFIX}/warc.paths.gz", out)
    assert m["inputs"] == [f"s3://{BUCKET}/{k}" for k in keys]
    assert run_outputs(out) == run_outputs(local)
    assert m["counts"] == json.loads((local / "manifest.json").read_text())["counts"]
    for key in keys:  # a few splits, each opening the file a few times: not one GET per read
        gets = counter.seen[("GET", f"/{BUCKET}/{key}")]
        assert 0 < gets <= 16, (key, gets)

    again = _curate(env, f"s3://{BUCKET}/{PREFIX}/warc.paths.gz", out)
    assert {c["status"] for c in again["chunks"]} == {"reused"}
    assert run_outputs(out) == run_outputs(local)
