"""Appending to an output (curate_pipeline/run/increment.py): a run whose inputs extend the current
version's takes over its files and sends only the new inputs' documents through the corpus
stages, deduplicated against the earlier version's index. Checked against a run over all the
inputs at once (where no new document touches an earlier one), against the bytes of the
earlier files, and against the pages the test planted as copies."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from run_outputs import run_outputs, version_rows

from curate_pipeline.cli import main
from curate_pipeline.examples.corpus import Page, small_edit, synthetic_pages, write_pages_warc
from curate_pipeline.outputs.publish import versions
from curate_pipeline.outputs.tokens.shards import TokenShards

pytestmark = pytest.mark.spark


def _digests(folder) -> dict[str, str]:
    """Every file of a writer's folder (versions/F and its tables' data/F, rejected/F,
    index/F), by relative path: its bytes' hash."""
    out = folder.parent.parent
    places = [folder, *(out / t / folder.name for t in versions.TABLES)]
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for place in places for p in sorted(place.rglob("*")) if p.is_file()}  # fmt: skip


def _pages(n: int, seed: int, host: str) -> list[Page]:
    return [Page(f"https://{host}/{i}", p.html)
            for i, p in enumerate(synthetic_pages(n, seed=seed, bad_share=0.1))]  # fmt: skip


def test_appending_equals_one_run_where_nothing_links(spark, cfg, tmp_path, capsys):
    """Two files of unrelated pages: the output of [a] then [a, b] holds what one run over
    [a, b] holds, document for document and ledger row for ledger row; the first version's
    files are listed, never rewritten, and the token shards hold every kept document."""
    from curate_pipeline.run.orchestrate import run

    write_pages_warc(tmp_path / "a.warc.gz", _pages(40, 1, "a.example.org"), tag="a")
    write_pages_warc(tmp_path / "b.warc.gz", _pages(40, 2, "b.example.org"), tag="b")
    files = [str(tmp_path / "a.warc.gz"), str(tmp_path / "b.warc.gz")]
    first = run(cfg, files[:1], tmp_path / "grown", spark)
    v1 = tmp_path / "grown" / first["path"]
    before = _digests(v1)
    second = run(cfg, files, tmp_path / "grown", spark)
    assert second["increment"]["base_version"] == first["version"]
    assert second["increment"]["counts"]["read"] == second["counts"]["read"] - first["counts"][
        "read"]  # fmt: skip
    assert _digests(v1) == before  # the first version's files, untouched
    now = versions.current(tmp_path / "grown")
    assert now.record["holds"] == [Path(first["path"]).name]
    assert {f.uri for f in now.files("data")} >= {
        f.uri for f in versions.read(tmp_path / "grown", first["version"]).files("data")
    }
    whole = run(cfg, files, tmp_path / "whole", spark)
    assert run_outputs(tmp_path / "grown") == run_outputs(tmp_path / "whole")
    for k in ("read", "kept"):
        assert second["counts"][k] == whole["counts"][k], k
    assert second["counts"]["rejected"] == whole["counts"]["rejected"]
    shards = TokenShards(now.dir / "tokens")
    assert len(shards) == second["counts"]["kept"] == len(version_rows(tmp_path / "grown", "data"))
    assert second["tokens"]["total"] == whole["tokens"]["total"]
    # the mixture's shards of the appended version: the earlier version's and its own, every
    # kept document once (natural mode), as its budget counts them
    import pyarrow.parquet as pq

    shard_rows = sum(pq.read_metadata(f.uri).num_rows for f in now.files("shards"))
    assert (
        shard_rows
        == second["counts"]["kept"]
        == sum(
            s["docs_after"]
            for s in json.loads((now.dir / "budget.json").read_text())["sources"].values()
        )
    )
    capsys.readouterr()
    assert main(["versions", str(tmp_path / "grown"), "--files", "data"]) == 0
    assert capsys.readouterr().out.split() == [f.uri for f in now.files("data")]
    # the card names every folder the appended version lists, read back by huggingface_hub
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(tmp_path / "grown" / "README.md")
    default = next(c for c in card.data.configs if c["config_name"] == "default")
    assert default["data_files"][0]["path"] == [
        f"data/{now.dir.name}/**/*.parquet",
        f"data/{Path(first['path']).name}/**/*.parquet",
    ]
    assert card.data.license == "odc-by" and card.data.size_categories == ["n<1K"]


