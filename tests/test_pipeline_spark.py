"""The whole pipeline in Spark local[2]: real WARCs in, data + ledger + manifest out."""

import http.server
import json
import threading
from collections import Counter
from functools import partial

import pyarrow.parquet as pq
import pytest
from run_outputs import published, version_rows
from warcio.archiveiterator import ArchiveIterator

from curate_pipeline.run.orchestrate import run

pytestmark = pytest.mark.spark


def _records_in(path) -> int:
    """Records in a file by warcio alone: the independent side of the reconcile check."""
    with open(path, "rb") as fh:
        return sum(1 for _ in ArchiveIterator(fh))


def _outputs(out):
    data = version_rows(out, "data")
    ledger = version_rows(out, "rejected")
    manifest = json.loads((published(out) / "manifest.json").read_text())
    return data, ledger, manifest


@pytest.fixture(scope="module")
def shared_run(spark, cfg, shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("shared_run")
    run(cfg, [str(shared_data / "warc")], out, spark)
    return out


@pytest.fixture(scope="module")
def shared_run_extracting_all(spark, cfg, shared_data, tmp_path_factory):
    """The same, without the language pre-filter: every page is extracted."""
    out = tmp_path_factory.mktemp("shared_run_all")
    c = cfg.model_copy(deep=True)
    c.langid.prefilter = False
    run(c, [str(shared_data / "warc")], out, spark)
    return out


def test_every_shared_file_reconciles(shared_run, shared_data):
    data, ledger, manifest = _outputs(shared_run)
    c = manifest["counts"]
    assert c["read"] == c["kept"] + sum(c["rejected"].values())
    assert c["kept"] == len(data) and sum(c["rejected"].values()) == len(ledger)
    per_file = Counter(d["metadata"]["warc_file"] for d in data)
    per_file.update(r["warc_file"] for r in ledger)
    files = sorted(p for p in (shared_data / "warc").iterdir() if p.is_file())
    assert len(manifest["inputs"]) == len(files)
    for f in files:
        assert per_file[str(f.resolve())] == _records_in(f), f.name
    ids = [d["id"] for d in data] + [r["doc_id"] for r in ledger]
    assert len(ids) == len(set(ids))


def _extracted(out) -> list[dict]:
    """Documents extraction gave text (whatever language ID and the rules made of them)."""
    rows = pq.read_table(out / "_stages" / "documents").to_pylist()
    return [r for r in rows if r["reject_stage"] not in ("read", "decode", "extract")]


def _as_data(rows: list[dict]) -> list[dict]:
    return [{**r, "metadata": r} for r in rows]


def test_known_pages_are_correct_unicode(shared_run_extracting_all):
    data = _as_data(_extracted(shared_run_extracting_all))
    by_ctype = [d for d in data if "gb2312" in (d["metadata"]["content_type"] or "")]
    assert by_ctype, "the 2020 Common Crawl head has gb2312 pages"
    for d in by_ctype:  # one of them is an English page that declares gb2312
        assert "Ã" not in d["text"] and "\ufffd" not in d["text"]
    jobs = next(d for d in by_ctype if d["url"] == "http://0760.jxtdw.com/area/sanxiang/")
    assert "中山市" in jobs["text"] and d["metadata"]["charset"] == "gb18030 (header)"
    cyrillic = [d for d in data if sum("\u0400" <= ch <= "\u04ff" for ch in d["text"]) > 50]
    assert cyrillic, "windows-1251 pages decode to Cyrillic"
    assert all("Ð" not in d["text"] for d in cyrillic)


def test_shared_ledger_reasons(shared_run):
    _, ledger, manifest = _outputs(shared_run)
    rej = manifest["counts"]["rejected"]
    for key in ("read:not_response", "read:not_html", "read:http_status", "read:truncated"):
        assert rej.get(key, 0) > 0, key
    revisits = [r for r in ledger if r["reason"] == "not_response" and r["detail"] == "revisit"]
    assert len(revisits) >= 55
    assert all(r["stage"] and r["reason"] for r in ledger)


def test_language_and_rule_verdicts_on_real_pages(shared_run):
    data, ledger, manifest = _outputs(shared_run)
    rej = manifest["counts"]["rejected"]
    assert rej["lang:not_kept"] > 10 and rej.get("lang:low_confidence", 0) > 0
    assert sum(n for k, n in rej.items() if k.startswith("rules:")) > 10
    assert all(d["lang"] == "en" and d["metadata"]["lang_score"] >= 0.65 for d in data)
    assert all(d["metadata"]["gopher_quality_stats"]["n_words"] >= 50 for d in data)
    langs = manifest["languages"]
    assert langs["en"]["docs"] > langs["en"]["kept"] > 0 and langs["ru"]["kept"] == 0
    # every rule a document broke is named; the reason is the first of them
    docs = pq.read_table(shared_run / "_stages" / "documents").to_pylist()
    broken = [r for r in docs if r["reject_stage"] == "rules"]
    for r in broken:
        assert r["reject_reason"] == r["failed_rules"][0]
        assert all(name in r["reject_detail"] for name in r["failed_rules"])
    assert sum(manifest["rule_failures"].values()) == sum(len(r["failed_rules"]) for r in broken)
    assert any(len(r["failed_rules"]) > 1 for r in broken)
    assert {r["reason"] for r in ledger if r["stage"] == "rules"} <= set(manifest["rule_failures"])


def test_language_prefilter_keeps_the_same_pages(shared_run, shared_run_extracting_all):
    """The pre-filter (on by default) drops zh, de, ru pages of the real Common Crawl head
    before extraction, and the kept set equals a run extracting every page."""
    data, ledger, manifest = _outputs(shared_run)
    early = [r for r in ledger if "decided before extraction" in (r["detail"] or "")]
    assert len(early) >= 3 and all((r["stage"], r["reason"]) == ("lang", "not_kept")
                                   for r in early)  # fmt: skip
    docs = pq.read_table(shared_run / "_stages" / "documents").to_pylist()
    by_id = {d["doc_id"]: d for d in docs}
    assert all(by_id[r["doc_id"]]["text"] is None and by_id[r["doc_id"]]["lang"] not in (None, "en")
               for r in early)  # fmt: skip
    full_data, full_ledger, full_manifest = _outputs(shared_run_extracting_all)
    assert sorted(d["id"] for d in data) == sorted(d["id"] for d in full_data)
    full_why = {r["doc_id"]: (r["stage"], r["reason"]) for r in full_ledger}
    assert all(full_why[r["doc_id"]] == ("lang", "not_kept") for r in early)
    assert full_manifest["counts"]["read"] == manifest["counts"]["read"]


def test_gzip_stored_payload_is_decoded(shared_run):
    data = _as_data(_extracted(shared_run))
    gz = [d for d in data if "transfer_compression_gzip" in d["metadata"]["warc_file"]]
    assert len(gz) == 1 and "testing GZip and Brotli transmission compression" in gz[0]["text"]


def test_sample_run_and_resume(spark, cfg, sample_warc, tmp_path):
    out = tmp_path / "out"
    m1 = run(cfg, [str(sample_warc)], out, spark)
    data, ledger, _ = _outputs(out)
    assert m1["counts"] == {
        "read": 25,
        "kept": 2,
        "rejected": {
            "exact_dup:duplicate": 2,
            "lang:not_kept": 2,
            "read:empty_payload": 1,
            "read:http_status": 1,
            "read:not_html": 1,
            "read:not_response": 14,
            "read:truncated": 1,
            # the navigation-only page: trafilatura (favor_recall) keeps its menu, whose lines
            # repeat
            "rules:gopher_repetition.dup_line_frac": 1,
        },
    }
    assert {d["lang"] for d in data} == {"en"}
    assert [s["name"] for s in m1["stages"]] == [
        "extract",
        "langid",
        "rules",
        "quality",
        "exact_dedup",
        "near_dedup",
        "tokenize",
        "write",
        "mixture",
    ]
    assert {s["status"] for s in m1["stages"]} == {"ran"}
    # the sample holds each English article twice, in other encodings: exact duplicates
    assert {d["metadata"]["exact_copies"] for d in data} == {2}
    # Same job again: the completed stages are reused, the output is the same.
    m2 = run(cfg, [str(sample_warc)], out, spark)
    assert [s["status"] for s in m2["stages"][:6]] == ["reused"] * 6
    assert m2["counts"] == m1["counts"]
    assert sorted(d["id"] for d in _outputs(out)[0]) == sorted(d["id"] for d in data)
    # --force reruns; a changed extract setting reruns; an interrupted stage reruns.
    assert run(cfg, [str(sample_warc)], out, spark, force=True)["stages"][0]["status"] == "ran"
    changed = cfg.model_copy(deep=True)
    changed.extract.include_tables = False
    assert run(changed, [str(sample_warc)], out, spark)["stages"][0]["status"] == "ran"
    (out / "_stages" / "documents" / "chunk-00000" / "_STAGE.json").unlink()
    assert run(changed, [str(sample_warc)], out, spark)["stages"][0]["status"] == "ran"
    # a dedup setting reruns that corpus stage and the ones after it, not the documents pass
    changed.near_dedup.threshold = 0.7
    m3 = run(changed, [str(sample_warc)], out, spark)
    assert [s["status"] for s in m3["stages"][:6]] == ["reused"] * 5 + ["ran"]
    # a per-document stage's setting reruns the steps from the stored text, not extraction
    changed.langid.threshold = 0.5
    m4 = run(changed, [str(sample_warc)], out, spark)
    statuses = {s["name"]: s["status"] for s in m4["stages"]}
    assert statuses["extract"] == "reused" and statuses["langid"] == statuses["rules"] == "ran"
    assert [c["status"] for c in m4["chunks"]] == ["retuned"]


def test_route_by_language(spark, cfg, sample_warc, tmp_path):
    c = cfg.model_copy(deep=True)
    c.langid.route_by_language = True
    out = tmp_path / "routed"
    m = run(c, [str(sample_warc)], out, spark)
    assert m["counts"]["kept"] == 4 and not any(k.startswith("lang:") for k in m["counts"])
    # one plain folder per language (FineWeb-2's layout); each file keeps its `lang` column
    files = {f["file"].split("/")[1]: f["file"] for f in m["files"]["data"]}
    assert sorted(files) == ["en", "ru", "zh"]
    rows = version_rows(out, "data")
    ru = [d for d in rows if d["lang"] == "ru"]
    assert [d["url"] for d in ru] == ["https://reki.example.ru/dolina"]
    zh = [d for d in rows if d["lang"] == "zh"]
    assert [d["url"] for d in zh] == ["https://heliu.example.cn/shangu"]
    for lang, f in files.items():  # the folder names the rows' language, the rows keep it
        assert set(pq.read_table(out / "data" / f).column("lang").to_pylist()) == {lang}
    # files: about one per output partition in all, not one per language per partition
    c.output.data_files = 2
    m = run(c, [str(sample_warc)], out, spark)
    files = m["files"]["data"]
    assert len(files) <= 2 + 3 - 1, files  # 2 ranges, each boundary may split one language


@pytest.fixture(scope="module")
def http_root(sample_warc):
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(sample_warc.parent))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_http_input_and_listing(spark, cfg, sample_warc, sample_run, http_root, tmp_path):
    local_out = sample_run[0]
    # A Common Crawl style listing: relative path, resolved against the prefix.
    listing = tmp_path / "warc.paths"
    listing.write_text(f"{sample_warc.name}\n")
    c = cfg.model_copy(deep=True)
    c.input.listing_prefix = http_root
    http_out = tmp_path / "http"
    m = run(c, [str(listing)], http_out, spark)
    assert m["inputs"] == [f"{http_root}/{sample_warc.name}"]
    local, http_ = _outputs(local_out)[0], _outputs(http_out)[0]
    assert sorted((d["url"], d["text"]) for d in local) == sorted(
        (d["url"], d["text"]) for d in http_
    )


