"""A real S3 API for the tests (moto's server on 127.0.0.1, one per test module) and the
inputs the S3 and cluster tests share: WARCs and models in a bucket, a config naming them."""

from __future__ import annotations

import logging
import re
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
    """This process reaching the moto server through pipeline.location (pyarrow.fs, boto3):
    its AWS_* variables set, the cached clients of any other endpoint dropped. Yields the
    boto3 client."""
    from pipeline import location

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

    from pipeline.config import load_config
    from pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc

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
