"""The regex filter (curate_pipeline/document/text/regex_filter.py, datatrove's RegexFilter): the
stage added with the small step contract (docs/adding-a-stage.md). The check alone, the
config's refusal of a bad pattern, and a run whose drops are checked with the test's own `re`."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest
from run_outputs import version_rows

from curate_pipeline.config import Config, ConfigError, RegexFilterConf, load_config
from curate_pipeline.document.text.regex_filter import checker
from curate_pipeline.document.verdict import Drop


def _cfg(**patterns: str) -> Config:
    c = Config()
    c.regex_filter = RegexFilterConf(enabled=True, patterns=patterns)
    return c


def test_the_first_listed_pattern_that_matches_decides_and_the_detail_quotes_it():
    check = checker(_cfg(lorem=r"(?i)lorem\s+ipsum", cart=r"add to cart"))
    doc = {"text": "Buy now: add to cart.\nLOREM   ipsum dolor sit amet"}
    v = check(doc)
    assert v == Drop("lorem", "'LOREM ipsum' at character 22 (/(?i)lorem\\s+ipsum/)")
    assert check({"text": "only add to cart here"}).reason == "cart"
    assert check({"text": "a clean paragraph of prose"}) is None
    assert check({"text": None}) is None


def test_a_pattern_that_does_not_compile_is_refused_when_the_config_loads(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("regex_filter:\n  enabled: true\n  patterns:\n    broken: 'a(b'\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert "regex_filter.patterns.broken" in str(e.value)
    assert "missing )" in str(e.value)


@pytest.mark.spark
def test_a_run_drops_exactly_the_documents_whose_text_matches(
    spark, cfg, sample_warc, sample_run, tmp_path
):
    from curate_pipeline.run.orchestrate import run

    base_out, base = sample_run
    kept = version_rows(base_out, "data")
    # a word of one kept page that not every kept page has
    words = {w for d in kept for w in re.findall(r"[A-Za-z]{6,}", d["text"])}

    def share(w: str) -> int:
        return sum(bool(re.search(rf"\b{w}\b", d["text"])) for d in kept)

    word = next(w for w in sorted(words) if 0 < share(w) < len(kept))
    pattern = rf"\b{word}\b"
    c = cfg.model_copy(deep=True)
    c.regex_filter = RegexFilterConf(enabled=True, patterns={"word": pattern})
    m = run(c, [str(sample_warc)], tmp_path / "out", spark)

    matching = {d["url"] for d in kept if re.search(pattern, d["text"])}
    now_kept = version_rows(tmp_path / "out", "data")
    assert not any(re.search(pattern, d["text"]) for d in now_kept)
    assert {d["url"] for d in kept} - matching <= {d["url"] for d in now_kept}
    ledger = [r for r in version_rows(tmp_path / "out", "rejected")
              if r["stage"] == "regex"]  # fmt: skip
    assert matching <= {r["url"] for r in ledger}
    assert {r["reason"] for r in ledger} == {"word"}
    assert m["counts"]["rejected"]["regex:word"] == len(ledger)
    # every drop's stored text matches (the documents pass keeps the text of every row)
    stored = pq.read_table(tmp_path / "out" / "_stages" / "documents").to_pylist()
    dropped = [r for r in stored if r["reject_stage"] == "regex"]
    assert len(dropped) == len(ledger)
    assert all(re.search(pattern, r["text"]) for r in dropped)
    assert m["counts"]["read"] == base["counts"]["read"]
    # the report's funnel has the new stage with no code of its own: its label from the
    # registry entry, the next stage's count its survivors
    from curate_pipeline.outputs.report import report_data

    funnel = report_data(tmp_path / "out")["funnel"]
    i = next(k for k, f in enumerate(funnel) if f["stage"] == "regex_filter")
    assert funnel[i]["label"] == "rules passed"
    assert funnel[i + 1]["label"] == "no pattern matched"
    assert funnel[i + 1]["count"] == funnel[i]["count"] - len(ledger)
