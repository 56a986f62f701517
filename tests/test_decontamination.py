"""Benchmark decontamination: readers, the index, both policies, planted contamination in
real Common Crawl text, and the stage in a run."""

from __future__ import annotations

import gzip
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from run_outputs import version_rows

from curate_pipeline.config import ConfigError, DecontaminationConf, EvalSet
from curate_pipeline.document.text.decontamination import (
    EvalSetError,
    build_index,
    check,
    read_items,
)

# Evaluation items written for these tests (question + answer, as a JSONL set would hold them).
ITEMS = [
    ("q1", "Which gas makes up most of the atmosphere of the planet Mars today?", "Carbon dioxide"),
    ("q2", "A train leaves the station at nine and travels sixty miles each hour; how far "
           "has it gone by noon?", "180 miles"),
    ("q3", "Name the process by which green plants turn light water and carbon dioxide "
           "into sugar.", "Photosynthesis"),
    ("q4", "If a rectangle has a width of four metres and an area of twenty square metres, "
           "what is its length?", "Five metres"),
    ("q5", "Which author wrote the novel in which a whaling captain pursues a white whale "
           "across the oceans?", "Herman Melville"),
    ("q6", "What is the smallest prime number that is larger than the square of seven plus "
           "one?", "53"),
    ("q7", "Who painted the ceiling of the chapel in Vatican City between 1508 and 1512 for "
           "Pope Julius?", "Michelangelo"),
    ("q8", "How many bones does an adult human body usually have once all of the growth "
           "plates have fused?", "206"),
]  # fmt: skip


def _jsonl(path, items=ITEMS):
    with open(path, "w") as fh:
        for ident, q, a in items:
            fh.write(json.dumps({"id": ident, "question": q, "answer": a}) + "\n")
    return path


def _index(tmp_path, n=13):
    p = _jsonl(tmp_path / "qa.jsonl")
    return build_index([("qa", read_items(p, "auto", ["question", "answer"], "id"))], n)


def _docs(shared_data) -> list[str]:
    docs = []
    for f in sorted((shared_data / "text").glob("dolma_*.jsonl")):
        for line in f.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                docs.append(json.loads(line)["text"])
    return docs


def test_readers_jsonl_parquet_lines_and_their_ids(tmp_path):
    p = _jsonl(tmp_path / "qa.jsonl")
    items = list(read_items(p, "auto", ["question", "answer"], "id"))
    assert items[0] == ("q1", ITEMS[0][1] + " " + ITEMS[0][2])
    assert list(read_items(p, "jsonl", ["question"]))[1][0] == "line 2"
    t = pa.table({"q": [i[1] for i in ITEMS], "choices": [[i[2], "x"] for i in ITEMS]})
    pq.write_table(t, tmp_path / "qa.parquet")
    rows = list(read_items(tmp_path / "qa.parquet", "auto", ["q", "choices"]))
    assert rows[2] == ("row 3", ITEMS[2][1] + " " + ITEMS[2][2] + " x")
    with gzip.open(tmp_path / "lines.txt.gz", "wt") as fh:
        fh.write("first line\n\nthird line\n")
    assert list(read_items(tmp_path / "lines.txt.gz", "auto", [])) == [
        ("line 1", "first line\n"),
        ("line 3", "third line\n"),
    ]


def test_bad_sets_name_the_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"question": "ok"}\nnot json\n')
    with pytest.raises(EvalSetError, match=r"bad.jsonl, line 2: not JSON"):
        list(read_items(p, "auto", ["question"]))
    p.write_text('{"prompt": "x"}\n')
    with pytest.raises(EvalSetError, match=r"line 1: none of the fields \['question'\]"):
        list(read_items(p, "auto", ["question"]))
    with pytest.raises(ValueError, match="given twice"):
        DecontaminationConf(sets=[EvalSet(name="a", path="x"), EvalSet(name="a", path="y")])


def test_missing_or_broken_set_fails_before_spark(tmp_path, cfg):
    from curate_pipeline.run.preflight import check_eval_sets

    c = cfg.model_copy(deep=True)
    c.decontamination = DecontaminationConf(
        enabled=True, sets=[EvalSet(name="qa", path=str(tmp_path / "nope.jsonl"))]
    )
    with pytest.raises(ConfigError, match=r"sets\[0\] \(qa\): .*nope.jsonl is not a file"):
        check_eval_sets(c)
    (tmp_path / "nope.jsonl").write_text("{oops\n")
    c.decontamination.sets[0].fields = ["question"]
    with pytest.raises(ConfigError, match=r"nope.jsonl, line 1: not JSON"):
        check_eval_sets(c)


