"""Per-language recipes (conf/fineweb2.yaml): each language's FineWeb-2 thresholds, its word
splitter, its language_score; and a GlotLID-format model on the same code path.

The expected values are read from the YAML files here, independently of the loader, and the
words from each segmenter's own library call."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from run_outputs import version_rows

from curate_pipeline.config import load_config
from curate_pipeline.document.langid import language_verdict, load_fasttext, predict_languages
from curate_pipeline.document.recipes import RecipeError, recipe_rules
from curate_pipeline.document.text.lang_words import FALLBACK, assignment, split_words_in
from curate_pipeline.stages.recipe_files import load_recipes, splitter_table
from curate_pipeline.stages.rules import rules_step

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "conf" / "fineweb2" / "configs"


def _yaml(key: str) -> dict:
    return yaml.safe_load((CONFIGS / f"{key}.yml").read_text())


@pytest.fixture(scope="module")
def fw2():
    return load_config(ROOT / "conf" / "fineweb2.yaml")


@pytest.fixture(scope="module")
def recipes(fw2):
    return load_recipes(fw2)


def _check(cfg, doc: dict):
    step = rules_step(None, cfg)  # no model: the driver side needs no session
    (verdict,) = step.check([doc])
    return verdict


def test_a_recipe_takes_its_language_settings(recipes):
    for key in ("deu_Latn", "cmn_Hani", "tha_Thai", "srp_Cyrl"):
        want = _yaml(key)
        conf, _ = recipes.rules(key)
        rep, fw, q = conf.gopher_repetition, conf.fineweb, conf.gopher_quality
        assert rep.max_dup_line_frac == (want["dup_line_frac"] or None)
        assert rep.max_top_ngram_char_frac == {n: v for n, v in want["top_n_grams"]}
        assert rep.max_dup_ngram_char_frac == {n: v for n, v in want["dup_n_grams"]}
        assert (fw.line_punct_thr, fw.new_line_ratio) == (
            want["line_punct_thr"],
            want["new_line_ratio"],
        )
        assert q.min_avg_word_length == (want["min_avg_word_length"] or None)
        assert q.max_avg_word_length == (want["max_avg_word_length"] or None)
        assert q.min_alpha_words_ratio == want["max_non_alpha_words_ratio"]
        assert q.stop_words == {key: want["stopwords"]}
        assert recipes.language_score(key) == want["language_score"]
        # FineWeb-2's fixed choices stay the preset's
        assert (rep.max_dup_para_frac, fw.short_line_thr, fw.char_duplicates_ratio) == (
            None,
            None,
            0.1,
        )
    zero = next(
        p.stem for p in sorted(CONFIGS.glob("*.yml")) if _yaml(p.stem)["min_avg_word_length"] == 0
    )
    assert recipes.rules(zero)[0].gopher_quality.min_avg_word_length is None  # datatrove: off


def test_a_broken_recipe_names_itself(fw2):
    with pytest.raises(RecipeError, match="recipe xxx_Latn: missing"):
        recipe_rules(fw2.rules, "xxx_Latn", {"dup_line_frac": 0.3})
    bad = {**_yaml("deu_Latn"), "top_n_grams": [[2, 0.1]]}
    with pytest.raises(RecipeError, match="top_n_grams: n = \\[2\\]"):
        recipe_rules(fw2.rules, "xxx_Latn", bad)


# 60-odd words, one German stop word of FineWeb-2's list ("der"), nothing repeated
GERMAN = (
    "Am Morgen der Reise war es still. Anna ging langsam zum Bahnhof hinunter, weil ihr Zug erst "
    "spät fuhr.\nUnterwegs kaufte sie Brot, Käse, Äpfel sowie frische Blumen, damit "
    "ihre Großmutter sich freute.\nSpäter saß sie lange am Fenster, schaute hinaus, "
    "trank heißen Kaffee, las ein spannendes Buch über alte Schiffe.\nAbends kam "
    "endlich ihr Bruder zurück; gemeinsam kochten sie Suppe, erzählten Geschichten, "
    "lachten viel, bis spät nachts alle müde waren.\n"
)


def test_german_stop_words_from_its_recipe(fw2):
    one = GERMAN  # "der" only: 1 < 2 (case-sensitive, as datatrove: "Der" would not count)
    verdict = _check(fw2, {"text": one, "lang": "de", "lang_key": "deu_Latn"})
    assert verdict.reason == "gopher_quality.stop_words"
    assert verdict.detail.startswith("deu_Latn: ")
    assert "stop_words 1 < 2" in verdict.detail
    two = one.replace("Brot, Käse", "Brot und Käse")  # "der", "und"
    assert _check(fw2, {"text": two, "lang": "de", "lang_key": "deu_Latn"}) is None
    # without a recipe: the rules section, whose stop words are English's only, so German
    # skips the rule, and as English the text fails it
    en = fw2.model_copy(deep=True)
    en.recipes.configs = None
    assert _check(en, {"text": two, "lang": "de"}) is None
    assert _check(en, {"text": two, "lang": "en"}).reason == "gopher_quality.stop_words"


def test_words_split_by_each_language_s_library(fw2):
    import jieba
    from kiwipiepy import Kiwi
    from pythainlp.tokenize import word_tokenize

    table = splitter_table(fw2)
    zh = "我们今天去北京大学参观，然后在图书馆看书。"
    assert split_words_in(zh, assignment(table, "cmn_Hani", "zh")) == [
        w for w in jieba.lcut(zh) if w.strip()
    ]
    th = "ผมชอบกินข้าวผัดมาก แต่วันนี้ไม่หิว"
    assert split_words_in(th, assignment(table, "tha_Thai", "th")) == word_tokenize(
        th, keep_whitespace=False, engine="newmm-safe"
    )
    ko = "나는 서울에 산다. 오늘 날씨가 좋다."
    assert split_words_in(ko, assignment(table, "kor_Hang", "ko")) == [
        ko[t.start : t.end] for t in Kiwi(model_type="sbg").tokenize(ko)
    ]  # surface spans
    assert split_words_in("私は東京大学の学生です。", assignment(table, "jpn_Jpan", "ja")) == [
        "私",
        "は",
        "東京",
        "大学",
        "の",
        "学生",
        "です",
        "。",
    ]  # SudachiPy, split mode C
    # datatrove's Stanza languages (models downloaded at first use) and unknown labels: xx
    assert assignment(table, "kaz_Cyrl", "kk") == FALLBACK
    assert assignment(table, None, "no-such-label") == FALLBACK
    assert assignment(table, None, "en") == ("spacy", "en")  # no recipe: the label's row


def test_chinese_is_judged_on_words_not_runs_of_characters(fw2):
    text = "\n".join(
        ["我们今天去北京大学参观，然后在图书馆看书，学习了很多新的知识。"] * 1
        + [f"第{i}天，他在公司的会议上介绍了新的项目计划和明年的工作目标。" for i in range(12)]
    )
    doc = {"text": text, "lang": "zh", "lang_key": "cmn_Hani"}
    regex_words = fw2.model_copy(deep=True)
    regex_words.rules.word_splitter = "regex"
    got = _check(regex_words, dict(doc))
    assert got is not None and "gopher_quality.long_words" in got.detail  # a line = a "word"
    got = _check(fw2, dict(doc))
    assert got is None or "long_words" not in got.detail


def test_near_duplicates_only_within_a_language(fw2):
    from curate_pipeline.stages.near_dedup import signature_step

    text = "Copyright 2024 Example Corp. All rights reserved. Terms of use apply to this site."
    step = signature_step(None, fw2)
    docs = [{"text": text, "lang": "de", "lang_key": "deu_Latn"},
            {"text": text, "lang": "de", "lang_key": "deu_Latn"},
            {"text": text, "lang": "nl", "lang_key": "nld_Latn"}]  # fmt: skip
    step.check(docs)
    assert docs[0]["minhash"] == docs[2]["minhash"]  # the same text, the same signature
    assert docs[0]["bands"] == docs[1]["bands"]
    assert not set(docs[0]["bands"]) & set(docs[2]["bands"])  # never in one bucket
    off = fw2.model_copy(deep=True)
    off.near_dedup.per_language = False
    signature_step(None, off).check(docs)
    assert docs[0]["bands"] == docs[2]["bands"]


def test_minhash_shingles_of_the_language_s_words(fw2):
    """Chinese has no spaces: as FineWeb-2 does, its shingles are jieba's words, so two
    texts sharing most of their words are near duplicates, as whole runs they are not."""
    import jieba

    from curate_pipeline.document.dedup.minhash import MinHasher, estimate_jaccard, jaccard
    from curate_pipeline.document.dedup.normalize import simplify
    from curate_pipeline.stages.near_dedup import signature_step

    a = (
        "我们今天去北京大学参观，然后在图书馆看书。他在公司的会议上介绍了新的项目计划。"
        "这个城市的交通非常方便，地铁可以到达每一个地方。春天的时候，公园里开满了鲜花。"
        "她每天早上跑步，然后吃一顿简单的早餐。学校明年将开设更多的外语课程。"
        "这家餐厅的菜很好吃，价格也不贵。我们计划下个月去南方旅行，看看大海。"
    )
    b = a.replace("简单的早餐", "丰富的午餐")
    docs = [{"text": t, "lang": "zh", "lang_key": "cmn_Hani"} for t in (a, b)]
    signature_step(None, fw2).check(docs)
    words = [[w for w in jieba.lcut(simplify(t)) if w.strip()] for t in (a, b)]
    shingled = [{" ".join(w[i : i + 5]) for i in range(len(w) - 4)} for w in words]
    truth = jaccard(*shingled)  # the words' own 5-shingles, jieba's words
    sigs = [MinHasher(5, 14, 8, 1).signature(t) for t in (a, b)]  # whitespace words
    assert truth > 0.75
    got = estimate_jaccard(*(np.array(d["minhash"], dtype=np.int32) for d in docs))
    assert abs(got - truth) < 0.15
    assert estimate_jaccard(*sigs) < 0.5  # a space-free text is one "word" a clause


def test_language_score_per_recipe(fw2, recipes):
    thr = _yaml("deu_Latn")["language_score"]
    assert language_verdict("de", thr - 0.01, fw2.langid, "deu_Latn", thr) == (
        "low_confidence",
        f"best guess de {thr - 0.01:.3f} < {thr:g} (deu_Latn's language_score)",
    )
    assert language_verdict("de", thr, fw2.langid, "deu_Latn", thr) is None
    # no recipe (English): langid.threshold
    assert language_verdict("en", 0.6, fw2.langid)[0] == "low_confidence"
    assert language_verdict("en", 0.7, fw2.langid) is None


GLOT = {
    "de": "deu_Latn",
    "ru": "rus_Cyrl",
    "zh": "cmn_Hani",
    "es": "spa_Latn",
    "en": "eng_Latn",
    "fr": "fra_Latn",
    "it": "ita_Latn",
}


@pytest.fixture(scope="module")
def glotlid_model(shared_data, tmp_path_factory):
    """A fastText model in GlotLID's label format (`__label__deu_Latn`), trained here on the
    shared Common Crawl texts labelled by lid.176."""
    import fasttext

    lid = load_fasttext(str(ROOT / "models" / "lid.176.ftz"))
    lines = []
    for path in sorted((shared_data / "text").glob("dolma_*.jsonl")):
        for row in map(json.loads, filter(None, path.read_text().split("\n"))):
            text = " ".join(row["text"].split())
            if len(text) < 200:
                continue
            ((lang, p),) = predict_languages(lid, [text])
            if lang in GLOT and p > 0.8:
                for i in range(0, min(len(text), 3000), 300):
                    lines.append(f"__label__{GLOT[lang]} {text[i : i + 300]}")
    work = tmp_path_factory.mktemp("glotlid")
    (work / "train.txt").write_text("\n".join(lines) + "\n")
    model = fasttext.train_supervised(
        str(work / "train.txt"),
        epoch=25,
        lr=0.5,
        minn=2,
        maxn=4,
        dim=16,
        seed=0,
        thread=1,
        verbose=0,
    )
    model.save_model(str(work / "glotlid-format.bin"))
    return work / "glotlid-format.bin"


def test_a_glotlid_format_model_takes_the_same_path(glotlid_model, fw2, recipes):
    model = load_fasttext(str(glotlid_model))
    assert set(model.get_labels()) == {f"__label__{k}" for k in GLOT.values()}
    ((lang, score),) = predict_languages(model, [GERMAN])
    assert lang == "deu_Latn"
    assert recipes.key_for(lang, GERMAN) == "deu_Latn"  # a GlotLID label is its own key
    assert recipes.key_for("eng_Latn", "") is None  # FineWeb-2 has no English recipe
    keep_de = fw2.langid.model_copy(update={"keep_languages": ["deu_Latn"]})
    # keep_languages matches the label or its recipe key: lid.176's `de` as GlotLID's
    assert language_verdict(lang, 0.99, keep_de, "deu_Latn", 0.5) is None
    assert language_verdict("de", 0.99, keep_de, "deu_Latn", 0.5) is None
    assert language_verdict("fra_Latn", 0.99, keep_de, "fra_Latn", 0.5)[0] == "not_kept"


@pytest.mark.spark
def test_the_preset_on_spark_with_a_glotlid_format_model(
    spark, fw2, glotlid_model, shared_data, tmp_path
):
    from warcio.archiveiterator import ArchiveIterator

    from curate_pipeline.run.orchestrate import run

    warc = shared_data / "warc" / "CC-MAIN-2020-34_resiliparse-warcfile.warc.gz"
    c = fw2.model_copy(deep=True)
    c.langid.model = str(glotlid_model)
    run(c, [str(warc)], tmp_path, spark)
    data = version_rows(tmp_path, "data")
    ledger = version_rows(tmp_path, "rejected")
    with warc.open("rb") as fh:  # warcio's count, independent of the pipeline's reader
        records = sum(1 for _ in ArchiveIterator(fh))
    assert len(data) + len(ledger) == records
    keys = {p.stem for p in CONFIGS.glob("*.yml")}
    assert data and all(d["lang"] in GLOT.values() for d in data)
    for d in data:  # a GlotLID label is the recipe key; English has none
        assert d["metadata"]["lang_key"] == (d["lang"] if d["lang"] in keys else None)
        key = d["metadata"]["lang_key"]
        if key:
            assert d["metadata"]["lang_score"] >= _yaml(key)["language_score"]
    # the ledger names the recipe: its language_score, its rules (English has none)
    lang_drops = [r["detail"] for r in ledger if r["reason"] == "low_confidence"]
    assert any(d.endswith("(deu_Latn's language_score)") for d in lang_drops)
    for detail in lang_drops:
        label, score, thr = detail.split()[2], float(detail.split()[3]), detail.split()[5]
        if label in keys:
            assert float(thr) == _yaml(label)["language_score"] > score
        else:
            assert float(thr) == c.langid.threshold > score
    for r in ledger:
        if r["stage"] == "rules" and ": " in r["detail"].split(" (")[0]:
            assert r["detail"].split(": ")[0] in keys


def _expanded(weights: dict[str, int], size: int) -> int:
    """FineWeb-2's Rehydrater (rehydration/README.orig.md), as its README writes it."""
    limits = {int(k): v for k, v in weights.items()}
    expanded = [1]
    for i in range(1, max(limits) + 1):
        expanded.append(limits[i] if i in limits else expanded[-1])
    return expanded[-1] if size >= len(expanded) else expanded[size]


