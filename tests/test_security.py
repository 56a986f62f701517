"""Untrusted input and untrusted config: the HTML parser never touches the network or the
file system and expands no entities; config paths are checked before Spark starts."""

from __future__ import annotations

import http.server
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from curate_pipeline.config import Config, ConfigError, ExtractConf, ReadConf
from curate_pipeline.document.extract import process_record
from curate_pipeline.engine.models import ModelError
from curate_pipeline.run.preflight import check_models, check_output


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802
        self.hits.append(self.path)
        body = b'<!ENTITY leak "LEAKED-FROM-NETWORK">'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    _Recorder.hits = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Recorder))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", _Recorder.hits
    srv.shutdown()


ARTICLE = "<p>" + "The river rises in the hills and flows south to the sea. " * 12 + "</p>"


def _extract(html: str) -> dict:
    row = {"doc_id": "x", "url": "https://example.org/", "payload": html.encode(),
           "content_type": "text/html; charset=utf-8", "reject_reason": None}  # fmt: skip
    return process_record(row, ExtractConf(), ReadConf())


def test_no_network_and_no_external_entities(server, tmp_path):
    base, hits = server
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-FILE-CONTENT")
    html = (
        f'<?xml version="1.0"?><!DOCTYPE html SYSTEM "{base}/dtd" ['
        f'<!ENTITY file SYSTEM "file://{secret}"><!ENTITY net SYSTEM "{base}/entity">'
        f'<!ENTITY % remote SYSTEM "{base}/param"> %remote;]>'
        f'<html><head><link rel="stylesheet" href="{base}/css"><script src="{base}/js"></script>'
        f'<base href="{base}/base/"></head><body><article>{ARTICLE}<p>a &file; b &net; c'
        f' &leak;</p><img src="{base}/img.png"><iframe src="{base}/frame"></iframe>'
        f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{secret}"/>'
        f"</article></body></html>"
    )
    out = _extract(html)
    time.sleep(0.2)
    assert hits == []
    text = out["text"] or ""
    assert "The river rises" in text
    assert "TOP-SECRET" not in text and "LEAKED" not in text


def test_entity_expansion_is_not_performed():
    lol = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i else "lol"}">' for i in range(10))
    body = f"<article>{ARTICLE}<p>&lol9;</p></article>"
    html = f"<!DOCTYPE html [{lol}]><html><body>{body}</body></html>"
    t0 = time.perf_counter()
    out = _extract(html)
    assert time.perf_counter() - t0 < 10
    assert (out["text"] or "").count("lol") < 100  # 10**9 if expanded


def test_missing_model_files_are_named_before_spark():
    with pytest.raises(ModelError, match="langid.model"):
        check_models(Config.model_validate({"langid": {"model": "/nowhere/lid.bin"}}))
    with pytest.raises(ModelError, match="quality"):
        check_models(
            Config.model_validate({"quality": {"enabled": True, "model": "/nowhere/q.json"}})
        )
    with pytest.raises(ConfigError, match="tokenizer.name"):
        check_models(Config.model_validate({"tokenizer": {"name": "/nowhere/tokenizer.json"}}))


def test_output_must_not_hold_inputs_or_stray_files(tmp_path):
    warc = tmp_path / "crawl" / "a.warc.gz"
    warc.parent.mkdir()
    warc.write_bytes(b"")
    with pytest.raises(ConfigError, match="holds the input"):
        check_output(tmp_path / "crawl", [str(warc)])
    with pytest.raises(ConfigError, match="holds the input"):
        check_output(tmp_path, [str(warc)])
    with pytest.raises(ConfigError, match="is a file"):
        check_output(warc, [])
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "thesis.tex").write_text("mine")
    with pytest.raises(ConfigError, match="thesis.tex"):
        check_output(tmp_path / "notes", [])
    # a README.md is a run's dataset card only beside a run's other entries
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("mine")
    with pytest.raises(ConfigError, match="README.md"):
        check_output(tmp_path / "docs", [])
    (tmp_path / "docs" / "manifest.json").write_text("{}")
    check_output(tmp_path / "docs", [])
    check_output(tmp_path / "new", [str(warc)])  # a new folder is fine
    # URIs are outputs too (tests/test_s3_spark.py); one no filesystem serves is refused
    # before Spark starts, naming it, and nothing is written on the local disk for it
    with pytest.raises(ConfigError, match="nosuchfs://curated/run1: no filesystem"):
        check_output("nosuchfs://curated/run1", [])
    assert not (tmp_path / "nosuchfs:").exists() and not Path("nosuchfs:").exists()
    run_dir = tmp_path / "earlier-run"
    (run_dir / "_stages").mkdir(parents=True)
    (run_dir / "manifest.json").write_text("{}")
    check_output(run_dir, [str(warc)])  # an earlier run's folder is resumed
