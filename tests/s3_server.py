"""A real S3 API for the tests (moto's server on 127.0.0.1, one per test module) and the
inputs the S3 and cluster tests share: WARCs and models in a bucket, a config naming them."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "commoncrawl"
OUT_BUCKET = "curated"


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


@pytest.fixture
def s3_here(s3, monkeypatch):
    """This process reaching the moto server through curate_pipeline.location (pyarrow.fs, boto3):
    its AWS_* variables set, the cached clients of any other endpoint dropped. Yields the
    boto3 client."""
    from curate_pipeline import location

    client, env, _ = s3
    for k, v in env.items():
        monkeypatch.setenv(k, v)

    def drop() -> None:
        for key in [k for k in location._fs_cache if k[0] in ("s3", "boto3-s3")]:
            location._fs_cache.pop(key)

    drop()
    yield client
    drop()


def _download(client, bucket: str, prefix: str, dest: Path) -> list[str]:
    """Every object under `prefix` copied to `dest` (same relative names); their names."""
    names = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            if obj["Key"].endswith("/"):
                continue  # a folder marker (pyarrow.fs writes them), not a file
            rel = obj["Key"][len(prefix) :].lstrip("/")
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())
            names.append(rel)
    return sorted(names)


def _same_files(a: Path, b: Path, sub: str) -> None:
    """`sub` of two outputs' current versions, file by file, byte for byte."""
    from run_outputs import published

    a, b = published(a), published(b)
    names = sorted(p.relative_to(a / sub) for p in (a / sub).rglob("*") if p.is_file())
    assert names, sub
    assert names == sorted(p.relative_to(b / sub) for p in (b / sub).rglob("*") if p.is_file())
    for n in names:
        assert (a / sub / n).read_bytes() == (b / sub / n).read_bytes(), f"{sub}/{n}"


@pytest.fixture(scope="module")
def s3_inputs(s3, sample_warc, tmp_path_factory):
    """Three WARCs on disk and in the bucket; a config: one file a chunk, Megatron tokens too."""
    import yaml

    from curate_pipeline.config import load_config
    from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc

    client, _, _ = s3
    client.create_bucket(Bucket=OUT_BUCKET)
    d = tmp_path_factory.mktemp("s3-inputs")
    (d / "a.warc.gz").write_bytes(sample_warc.read_bytes())
    write_pages_warc(d / "b.warc.gz", with_duplicates(synthetic_pages(90, seed=21)))
    write_pages_warc(d / "c.warc.gz", with_duplicates(synthetic_pages(40, seed=22)))
    uris = {}
    for name in ("a", "b", "c"):
        key = f"inputs/{name}.warc.gz"
        client.put_object(Bucket=BUCKET, Key=key, Body=(d / f"{name}.warc.gz").read_bytes())
        uris[name] = f"s3://{BUCKET}/{key}"
    c = load_config(ROOT / "conf" / "default.yaml")
    c.quality.enabled = True
    c.chunks.files, c.chunks.parallel = 1, 1
    c.tokens.format, c.tokens.merged = "megatron", True
    # the runs in the bucket take their models from it too (fetched by the driver, shipped to
    # the executors); the local run beside them reads the same files from models/
    on_s3 = c.model_copy(deep=True)
    for section in (on_s3.langid, on_s3.quality):
        key = f"models/{Path(section.model).name}"
        client.put_object(Bucket=BUCKET, Key=key, Body=(ROOT / section.model).read_bytes())
        section.model = f"s3://{BUCKET}/{key}"
    config = d / "run.yaml"
    config.write_text(yaml.safe_dump(on_s3.model_dump(mode="json")))
    return d, uris, c, config


@pytest.fixture
def s3_ignoring_conditions(s3):
    """An S3 endpoint that ignores conditional writes, as MinIO before 2024 and some S3
    gateways do: a real HTTP proxy in front of the moto server that drops `If-None-Match`
    from every request. Yields its endpoint URL."""
    import http.client
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlsplit

    _, env, _ = s3
    upstream = urlsplit(env["AWS_ENDPOINT_URL"])

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("if-none-match", "host")}  # fmt: skip
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
            conn.request(self.command, self.path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message>"
             b"<RequestId>proxy</RequestId></Error>")  # fmt: skip


def throttling_proxy(upstream_url: str, storm_s: float, period_s: float, share_503: float,
                     share_cut: float, seed: int = 0):  # fmt: skip
    """A real HTTP proxy in front of an S3 server that misbehaves as a throttled store does:
    every request answered `503 SlowDown` for `storm_s` seconds in every `period_s`, a
    `share_503` of the others too, and a `share_cut` of object reads cut mid-body (the
    headers promise the whole object, half of it comes, the connection closes). Returns
    (server, its URL, the counts of what it did)."""
    import http.client
    import random
    import threading
    import time
    from collections import Counter
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlsplit

    upstream = urlsplit(upstream_url)
    rng, lock, t0, seen = random.Random(seed), threading.Lock(), time.monotonic(), Counter()

    def roll() -> float:
        with lock:
            return rng.random()

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if not size:
                        self.rfile.readline()
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _any(self) -> None:
            body = self._body()
            in_storm = (time.monotonic() - t0) % period_s < storm_s
            if in_storm or roll() < share_503:
                with lock:
                    seen["storm" if in_storm else "503"] += 1
                self.send_response(503)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(SLOW_DOWN)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(SLOW_DOWN)
                return
            dropped = ("host", "transfer-encoding", "content-length")
            headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
            conn.request(self.command, self.path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            conn.close()
            cut = (self.command == "GET" and r.status in (200, 206) and len(data) > 1024
                   and roll() < share_cut)  # fmt: skip
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(k, v)
            length = r.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(data)))  # HEAD: the object's
            self.end_headers()
            if self.command == "HEAD":
                return
            if cut:
                with lock:
                    seen["cut"] += 1
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            with lock:
                seen["passed"] += 1
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}", seen


def _popen(env: dict, config: Path, inputs: list[str], out: str, log: Path,
           *extra: str) -> subprocess.Popen:  # fmt: skip
    cmd = [str(Path(sys.executable).parent / "curate"), "run", "--config", str(config),
           "--input", *inputs, "--output", out, *extra]  # fmt: skip
    return subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, start_new_session=True,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)  # fmt: skip


def _finish(proc: subprocess.Popen, log: Path) -> None:
    assert proc.wait(timeout=600) == 0, log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def local_ab(s3_inputs, spark, tmp_path_factory) -> Path:
    """The local run every bucket run of files a and b is compared with (run once)."""
    from curate_pipeline.run.orchestrate import run

    local_dir, _, c, _ = s3_inputs
    local = tmp_path_factory.mktemp("local-ab") / "out"
    run(c, [str(local_dir / "a.warc.gz"), str(local_dir / "b.warc.gz")], local, spark)
    return local