def test_unreachable_url_fails_the_run_in_either_mode(spark, cfg, sample_warc, tmp_path):
    """A refused connection says nothing about the data: never a ledger row, whatever
    input.on_unreadable says (tests/test_transport_spark.py has the flaky server)."""
    c = cfg.model_copy(deep=True)
    c.input.http_retries = 0
    dead = "http://127.0.0.1:9/gone.warc.gz"
    for mode in ("record", "fail"):
        c.input.on_unreadable = mode
        with pytest.raises(Exception, match="TransportError.*gone.warc.gz"):
            run(c, [str(sample_warc), dead], tmp_path / mode, spark)
        assert not (tmp_path / mode / "_versions").exists()


def test_a_retune_keeps_the_prefilter_drops(spark, cfg, sample_warc, tmp_path):
    """Steps rerun from stored text; pages the pre-filter dropped have none, and keep their
    verdict and language as they were."""
    out = tmp_path / "retune"
    run(cfg, [str(sample_warc)], out, spark)
    _, before, _ = _outputs(out)
    early = {r["doc_id"]: r for r in before if "decided before extraction" in (r["detail"] or "")}
    assert early  # the sample's ru and zh pages
    c = cfg.model_copy(deep=True)
    c.langid.threshold = 0.5  # a step setting: the chunk is retuned, not re-extracted
    m = run(c, [str(sample_warc)], out, spark)
    assert [ch["status"] for ch in m["chunks"]] == ["retuned"]
    _, after, _ = _outputs(out)
    again = {r["doc_id"]: r for r in after if "decided before extraction" in (r["detail"] or "")}
    assert again == early
    docs = {d["doc_id"]: d for d in pq.read_table(out / "_stages" / "documents").to_pylist()}
    assert all(docs[i]["lang"] not in (None, "en") and docs[i]["text"] is None for i in early)
    assert m["counts"]["read"] == m["counts"]["kept"] + sum(m["counts"]["rejected"].values())


