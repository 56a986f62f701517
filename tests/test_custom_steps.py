"""Steps of the user's own (issue 64): a function in a module outside the package, named in
the config or handed to the Python API, runs among the per-document steps; its drops are
ledger rows under its own stage name, exactly the documents its rule picks (checked against
a run without it, by the test's own rule); its settings and code hash are in the manifest and
the version record. A 15-line script with a step defined in it runs end to end."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_outputs import published, version_rows

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]

MODULE = '''
from curate_pipeline.api import Drop


def drop_short(doc, settings):
    """Documents under settings["min_chars"] characters."""
    n = len(doc["text"] or "")
    if n < settings["min_chars"]:
        return Drop("short", f"{n} characters")
'''


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Path:
    from curate_pipeline.examples.corpus import synthetic_pages, write_pages_warc

    warc = tmp_path_factory.mktemp("custom") / "crawl.warc.gz"
    write_pages_warc(warc, synthetic_pages(120, seed=3))
    return warc


def test_a_users_module_step_drops_what_its_rule_says(crawl, spark, tmp_path, monkeypatch):
    from curate_pipeline.api import read, run

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "my_filters.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(mine))  # the user's folder: the driver imports it

    base = run(None, [crawl], tmp_path / "base", spark=spark)
    texts = {r["id"]: r["text"] for r in read(tmp_path / "base").to_pylist()}
    cut = sorted(len(t) for t in texts.values())[len(texts) // 3]  # a third of them short
    step = {"function": "my_filters:drop_short", "name": "short_docs", "after": "rules",
            "settings": {"min_chars": cut}}  # fmt: skip
    manifest = run(None, [crawl], tmp_path / "out", spark=spark, set={"steps.custom": [step]})
    kept = {r["id"] for r in version_rows(tmp_path / "out", "data", ["id"])}
    ledger = [r for r in version_rows(tmp_path / "out", "rejected")
              if r["stage"] == "short_docs"]  # fmt: skip
    short = {i for i, t in texts.items() if len(t) < cut}
    assert short and kept == set(texts) - short  # nothing else changed
    assert {r["doc_id"] for r in ledger} == short
    assert all(r["reason"] == "short" and r["detail"].endswith(" characters") for r in ledger)
    assert manifest["counts"]["rejected"]["short_docs:short"] == len(short)
    code = hashlib.sha256((mine / "my_filters.py").read_bytes()).hexdigest()[:16]
    (entry,) = manifest["custom_steps"]
    assert entry == {**step, "code": code}
    record = json.loads((tmp_path / "out" / "_versions" / "000000000001.json").read_text())
    assert record["custom_steps"] == [entry]
    assert base["custom_steps"] == []


SCRIPT = '''
import sys, zlib
from curate_pipeline.api import Drop, read, run


def held_out(doc):
    """A step of this script's own: every third page (by URL) kept for evaluation."""
    if zlib.crc32(doc["url"].encode()) % 3 == 0:
        return Drop("held_out", doc["url"])


manifest = run(None, [sys.argv[1]], sys.argv[2], steps=[held_out])
print("kept", manifest["counts"]["kept"], "held", manifest["counts"]["rejected"].get(
    "held_out:held_out", 0), "data rows", read(sys.argv[2]).num_rows)
'''


def test_a_fifteen_line_script_with_its_own_step(crawl, tmp_path):
    script = tmp_path / "curate_my_crawl.py"
    script.write_text(SCRIPT)
    assert len(SCRIPT.strip().splitlines()) <= 15
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(script), str(crawl), str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    line = r.stdout.strip().splitlines()[-1].split()
    kept, shops, rows = int(line[1]), int(line[3]), int(line[6])
    assert kept == rows > 0 and shops > 0
    ledger = [r for r in version_rows(out, "rejected") if r["stage"] == "held_out"]
    assert len(ledger) == shops and all(r["reason"] == "held_out" for r in ledger)
    import zlib

    assert all(zlib.crc32(r["detail"].encode()) % 3 == 0 for r in ledger)  # the rule's own
    assert json.loads((published(out) / "manifest.json").read_text())["custom_steps"][0][
        "function"] == "__main__:held_out"  # fmt: skip
