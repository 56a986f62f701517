"""The quality classifier: the primer's votes, Spark training, both backends, the stage."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from run_outputs import version_rows

from curate_pipeline.config import Config
from curate_pipeline.document.quality.naive_bayes import NaiveBayesModel, train_counts, vote
from curate_pipeline.document.quality.tokens import classifier_tokens
from curate_pipeline.examples.quality_texts import write_examples
from curate_pipeline.examples.sample import ARTICLE_BREAD, ARTICLE_RIVER

SPAM = "Click here to buy now! Free shipping, add to cart, log in to claim your coupon."


def test_primer_votes():
    assert round(vote(3, 0, n_good=77, n_bad=45, v=80), 3) == 1.158
    assert round(vote(0, 4, n_good=77, n_bad=45, v=80), 3) == -1.837


def test_one_tokenisation_for_training_and_scoring():
    assert classifier_tokens("The River's bank, 12pk... Don't CLICK!") == [
        "the", "river's", "bank", "12pk", "don't", "click",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    return write_examples(tmp_path_factory.mktemp("examples"))


def _docs(path) -> list[str]:
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def test_primer_style_examples_vote_river_good_click_bad(examples):
    good, bad = examples
    model = train_counts(map(classifier_tokens, _docs(good)), map(classifier_tokens, _docs(bad)))
    assert model.votes["river"] > 0 > model.votes["click"]
    assert model.score(ARTICLE_RIVER) > 0 > model.score(SPAM)
    m = model.meta
    assert m["vocabulary"] == len(model.votes) and m["n_good"] > 0 and m["n_bad"] > 0


def test_model_file_round_trip_and_tokenizer_guard(tmp_path, examples):
    good, bad = examples
    model = train_counts(map(classifier_tokens, _docs(good)), map(classifier_tokens, _docs(bad)))
    path = tmp_path / "nb.json"
    model.save(path)
    back = NaiveBayesModel.load(path)
    assert back.votes == pytest.approx(model.votes) and back.score(SPAM) == model.score(SPAM)
    with_prior = NaiveBayesModel.load(path, use_prior=True)
    assert with_prior.score(SPAM) == pytest.approx(model.score(SPAM) + model.prior)
    doc = json.loads(path.read_text())
    doc["tokenizer"] = "something-else"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="retrain"):
        NaiveBayesModel.load(path)


# --- Spark training -----------------------------------------------------------------


def _cfg(**quality) -> Config:
    cfg = Config()
    cfg.quality = cfg.quality.model_copy(update=quality)
    return cfg


@pytest.mark.spark
def test_spark_naive_bayes_agrees_with_plain_python(spark, examples, tmp_path):
    from curate_pipeline.run.train_quality import _split, read_texts, train_quality

    good, bad = examples
    cfg = _cfg()
    cfg.quality.train.heldout_fraction = 0.2
    out = tmp_path / "nb.json"
    report = train_quality(spark, [str(good)], [str(bad)], out, cfg)
    model = NaiveBayesModel.load(out)
    # the same training split, counted in plain Python
    t = cfg.quality.train

    def train_texts(path):
        kept, _ = _split(read_texts(spark, [str(path)]), t.heldout_fraction, t.seed)
        return [r["text"] for r in kept.collect()]

    ref = train_counts(
        map(classifier_tokens, train_texts(good)), map(classifier_tokens, train_texts(bad))
    )
    assert set(model.votes) == set(ref.votes)
    for w, v in ref.votes.items():
        assert model.votes[w] == pytest.approx(v, abs=1e-9), w
    assert model.prior == pytest.approx(ref.prior)
    for key in ("n_good", "n_bad", "vocabulary", "docs_good", "docs_bad"):
        assert model.meta[key] == ref.meta[key], key
    assert model.votes["river"] > 0 > model.votes["click"]
    # held-out accuracy, measured with the saved artefact
    h = report["heldout"]
    assert h["documents"] == report["heldout"]["good"] + h["bad"] > 10
    assert h["documents"] + sum(report["train_documents"].values()) == 160
    assert h["accuracy"] >= 0.9
    print(f"naive Bayes held-out accuracy {h['accuracy']:.3f} on {h['documents']} documents")


@pytest.mark.spark
def test_fasttext_backend_and_input_formats(spark, examples, tmp_path):
    from curate_pipeline.document.quality.fasttext_backend import meta_path
    from curate_pipeline.document.quality.model import load_quality_model
    from curate_pipeline.run.train_quality import train_quality

    good, bad = examples
    # good as JSONL, bad as Parquet: the three input formats read the same
    jsonl = tmp_path / "good.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in _docs(good)))
    parquet = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": _docs(bad)}), parquet)
    cfg = _cfg(backend="fasttext")
    cfg.quality.train.fasttext = {**cfg.quality.train.fasttext, "epoch": 25}
    out = tmp_path / "ft.bin"
    report = train_quality(spark, [str(jsonl)], [str(parquet)], out, cfg)
    assert meta_path(out).is_file()
    model = load_quality_model(out, cfg.quality)
    article, spam = model.score_texts([ARTICLE_BREAD, SPAM])
    assert article > 0 > spam
    assert report["heldout"]["accuracy"] >= 0.9
    assert sum(report["train_documents"].values()) + report["heldout"]["documents"] == 160


@pytest.mark.spark
def test_training_input_errors_name_the_path(spark, examples, tmp_path):
    from curate_pipeline.run.train_quality import TrainingInputError, train_quality

    good, _ = examples
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": "no text field here"}\n')
    with pytest.raises(TrainingInputError, match="bad.jsonl"):
        train_quality(spark, [str(good)], [str(bad)], tmp_path / "m.json", _cfg())
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(TrainingInputError, match="both classes"):
        train_quality(spark, [str(good)], [str(empty)], tmp_path / "m.json", _cfg())


@pytest.mark.spark
def test_quality_stage_scores_and_drops(spark, cfg, sample_warc, tmp_path):
    from curate_pipeline.run.orchestrate import run

    out = tmp_path / "q"
    m = run(cfg, [str(sample_warc)], out, spark)
    names = [s["name"] for s in m["stages"]]
    assert names[:5] == ["extract", "langid", "rules", "quality", "exact_dedup"]
    data = version_rows(out, "data")
    assert data and all(d["metadata"]["quality_score"] > 0 for d in data)
    strict = cfg.model_copy(deep=True)
    strict.quality.threshold = 1e9
    m2 = run(strict, [str(sample_warc)], out, spark)
    assert m2["counts"]["kept"] == 0
    assert m2["counts"]["rejected"]["quality:below_threshold"] == 4  # the English pages
    assert m2["stages"][3]["status"] == "ran"  # (with the whole documents pass)
    ledger = version_rows(out, "rejected")
    drops = [r for r in ledger if r["stage"] == "quality"]
    assert drops and all(r["detail"].endswith("< 1e+09") for r in drops)
    off = cfg.model_copy(deep=True)
    off.quality.enabled = False
    m3 = run(off, [str(sample_warc)], out, spark)
    assert "quality" not in [s["name"] for s in m3["stages"]]
    assert m3["counts"] == m["counts"]
