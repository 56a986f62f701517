"""The URL filter (curate_pipeline/document/url_filter.py): datatrove URLFilter's semantics on
lists from
files, decided before extraction."""

from __future__ import annotations

import gzip

import pyarrow.parquet as pq
import pytest
from run_outputs import version_rows

from curate_pipeline.config import ConfigError, UrlFilterConf
from curate_pipeline.document.url_filter import load_url_filter, normalize_url, read_list


def _conf(tmp_path, **lists) -> UrlFilterConf:
    files = {}
    for key, lines in lists.items():
        if key == "soft_threshold":
            continue
        p = tmp_path / f"{key}.txt.gz"
        p.write_bytes(gzip.compress(("# a comment\n\n" + "\n".join(lines) + "\n").encode()))
        files[key] = [str(p)]
    return UrlFilterConf(enabled=True, soft_threshold=lists.get("soft_threshold", 2), **files)


def test_lists_read_plain_or_gzipped_with_comments(tmp_path):
    plain = tmp_path / "d.txt"
    plain.write_text("Example.COM  # why\n# only a comment\n\nother.org\n")
    assert read_list(plain) == ["example.com", "other.org"]
    gz = tmp_path / "d.txt.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_list(gz) == read_list(plain)


def test_urls_are_compared_normalised():
    assert normalize_url("HTTP://Example.COM:80/a/b/#top") == "http://example.com/a/b"
    assert normalize_url("https://example.com:443/") == "https://example.com"
    assert normalize_url("https://example.com:8443/x?q=1") == "https://example.com:8443/x?q=1"


def test_verdicts(tmp_path):
    f = load_url_filter(_conf(
        tmp_path,
        blocked_domains=["casino.example", "bad.org"],
        blocked_urls=["https://news.example.com/leak/"],
        banned_words=["xxx"],
        soft_banned_words=["sex", "cam", "live"],
        allowed_domains=["good.bad.org"],
    ))  # fmt: skip
    assert f.verdict("https://casino.example/") == ("blocked_domain", "casino.example")
    assert f.verdict("https://www.play.casino.example/x") == ("blocked_domain", "casino.example")
    assert f.verdict("https://notcasino.example/") is None  # a label boundary, not a suffix
    assert f.verdict("https://good.bad.org/page") is None  # the allow list wins
    assert f.verdict("https://evil.bad.org/page") == ("blocked_domain", "bad.org")
    assert f.verdict("HTTPS://NEWS.example.com:443/leak") == (
        "blocked_url",
        "https://news.example.com/leak",
    )
    assert f.verdict("https://news.example.com/leaky") is None
    assert f.verdict("https://example.com/free-xxx-videos") == ("banned_word", "xxx")
    assert f.verdict("https://example.com/xxxtentacion") is None  # whole tokens only
    assert f.verdict("https://example.com/live-cam") == ("soft_banned", "cam, live")
    assert f.verdict("https://example.com/live-news") is None  # one soft word: below 2
    assert f.verdict("http://[www.example.com]/") is None  # an unparsable host blocks nothing
    assert f.verdict(None) is None


def test_missing_list_is_named_before_spark(tmp_path, cfg):
    from curate_pipeline.run.preflight import check_lists

    c = cfg.model_copy(deep=True)
    c.url_filter = UrlFilterConf(enabled=True, blocked_domains=[str(tmp_path / "nope.txt")])
    with pytest.raises(ConfigError, match="url_filter.blocked_domains: .*nope.txt"):
        check_lists(c)


@pytest.mark.spark
def test_blocked_pages_are_ledgered_and_never_extracted(spark, cfg, sample_warc, tmp_path):
    from curate_pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.url_filter = _conf(tmp_path, blocked_domains=["rivers.example.org"])
    m = run(c, [str(sample_warc)], tmp_path / "out", spark)
    ledger = version_rows(tmp_path / "out", "rejected")
    blocked = [r for r in ledger if r["stage"] == "url"]
    assert blocked and all(r["reason"] == "blocked_domain" for r in blocked)
    assert all("rivers.example.org" in r["url"] for r in blocked)
    assert m["counts"]["rejected"]["url:blocked_domain"] == len(blocked)
    docs = pq.read_table(tmp_path / "out" / "_stages" / "documents").to_pylist()
    for r in docs:
        if r["reject_stage"] == "url":
            assert r["text"] is None  # decided before extraction
    c2 = m["counts"]
    assert c2["read"] == c2["kept"] + sum(c2["rejected"].values())


@pytest.mark.spark
def test_lists_are_loaded_and_broadcast_once_per_run_not_per_chunk(
    spark, cfg, sample_warc, tmp_path, monkeypatch
):
    """Three chunks, one load and one broadcast of the lists (a snapshot has ~11,000 chunks
    and the lists millions of domains); every chunk still blocks with them."""
    import curate_pipeline.stages.extract as extract_stage
    from curate_pipeline.run.orchestrate import run

    loads = []
    real = extract_stage.load_url_filter
    monkeypatch.setattr(
        extract_stage, "load_url_filter", lambda conf: loads.append(1) or real(conf)
    )
    files = []
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.warc.gz").write_bytes(sample_warc.read_bytes())
        files.append(str(tmp_path / f"{name}.warc.gz"))
    c = cfg.model_copy(deep=True)
    c.chunks.files = 1
    c.url_filter = _conf(tmp_path, blocked_domains=["rivers.example.org"])
    m = run(c, files, tmp_path / "out", spark)
    assert len(m["chunks"]) == 3 and len(loads) == 1
    ledger = version_rows(tmp_path / "out", "rejected")
    assert {r["warc_file"] for r in ledger if r["stage"] == "url"} == set(files)