def test_index_counts_short_items_and_first_owner_wins(tmp_path):
    idx = _index(tmp_path)
    s = idx.summaries[0]
    assert (s.items, s.too_short) == (8, 0)
    short = build_index([("tiny", [("a", "too short to hold thirteen words")])], 13)
    assert (short.summaries[0].too_short, len(short.hashes)) == (1, 0)
    same = ITEMS[0][1]
    two = build_index([("a", [("x", same)]), ("b", [("y", same)])], 13)
    assert two.summaries[0].ngrams > 0 and two.summaries[1].ngrams == 0
    assert check("intro " + same, two).set_name == "a"


def test_case_punctuation_and_spacing_do_not_hide_a_match(tmp_path):
    idx = _index(tmp_path)
    q, a = ITEMS[4][1], ITEMS[4][2]
    disguised = "Quiz!  " + q.upper().replace(" ", "\n  ").replace(",", " ,") + " -- " + a
    v = check(disguised, idx)
    assert v.rejected and v.set_name == "qa" and v.detail.startswith("item q5: ")
    # twelve words of an item are not a 13-gram
    assert check(" ".join(q.split()[:12]), idx).set_name is None


def test_planted_items_in_real_pages_are_all_caught_and_clean_pages_never(tmp_path,
                                                                         shared_data):  # fmt: skip
    idx = _index(tmp_path)
    docs = _docs(shared_data)
    assert len(docs) > 600
    for d in docs:  # the real crawl text, unchanged: nothing in it is an evaluation item
        assert check(d, idx).set_name is None
    rng = random.Random(7)
    planted = rng.sample(range(len(docs)), 80)
    for k, i in enumerate(planted):
        ident, q, a = ITEMS[k % len(ITEMS)]
        words = docs[i].split(" ")
        at = rng.randrange(len(words) + 1)
        text = " ".join(words[:at] + [q, a] + words[at:])
        v = check(text, idx)
        assert v.rejected and v.set_name == "qa" and f"item {ident}:" in v.detail, (i, v)


def test_remove_cuts_the_match_and_a_margin_and_keeps_the_rest(tmp_path, shared_data):
    idx = _index(tmp_path)
    docs = [d for d in _docs(shared_data) if 3000 < len(d) < 20000]
    before, after = docs[0], docs[1]
    text = before + "\n" + ITEMS[1][1] + " " + ITEMS[1][2] + "\n" + after
    v = check(text, idx, "remove", margin=200, max_pieces=10, min_piece_chars=200)
    assert not v.rejected and v.set_name == "qa"
    assert "sixty miles" not in v.text
    assert before[:-200].strip() in v.text and after[200:].strip() in v.text
    assert v.removed_chars == len(text) - (len(v.text) - len("\n\n"))  # two pieces joined
    # a page that is mostly the item: nothing of 200 chars left, so it is dropped
    w = check("Answer: " + ITEMS[1][1] + " " + ITEMS[1][2], idx, "remove")
    assert w.rejected and "nothing of >= 200 chars left" in w.detail
    # the item planted every 600 characters: too many pieces
    long = next(d for d in docs if len(d) > 7000)
    chunks = [long[i : i + 600] for i in range(0, 6600, 600)]
    riddled = (" " + ITEMS[2][1] + " ").join(chunks)
    r = check(riddled, idx, "remove", margin=10, max_pieces=10, min_piece_chars=50)
    assert r.rejected and "split into 11 pieces > max_pieces 10" in r.detail


@pytest.mark.spark
def test_the_stage_drops_contaminated_pages_with_the_item_in_the_ledger(
    spark, cfg, sample_warc, sample_run, tmp_path
):
    from curate_pipeline.run.orchestrate import run

    base_out, base = sample_run
    kept = version_rows(base_out, "data")
    # an evaluation item lifted from one kept page: that page (and its copies) must go
    victim = sorted(kept, key=lambda d: d["id"])[0]
    item = " ".join(victim["text"].split()[:20])
    (tmp_path / "lines.txt").write_text("a line far too short to index\n" + item + "\n")
    c = cfg.model_copy(deep=True)
    c.decontamination = DecontaminationConf(
        enabled=True, sets=[EvalSet(name="lifted", path=str(tmp_path / "lines.txt"))]
    )
    m = run(c, [str(sample_warc)], tmp_path / "out", spark)
    ledger = version_rows(tmp_path / "out", "rejected")
    hits = [r for r in ledger if r["stage"] == "decont"]
    assert victim["url"] in {r["url"] for r in hits}
    assert all(r["reason"] == "lifted" and r["detail"].startswith("item line 2: ") for r in hits)
    figures = m["decontamination"]["sets"]["lifted"]
    assert (figures["items"], figures["items_too_short"]) == (2, 1)
    assert figures["documents_dropped"] == len(hits) == m["counts"]["rejected"]["decont:lifted"]
    assert m["counts"]["kept"] == base["counts"]["kept"] - 1
