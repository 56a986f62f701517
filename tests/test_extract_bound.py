"""The extraction time bound can only ever give the unbounded text or a timeout: under CPU
contention, with bounds so small that some pages time out, and with an extractor that
swallows the timeout exception (as trafilatura's own error handling does)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from curate_pipeline.config import ExtractConf, ReadConf
from curate_pipeline.document import extract
from curate_pipeline.document.extract import process_record


def _row(html: bytes) -> dict:
    return {"doc_id": "d", "url": "https://example.org/", "payload": html,
            "content_type": "text/html; charset=utf-8", "transfer_encoding": None,
            "content_encoding": None, "reject_stage": None, "reject_reason": None,
            "reject_detail": None}  # fmt: skip


def _outcome(html: bytes, timeout_s: float) -> tuple:
    out = process_record(
        _row(html), ExtractConf(strategy="single", timeout_s=timeout_s), ReadConf()
    )
    return out["reject_reason"], out["text"]


@pytest.fixture(scope="module")
def pages(shared_data) -> list[bytes]:
    files = sorted((shared_data / "extraction" / "scrapinghub_aeb" / "html").glob("*.html"))
    return [f.read_bytes() for f in files[:24]]


def test_under_contention_every_outcome_is_the_unbounded_text_or_a_timeout(pages):
    unbounded = [_outcome(p, 600) for p in pages]
    assert all(reason in (None, "extract_empty") for reason, _ in unbounded)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    seen = {"text": 0, "timeout": 0}
    try:
        for bound in (0.002, 0.01, 0.03, 0.1):
            for page, want in zip(pages, unbounded, strict=True):
                got = _outcome(page, bound)
                if got[0] == "extract_timeout":
                    seen["timeout"] += 1
                else:
                    assert got == want, bound
                    seen["text"] += 1
    finally:
        for p in burners:
            p.kill()
            p.wait()
    assert seen["text"] > 10 and seen["timeout"] > 10, seen  # both outcomes were exercised


def test_a_swallowed_timeout_is_still_a_timeout(monkeypatch):
    def swallowing(html, url, s):  # catches everything, like trafilatura's fallbacks
        parts = []
        for i in range(200):
            try:
                t0 = time.process_time()
                while time.process_time() - t0 < 0.001:
                    pass
                parts.append(str(i))
            except Exception:  # noqa: BLE001, S112
                continue
        return " ".join(parts)

    monkeypatch.setitem(extract.BACKENDS, "trafilatura", swallowing)
    out = process_record(
        _row(b"<html><p>x</p></html>"), ExtractConf(strategy="single", timeout_s=0.02), ReadConf()
    )
    assert (out["reject_reason"], out["text"]) == ("extract_timeout", None)
    assert "CPU" in out["reject_detail"]
    out = process_record(
        _row(b"<html><p>x</p></html>"), ExtractConf(strategy="single", timeout_s=5), ReadConf()
    )
    assert out["reject_reason"] is None and out["text"].startswith("0 1 2")


def test_the_wall_backstop_catches_a_page_off_the_cpu(monkeypatch):
    monkeypatch.setitem(extract.BACKENDS, "trafilatura", lambda html, url, s: time.sleep(5))
    conf = ExtractConf(strategy="single", timeout_s=5, wall_timeout_s=0.05)
    t0 = time.monotonic()
    out = process_record(_row(b"<html><p>x</p></html>"), conf, ReadConf())
    assert out["reject_reason"] == "extract_timeout" and "0.05 s" in out["reject_detail"]
    assert time.monotonic() - t0 < 2
