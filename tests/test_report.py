"""The seven-page demo's verdicts, and the run report checked in a real headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from run_outputs import published, version_rows

pytestmark = pytest.mark.spark

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def test_demo_verdicts(demo_run):
    from curate_pipeline.examples.demo import verdicts

    v = {r["page"]: r for r in verdicts(demo_run)}
    assert [n for n, r in sorted(v.items()) if r["verdict"] == "kept"] == [1, 7]
    assert (v[2]["stage"], v[2]["reason"]) == ("lang", "not_kept")
    assert v[2]["detail"].startswith("fr ")
    assert v[3]["stage"] == "rules"
    for rule in ("gopher_quality.short_doc", "gopher_quality.stop_words"):
        assert rule in v[3]["detail"]
    assert (v[4]["stage"], v[4]["reason"]) in {("lang", "low_confidence")} or v[4]["stage"] == (
        "rules"
    )
    page1 = "urn:uuid:00000000-0000-0000-0000-000000000001"
    page7 = "urn:uuid:00000000-0000-0000-0000-000000000007"
    assert (v[5]["stage"], v[5]["detail"]) == ("exact_dup", f"kept {page1}")
    assert v[6]["stage"] == "near_dup" and v[6]["detail"].startswith(f"kept {page7}")
    assert sum(r["verdict"] == "kept" for r in v.values()) == 2


def test_report_in_headless_chromium(demo_run, chromium, tmp_path):
    browser = chromium
    page = published(demo_run) / "report.html"
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and "<link" not in html and " src=" not in html  # self-contained
    dom = subprocess.run(
        [browser, *CHROMIUM_FLAGS, "--enable-logging=stderr", "--v=0", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == [], console
    manifest = json.loads((published(demo_run) / "manifest.json").read_text())
    counts = dict(re.findall(r'data-stage="(\w+)">(\d+)<', dom.stdout))
    rows = {s["name"]: s["rows"] for s in manifest["stages"]}
    assert int(counts["extract"]) == manifest["counts"]["read"] == rows["extract"]
    for stage in ("langid", "rules", "quality", "exact_dedup", "near_dedup", "tokenize"):
        assert int(counts[stage]) == rows[stage], stage
    assert int(counts["kept"]) == manifest["counts"]["kept"] == 2
    assert re.search(r"id=\"read\">(\d+)<", dom.stdout).group(1) == "7"
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *CHROMIUM_FLAGS, "--window-size=1200,2400", f"--screenshot={shot}",
         page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_rebuilt_from_a_finished_run(demo_run):
    from curate_pipeline.cli import main

    before = json.loads((published(demo_run) / "report.json").read_text())
    (published(demo_run) / "report.json").unlink()
    (published(demo_run) / "report.html").unlink()
    assert main(["report", str(demo_run)]) == 0
    assert json.loads((published(demo_run) / "report.json").read_text()) == before
    assert (published(demo_run) / "report.html").is_file()
    data = before
    assert data["budget"]["total_tokens"] > 0 and data["quality"]["documents_scored"] == 4
    assert data["quality"]["model"]["toy"] and data["quality"]["model"]["documents"] < 1000
    # all 7 pages get a label: 6 from their text, the French one from the pre-filter
    assert sum(n for _, n in data["languages_scores"]["histogram"]) == 7
    assert data["duplicates"]["near_cluster_sizes"] == {"1": 1, "2": 1}
    # the histogram Spark counted, against the scores read back from the stage files here
    import math

    import pyarrow.parquet as pq

    scores = [s for s in pq.read_table(demo_run / "_stages" / "documents",
                                       columns=["quality_score"]).column(0).to_pylist()
              if s is not None]  # fmt: skip
    width = data["quality"]["bin_width"]
    expect: dict[float, int] = {}
    for s in scores:
        edge = math.floor(s / width) * width
        expect[edge] = expect.get(edge, 0) + 1
    assert sorted(expect.items()) == [tuple(b) for b in data["quality"]["histogram"]]


def test_examples_name_every_reason_and_come_from_the_ledger(demo_run):

    data = json.loads((published(demo_run) / "report.json").read_text())
    manifest = json.loads((published(demo_run) / "manifest.json").read_text())
    ledger = {r["doc_id"]: f"{r['stage']}:{r['reason']}"
              for r in version_rows(demo_run, "rejected")}  # fmt: skip
    shown = data["examples"]["rejected"]
    assert sorted(shown) == sorted(manifest["counts"]["rejected"])
    for reason, items in shown.items():
        assert 1 <= len(items) <= min(3, manifest["counts"]["rejected"][reason])
        assert all(ledger[e["id"]] == reason for e in items)
    kept = [r["id"] for r in version_rows(demo_run, "data", ["id"])]
    assert sorted(e["id"] for v in data["examples"]["kept"].values() for e in v) == sorted(kept)
    html = (published(demo_run) / "report.html").read_text(encoding="utf-8")
    assert "Examples of what was dropped" in html and "toy model" in html


def test_histogram_bins_show_the_mass_not_the_outliers():
    from curate_pipeline.outputs.report import _regroup

    # 200 documents between 0 and 2, two outliers at 195 and 220 (bins of 0.25)
    hist = [[i * 0.25, 25] for i in range(8)] + [[195.0, 1], [220.0, 1]]
    edges, counts, clipped = _regroup(hist, 0.25)
    assert clipped == 2 and sum(counts) == 202
    assert edges[0] == 0.0 and edges[-1] <= 2.25  # the axis spans the mass
    assert max(counts) <= 27  # no single bar swallowing everyone
