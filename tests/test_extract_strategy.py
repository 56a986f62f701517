"""Extraction strategies: a few extractors per page, a rule that keeps one output, one bound.

These tests hold what a run relies on: the rule keeps the first extractor's output unless a
later one has `longer` times its words; the shipped rules are the ones the benchmark chose
(bench/results/extract_chooser.json); the same page gets the same text in any process and
order; a failing or slow extractor leaves the others' outputs; every failure is a ledger
reason; a missing library fails the task, not the page.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from curate_pipeline.config import ExtractConf, ReadConf
from curate_pipeline.document import extract, extract_strategy
from curate_pipeline.document.extract import extract_text, process_record
from curate_pipeline.document.extractors import EXTRACTORS, TooDeep, check_nesting
from curate_pipeline.examples.sample import ARTICLE_RIVER, page

FORUM = "".join(
    f'<div class="post"><div class="author">user{i}</div><div class="message">Reply {i}: the '
    f"river rose again this spring and the ferry stopped for {i} days; has anyone crossed "
    f"at the old bridge since?</div></div>"
    for i in range(12)
)
LISTING = "<ul class='results'>" + "".join(
    f"<li class='card'><a href='/item/{i}'>Walking boots model {i}</a> <span class='price'>"
    f"${40 + i}.00</span> Waterproof leather, size {36 + i % 10}.</li>" for i in range(30)
) + "</ul>"  # fmt: skip
# a page with product markup (schema.org Product) around an article
PRODUCT = page(
    '<script type="application/ld+json">{"@type": "Product", "name": "Atlas"}</script>'
    + ARTICLE_RIVER,
    "Rivers of the world, an atlas",
)
PAGES = {
    "article": page(ARTICLE_RIVER, "Rivers"),
    "forum": page(FORUM, "Ferry crossing - Forum"),
    "listing": page(LISTING, "Walking boots"),
}


def _row(html: str, url: str = "https://example.org/a") -> dict:
    return {"doc_id": "d", "url": url, "payload": html.encode(), "content_type": "text/html",
            "transfer_encoding": None, "content_encoding": None, "reject_stage": None,
            "reject_reason": None, "reject_detail": None}  # fmt: skip


def _run(html: str, conf: ExtractConf) -> dict:
    # a scope of its own: the worker's cache of outcomes would answer a page seen before
    return process_record(_row(html), conf, ReadConf(), scope=uuid.uuid4().hex)


RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "extract_chooser.json"


def test_the_configured_rules_are_the_ones_the_benchmark_chose():
    chosen = json.loads(RESULTS.read_text())["strategies"]
    for strategy, rule in ExtractConf().strategies.items():
        shipped = {"runs": rule.runs, "longer": rule.longer, "below": rule.below}
        assert chosen[strategy]["shipped"] == shipped


def test_the_rule_keeps_the_first_output_unless_a_later_one_is_longer_by_the_ratio():
    a, b, c = "one two three four", "w " * 7, "x " * 20
    keep = extract_strategy.keep
    assert keep(["a", "b"], {"a": a, "b": b}, 2.0) == "a"  # 7 words < 2 x 4
    assert keep(["a", "b"], {"a": a, "b": b + "y"}, 2.0) == "b"  # 8 >= 2 x 4
    assert keep(["a", "b", "c"], {"a": a, "b": b + "y", "c": c}, 2.0) == "c"  # 20 >= 2 x 8
    assert keep(["a", "b", "c"], {"a": a, "b": b, "c": c}, 3.0) == "c"  # 20 >= 3 x 4
    assert keep(["a", "b"], {"a": None, "b": b}, 2.0) == "b"  # nothing kept: any output
    assert keep(["a", "b"], {"a": "  ", "b": None}, 2.0) is None


def test_with_below_the_later_extractors_run_only_where_the_first_found_little(monkeypatch):
    ran = []

    def counting(name, text):
        def extractor(html, url):
            ran.append(name)
            return text

        return extractor

    monkeypatch.setitem(EXTRACTORS, "trafilatura_fast", counting("first", "w " * 30))
    monkeypatch.setitem(EXTRACTORS, "readability", counting("second", "x " * 100))
    run = extract_strategy.run_strategy
    args = ("<p>page</p>", "", ["trafilatura_fast", "readability"], 2.0, extract.time_bound, 5, 60)
    out = run(*args, below=20)  # 30 words kept: long enough, the second never runs
    assert (ran, out.chosen, out.ran) == (["first"], "trafilatura_fast", ["trafilatura_fast"])
    ran.clear()
    out = run(*args, below=50)  # 30 < 50: the second runs, and has 100 >= 2 x 30 words
    assert (ran, out.chosen) == (["first", "second"], "readability")


@pytest.mark.parametrize("strategy", ["fast", "balanced", "best"])
def test_each_strategy_keeps_one_extractors_output_and_says_which(strategy):
    conf = ExtractConf(strategy=strategy)
    runs = conf.strategies[strategy].runs
    for name, html in PAGES.items():
        out = _run(html, conf)
        if out["reject_reason"] == "extract_empty":  # fast's views find no main text in a list
            assert not any(EXTRACTORS[n](html, "").strip() for n in runs), name
            continue
        assert out["reject_reason"] is None, name
        chosen = out["extractor"].split(" ")[0]
        assert chosen.split("/")[0] == strategy
        assert chosen.split("/")[1] in runs
        # the text is that extractor's own output on the page, unchanged
        assert out["text"] == EXTRACTORS[chosen.split("/")[1]](html, "https://example.org/a")
    assert extract.extractor_provenance(conf).startswith(f"{strategy}: {' > '.join(runs)}")


def test_a_configured_rule_replaces_one_strategy_and_keeps_the_others():
    conf = ExtractConf.model_validate(
        {"strategy": "balanced", "strategies": {"balanced": {"runs": ["readability"]}}}
    )
    assert conf.strategies["balanced"].runs == ["readability"]
    assert conf.strategies["fast"] == ExtractConf().strategies["fast"]
    out = _run(PAGES["article"], conf)
    assert out["extractor"] == "balanced/readability"


def test_an_extractor_that_is_not_installed_is_a_config_error(monkeypatch):
    from curate_pipeline.config import read

    monkeypatch.setattr(read, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match="rs_trafilatura, which is not installed"):
        ExtractConf.model_validate(
            {"strategies": {"balanced": {"runs": ["trafilatura", "rs_trafilatura"]}}}
        )


def test_the_choice_is_the_same_in_any_order_and_in_another_process():
    confs = [ExtractConf(strategy=s) for s in ("fast", "balanced", "best")]
    here = {(n, c.strategy): extract_text(h, "https://example.org/a", c)
            for c in confs for n, h in PAGES.items()}  # fmt: skip
    backwards = {(n, c.strategy): extract_text(h, "https://example.org/a", c)
                 for c in reversed(confs) for n, h in reversed(PAGES.items())}  # fmt: skip
    assert here == backwards
    code = (
        "import json, sys\n"
        "from tests.test_extract_strategy import PAGES\n"
        "from curate_pipeline.config import ExtractConf\n"
        "from curate_pipeline.document.extract import extract_text\n"
        "out = {f'{n}|{s}': extract_text(h, 'https://example.org/a', ExtractConf(strategy=s))\n"
        "       for s in ('best', 'fast', 'balanced') for n, h in PAGES.items()}\n"
        "json.dump(out, sys.stdout)\n"
    )
    other = json.loads(subprocess.check_output([sys.executable, "-c", code], text=True))
    assert {tuple(k.split("|")): tuple(v) for k, v in other.items()} == here


def test_a_failing_extractor_leaves_the_others(monkeypatch):
    def broken(html, url):
        raise ValueError("lxml says no")

    first = ExtractConf().strategies["balanced"].runs[0]
    monkeypatch.setitem(EXTRACTORS, first, broken)
    out = _run(PRODUCT, ExtractConf(strategy="balanced"))
    assert out["reject_reason"] is None and "herons wait for fish" in out["text"]
    assert out["extractor"].startswith("balanced/resiliparse")
    assert f"{first}: ValueError: lxml says no" in out["extractor"]


def test_a_slow_extractor_times_out_and_the_others_are_kept(monkeypatch):
    def burns(html, url):  # CPU until the shared bound runs out
        t0 = time.process_time()
        while time.process_time() - t0 < 30:
            pass

    monkeypatch.setitem(EXTRACTORS, "trafilatura", burns)
    monkeypatch.setitem(EXTRACTORS, "readability", burns)
    conf = ExtractConf.model_validate({"strategy": "best", "timeout_s": 0.3, "strategies": {
        "best": {"runs": ["trafilatura", "resiliparse", "readability"]}}})  # fmt: skip
    t0 = time.process_time()
    out = _run(PRODUCT, conf)
    assert time.process_time() - t0 < 1.0  # one bound for all: not 0.3 s each
    assert out["reject_reason"] is None and "herons wait for fish" in out["text"]
    assert out["extractor"].startswith("best/resiliparse")  # ran first: cheapest
    assert "trafilatura: timeout (cpu)" in out["extractor"]
    assert "readability: no time left" in out["extractor"] or (
        "readability: timeout (cpu)" in out["extractor"]  # a tick of the 0.3 s was left
    )


def test_when_every_extractor_fails_the_ledger_says_why(monkeypatch):
    for name in ExtractConf().strategies["balanced"].runs:
        monkeypatch.setitem(EXTRACTORS, name, lambda html, url: 1 / 0)
    out = _run(PAGES["forum"], ExtractConf(strategy="balanced"))
    assert (out["reject_stage"], out["reject_reason"]) == ("extract", "extract_error")
    assert out["reject_detail"].startswith(
        "every extractor failed: trafilatura_recall: ZeroDivision"
    )

    def burns(html, url):
        t0 = time.process_time()
        while time.process_time() - t0 < 30:
            pass

    for name in ExtractConf().strategies["fast"].runs:
        monkeypatch.setitem(EXTRACTORS, name, burns)
    out = _run(PAGES["forum"], ExtractConf(strategy="fast", timeout_s=0.2))
    assert (out["reject_reason"], out["reject_detail"]) == ("extract_timeout", "> 0.2 s CPU")


def test_a_page_too_deep_for_resiliparse_is_never_given_to_it():
    deep = "<div>" * 50_000 + "text" + "</div>" * 50_000
    with pytest.raises(TooDeep, match="50,000 elements deep"):
        check_nesting(deep)
    check_nesting("<div>" * 2_000 + "</div>" * 2_000 + "<span></span>" * 20_000)  # wide: fine
    views = ExtractConf.model_validate(
        {"strategy": "fast", "strategies": {"fast": {"runs": ["resiliparse_nocomments",
                                                            "resiliparse_all"]}}}
    )  # fmt: skip
    t0 = time.process_time()
    out = _run(deep, views)
    assert time.process_time() - t0 < 2  # resiliparse on it: 30 s and more, or a dead process
    assert out["reject_reason"] == "extract_error" and "nested too deeply" in out["reject_detail"]
    t0 = time.process_time()
    out = _run(deep, ExtractConf(strategy="fast"))  # trafilatura takes over: nothing there
    assert time.process_time() - t0 < 2
    assert out["reject_reason"] == "extract_empty"


@pytest.mark.spark
def test_every_spark_task_makes_the_same_choice(spark):
    html = PAGES["listing"]

    def run(rows):
        from curate_pipeline.config import ExtractConf
        from curate_pipeline.document.extract import extract_text

        for _ in rows:
            yield extract_text(html, "https://example.org/a", ExtractConf())

    got = spark.sparkContext.parallelize(range(16), 8).mapPartitions(run).collect()
    assert len(set(got)) == 1 and got[0] == extract_text(html, "https://example.org/a",
                                                         ExtractConf())  # fmt: skip


def test_a_defect_in_the_rule_fails_the_task_not_the_page(monkeypatch):
    def broken(runs, texts, longer):
        raise KeyError("a run")

    monkeypatch.setattr(extract_strategy, "keep", broken)
    with pytest.raises(extract.StrategyDefect, match="KeyError"):
        _run(PAGES["article"], ExtractConf(strategy="balanced"))


def test_a_missing_library_fails_the_task_not_the_page(monkeypatch):
    def missing(html, url):
        raise ModuleNotFoundError("No module named 'readability'")

    monkeypatch.setitem(EXTRACTORS, "resiliparse_nocomments", missing)
    with pytest.raises(ModuleNotFoundError):
        _run(PRODUCT, ExtractConf(strategy="best"))