def test_small_files_share_tasks_and_give_the_same_output(spark, cfg, tmp_path):
    """40 WARCs of 3 pages: read several to a task (one documents-store file for the chunk,
    not 40), with the documents, ledger and counts of a run reading one file a task."""
    from run_outputs import run_outputs

    from curate_pipeline.examples.corpus import synthetic_pages, write_pages_warc

    pages = synthetic_pages(120, seed=21)
    inputs = []
    for i in range(40):
        inputs.append(str(tmp_path / "in" / f"{i:02d}.warc.gz"))
        write_pages_warc(inputs[-1], pages[3 * i : 3 * i + 3], tag=f"f{i}")
    packed = run(cfg, inputs, tmp_path / "packed", spark)
    one_each = cfg.model_copy(deep=True)
    one_each.read.splits_per_file = 1  # the user's splits: no packing
    plain = run(one_each, inputs, tmp_path / "plain", spark)
    assert run_outputs(tmp_path / "packed") == run_outputs(tmp_path / "plain")
    assert packed["counts"] == plain["counts"] and packed["counts"]["read"] == 120
    stored = {name: len(list((tmp_path / name / "_stages" / "documents").rglob("part-*")))
              for name in ("packed", "plain")}  # fmt: skip
    assert stored["packed"] < 10 <= 40 <= stored["plain"], stored
