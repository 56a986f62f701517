"""`curate explore`: the API checked against the run's own files read independently (pyarrow),
its safety rules, and the page driven in headless Chromium (Debian's, through Playwright)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from run_outputs import published, version_rows

from curate_pipeline.outputs.explore.server import Explorer, start

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]  # fmt: skip


@pytest.fixture(scope="module")
def served(demo_run):
    server = start(Explorer(demo_run), port=0)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def get(url: str, headers: dict | None = None) -> tuple[int, dict, dict]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read() or b"null")


def _ledger(out: Path) -> list[dict]:
    return version_rows(out, "rejected")


def _documents(out: Path) -> dict[int, dict]:
    rows = pq.read_table(out / "_stages" / "documents", columns=["crawl_pos", "text", "url"])
    return {r["crawl_pos"]: r for r in rows.to_pylist()}


def test_every_reason_lists_exactly_its_ledger_rows(served, demo_run):
    ledger = _ledger(demo_run)
    by_reason: dict[str, set[str]] = {}
    for r in ledger:
        by_reason.setdefault(f"{r['stage']}:{r['reason']}", set()).add(r["url"])
    assert len(by_reason) >= 4
    for verdict, urls in by_reason.items():
        _, _, page = get(f"{served}/api/documents?verdict={verdict}&size=200")
        assert page["total"] == sum(f"{r['stage']}:{r['reason']}" == verdict for r in ledger)
        assert {r["url"] for r in page["rows"]} == urls, verdict
    kept = version_rows(demo_run, "data")
    _, _, page = get(f"{served}/api/documents?verdict=kept")
    assert sorted(r["url"] for r in page["rows"]) == sorted(r["url"] for r in kept)
    _, _, everything = get(f"{served}/api/documents?size=1")
    manifest = json.loads((published(demo_run) / "manifest.json").read_text())
    assert everything["total"] == manifest["counts"]["read"]


def test_a_document_shows_its_text_verdict_and_page(served, demo_run):
    docs = _documents(demo_run)
    kept = version_rows(demo_run, "data")
    pos = kept[0]["metadata"]["crawl_pos"]
    _, _, doc = get(f"{served}/api/document?pos={pos}&page_text=1")
    assert doc["verdict"] == "kept" and doc["text"] == docs[pos]["text"] == kept[0]["text"]
    visible = doc["page_text"]["text"]
    words = set(doc["text"].split())
    assert len(words & set(visible.split())) / len(words) > 0.9  # extracted from that page
    for r in _ledger(demo_run):
        _, _, d = get(f"{served}/api/document?pos={r['crawl_pos']}")
        assert (
            d["verdict"] == f"{r['stage']}:{r['reason']}" and d["ledger"]["detail"] == r["detail"]
        )


def test_a_document_shows_each_rule_with_its_value_limit_and_verdict(served, demo_run):
    """The rules table: a document the rules dropped shows the rules it broke (the ledger's
    detail names them) as "breaks", with the statistic's value and the config's limit; a kept
    document breaks none; no row carries a raw null."""
    from curate_pipeline.config import Config
    from curate_pipeline.document.text.rules import checks

    cfg = Config.model_validate(
        json.loads((published(demo_run) / "manifest.json").read_text())["config"]
    )
    limits = {f"{s}.{c.name}": c for s, cs in checks(cfg.rules).items() for c in cs}
    dropped = [r for r in _ledger(demo_run) if r["stage"] == "rules"]
    assert dropped, "the demo has a page the rules drop"
    stored = pq.read_table(demo_run / "_stages" / "documents").to_pylist()  # every column
    docs = {d["crawl_pos"]: d for d in stored}
    for r in dropped:
        _, _, d = get(f"{served}/api/document?pos={r['crawl_pos']}")
        broken = {f"{c['group']}.{c['rule']}" for c in d["checks"] if c["verdict"] == "breaks"}
        assert broken and broken <= set(limits)
        assert broken == set(docs[r["crawl_pos"]]["failed_rules"])
        for name in broken:
            assert name.split(".", 1)[1] in r["detail"]  # the ledger names the same rules
            row = next(c for c in d["checks"] if f"{c['group']}.{c['rule']}" == name)
            c = limits[name]
            assert row["breaks_when"] == f"{c.stat} {c.op} {c.limit:g}"
            value = docs[r["crawl_pos"]][f"{name.split('.')[0]}_stats"][c.stat]
            assert c.broken_by(value) and row["value"] != "—"
    kept = version_rows(demo_run, "data")
    _, _, d = get(f"{served}/api/document?pos={kept[0]['metadata']['crawl_pos']}")
    assert d["checks"] and all(c["verdict"] == "passes" for c in d["checks"])
    assert all(c["value"] is not None for c in d["checks"])


def test_the_server_is_read_only_and_closed(served, demo_run, tmp_path):
    status, headers, _ = get(f"{served}/api/status")
    assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
    for path in ("/../../etc/passwd", "/page.js/../../manifest.json", "/%2e%2e/manifest.json",
                 "/api/../manifest.json", "/manifest.json", "/data/"):  # fmt: skip
        code, _, _ = get(served + path)
        assert code == 404, path
    assert get(f"{served}/api/documents?page=x")[0] == 400
    assert get(f"{served}/api/document?pos=123456789")[0] == 404
    req = urllib.request.Request(f"{served}/api/status", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 405
    # a token: required on every API call when given
    guarded = start(Explorer(demo_run), port=0, token="s3cret")
    try:
        url = f"http://127.0.0.1:{guarded.server_address[1]}/api/status"
        assert get(url)[0] == 401
        assert get(url + "?token=s3cret")[0] == 200
        assert get(url, {"Authorization": "Bearer s3cret"})[0] == 200
    finally:
        guarded.shutdown()
    with pytest.raises(ValueError, match="--token"):
        start(Explorer(demo_run), host="0.0.0.0", port=0)


def _browser(chromium: str):
    sync = pytest.importorskip("playwright.sync_api")
    p = sync.sync_playwright().start()
    return p, p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)


def test_the_page_in_chromium_filters_opens_and_matches_the_ledger(served, demo_run, chromium,
                                                                   tmp_path):  # fmt: skip
    shots = Path(os.environ.get("CURATE_SCREENSHOTS", tmp_path))
    p, browser = _browser(chromium)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(served + "/")
        page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        manifest = json.loads((published(demo_run) / "manifest.json").read_text())
        assert f"read {manifest['counts']['read']}" in page.inner_text("#status")
        page.screenshot(path=str(shots / "explore-overview.png"))
        # a reason on the overview filters the document list to its ledger rows
        ledger = [r for r in _ledger(demo_run) if r["stage"] == "lang"]
        reason = f"lang:{ledger[0]['reason']}"
        page.click(f"#reasons a:text-is('{reason}')")
        page.wait_for_selector("#doc-list tr.row")
        shown = page.locator("#doc-list tr.row td:first-child").all_inner_texts()
        assert sorted(shown) == sorted(
            r["url"] for r in ledger if r["reason"] == ledger[0]["reason"]
        )
        assert page.input_value("#f-verdict") == reason
        page.click("#doc-list tr.row >> nth=0")
        page.wait_for_selector("#doc:not([hidden])")
        assert page.inner_text("#doc-url") == shown[0]
        facts = page.inner_text("#doc-facts")
        row = next(r for r in ledger if r["url"] == shown[0])
        assert reason in facts and row["detail"] in facts
        page.wait_for_function("document.getElementById('doc-page-text').textContent.length > 0")
        assert "breaks when" in page.inner_text("#doc-checks")  # a table, not a JSON blob
        page.screenshot(path=str(shots / "explore-document.png"), full_page=True)
        # the clusters view lists the demo's near-duplicate pair with both members
        page.click("#tab-clusters")
        page.wait_for_selector("#cluster-list tr.row")
        page.click("#cluster-list tr.row >> nth=0")
        page.wait_for_selector("#cluster-members table tr.row")
        verdicts = page.locator("#cluster-members tr.row td:nth-child(2)").all_inner_texts()
        assert "kept" in verdicts and "near_dup:duplicate" in verdicts
        page.screenshot(path=str(shots / "explore-clusters.png"))
        assert errors == []
    finally:
        browser.close()
        p.stop()


def test_page_text_with_markup_is_shown_as_text(spark, cfg, chromium, tmp_path):
    """A document whose text is markup (crawl pages carry scripts) is shown as text and never
    runs: the page writes values with textContent, under a script-src 'self' policy."""
    from curate_pipeline.run.orchestrate import run

    words = "Ordinary words make this page long enough to keep for the rules and filters. "
    text = words * 8 + "<script>window.__ran = 1</script><img src=x onerror='window.__ran=2'> end."
    src = tmp_path / "docs.jsonl"
    src.write_text(json.dumps({"id": "x1", "text": text, "url": "https://example.org/x"}) + "\n")
    out = tmp_path / "out"
    c = cfg.model_copy(deep=True)
    c.quality.enabled = False
    run(c, [str(src)], out, spark)
    server = start(Explorer(out), port=0)
    p, browser = _browser(chromium)
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        page.click("#tab-documents")
        page.wait_for_selector("#doc-list tr.row")
        page.click("#doc-list tr.row >> nth=0")
        page.wait_for_selector("#doc:not([hidden])")
        assert "<script>window.__ran = 1</script>" in page.inner_text("#doc-text")
        assert page.evaluate("window.__ran") is None
        assert page.locator("#doc img").count() == 0
    finally:
        browser.close()
        p.stop()
        server.shutdown()