def test_appended_copies_are_dropped_naming_the_earlier_document(spark, cfg, tmp_path):
    """[a], then [a, b] with exact copies and one-word edits of a's kept pages under new URLs,
    then [a, b, c] with a copy of one of b's new pages: each copy is in the ledger naming the
    earlier kept document, whichever version kept it; nothing earlier is retracted."""
    from curate_pipeline.run.orchestrate import run

    cfg = cfg.model_copy(deep=True)
    cfg.output.keep_hours = 0  # retention by count alone, seen below
    out = tmp_path / "out"
    a = _pages(60, 11, "a.example.org")
    write_pages_warc(tmp_path / "a.warc.gz", a, tag="a")
    files = [str(tmp_path / "a.warc.gz")]
    first = run(cfg, files, out, spark)
    a_kept = {r["url"]: r["id"] for r in version_rows(out, "data", ["id", "url"])}
    originals = [p for p in a if p.url in a_kept][:8]
    rng = random.Random(3)
    exact = [Page(f"https://mirror.example.net/{i}", p.html) for i, p in enumerate(originals[:4])]
    near = [Page(f"https://edits.example.net/{i}", small_edit(p.html, rng))
            for i, p in enumerate(originals[4:])]  # fmt: skip
    new = _pages(20, 99, "new.example.com")
    write_pages_warc(tmp_path / "b.warc.gz", exact + near + new, tag="b")
    files.append(str(tmp_path / "b.warc.gz"))
    second = run(cfg, files, out, spark)
    ledger = {r["url"]: r for r in version_rows(out, "rejected")}
    for copy, original in zip(exact, originals[:4], strict=True):
        r = ledger[copy.url]
        assert (r["stage"], r["reason"]) == ("prior_dup", "exact"), r
        assert r["detail"] == f"in {out} as {a_kept[original.url]}"
    for copy, original in zip(near, originals[4:], strict=True):
        r = ledger[copy.url]
        assert (r["stage"], r["reason"]) == ("prior_dup", "near"), r
        assert r["detail"].startswith(f"in {out} as {a_kept[original.url]}, estimated")
    kept = {r["url"]: r["id"] for r in version_rows(out, "data", ["id", "url"])}
    assert a_kept.items() <= kept.items()  # nothing earlier retracted
    b_new = [p for p in new if p.url in kept]
    assert len(b_new) >= 15
    # a third file in a row: a copy of a page the second version kept
    write_pages_warc(tmp_path / "c.warc.gz", [Page("https://again.example.net/0", b_new[0].html),
                                              *_pages(5, 7, "c.example.org")], tag="c")  # fmt: skip
    files.append(str(tmp_path / "c.warc.gz"))
    third = run(cfg, files, out, spark)
    ledger = {r["url"]: r for r in version_rows(out, "rejected")}
    r = ledger["https://again.example.net/0"]
    assert (r["stage"], r["reason"]) == ("prior_dup", "exact")
    assert r["detail"] == f"in {out} as {kept[b_new[0].url]}"
    now = versions.current(out)
    assert now.record["holds"] == sorted(Path(m["path"]).name for m in (first, second))
    # keep_versions 2: the first version's commit is gone, its files stay while listed
    assert versions.committed(out) == [second["version"], third["version"]]
    assert {f.uri for f in now.files("data")} <= {
        str(p) for p in (out / "data").rglob("*.parquet")}  # fmt: skip
    rows = version_rows(out, "data", ["id"])
    assert len(rows) == len({r["id"] for r in rows}) == third["counts"]["kept"]
    assert third["counts"]["read"] == second["counts"]["read"] + third["increment"]["counts"][
        "read"]  # fmt: skip