@pytest.mark.parametrize("table", ["up_to_05_reps.json", "up_to_10_reps.json"])
def test_rehydration_repeats_as_fineweb2_expands_them(table):
    from curate_pipeline.outputs.mixture.rehydration import Rehydration

    text = (ROOT / "conf" / "fineweb2" / "rehydration" / table).read_text()
    reh = Rehydration.from_json(text, table)
    weights = json.loads(text)
    for key in ("deu_Latn", "cmn_Hani", "ita_Latn", "kao_Latn"):
        top = max(map(int, weights[key]))
        for size in range(1, top + 20):
            assert reh.repeats(key, size) == _expanded(weights[key], size), (key, size)
    assert reh.repeats(None, 40) == reh.repeats("eng_Latn", 40) == 1  # no table: once
    with pytest.raises(ValueError, match="deu_Latn: repeats must be at least 1"):
        Rehydration({"deu_Latn": {"1": 0}})


def test_missing_recipe_files_stop_the_run_before_spark(fw2, tmp_path):
    from curate_pipeline.config import ConfigError
    from curate_pipeline.run.preflight import check_recipe_files

    check_recipe_files(fw2)  # the shipped files read
    for section, key, value, says in (
        ("recipes", "configs", str(tmp_path / "nowhere"), "recipes.configs folder"),
        ("rules", "word_splitters", str(tmp_path / "none.csv"), "rules.word_splitters table"),
        ("mixture", "rehydration", str(tmp_path / "none.json"), "mixture.rehydration table"),
    ):
        c = fw2.model_copy(deep=True)
        setattr(getattr(c, section), key, value)
        with pytest.raises(ConfigError, match=says):
            check_recipe_files(c)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "deu_Latn.yml").write_text("dup_line_frac: [unclosed\n")
    c = fw2.model_copy(deep=True)
    c.recipes.configs = str(tmp_path / "bad")
    with pytest.raises(ConfigError, match="deu_Latn.yml: not YAML"):
        check_recipe_files(c)
    (tmp_path / "bad" / "deu_Latn.yml").write_text("dup_line_frac: 0.3\n")
    with pytest.raises(ConfigError, match="recipe deu_Latn: missing dup_n_grams"):
        check_recipe_files(c)
