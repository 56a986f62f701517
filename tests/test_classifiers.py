"""Published quality classifiers by kind: each scorer against its reference inference code,
the percentile buckets against numpy, and the registry end to end on Spark."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from run_outputs import published, version_rows

from curate_pipeline.config import ClassifierConf, QualityGroup
from curate_pipeline.document.quality.buckets import bucket, ensemble, percentiles
from curate_pipeline.document.quality.classifiers import below, finish, load_classifier
from curate_pipeline.examples.classifier_models import (
    dclm_fasttext,
    example_texts,
    transformer_folder,
)

warnings.filterwarnings("ignore", category=UserWarning)

# texts with the shapes pages have: several lines, blank lines, other line breaks, long ones
good, bad = example_texts(12)
TEXTS = [
    *good[:6], *bad[:6],
    "First line.\n\nSecond paragraph\r\nwith a CRLF and a\u2028line separator.  ",
    " ".join(good) * 3,  # longer than the transformer's max_length: truncated
    "",
]  # fmt: skip


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("classifiers")
    dclm_fasttext(d / "dclm" / "model.bin")
    return {
        "dclm": d / "dclm" / "model.bin",
        "edu": transformer_folder(d / "edu", onnx=True),
        "cls": transformer_folder(d / "cls", labels=["low", "high"], seed=1),
    }


def _dclm_reference(model, content: str) -> float:
    """DCLM's classify_fasttext_hq_prob (baselines/mappers/enrichers/
    quality_prediction_enrichers_calc_fasttext.py), as published."""
    text = " ".join(content.strip().splitlines())
    (label,), (prob,) = model.predict(text)
    return 1 - prob if label == "__label__cc" else prob


def test_fasttext_scores_equal_dclms_published_inference(models):
    import fasttext

    ref_model = fasttext.load_model(str(models["dclm"]))
    conf = ClassifierConf(name="dclm", kind="fasttext", path=str(models["dclm"]),
                          preprocessing="dclm", label="__label__hq")  # fmt: skip
    ours = load_classifier(models["dclm"], conf).score_texts(TEXTS)
    ref = [_dclm_reference(ref_model, t) for t in TEXTS]
    assert ours == pytest.approx(ref, abs=1e-6)
    assert np.mean(ours[:6]) > 0.5 > np.mean(ours[6:12])  # the model learned the labels
    assert len(set(np.round(ours, 6))) > 6


def _forward_reference(folder, text: str, label: str | None):
    """FineWeb-Edu's model card: one text, padding="longest", truncation=True, the logits."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder)
    inputs = tok(text, return_tensors="pt", padding="longest", truncation=True)
    with torch.no_grad():
        logits = model(**inputs).logits
    if label is None:
        return logits.squeeze(-1).float().detach().numpy().item()
    idx = model.config.label2id[label]
    return torch.softmax(logits.float(), dim=-1)[0, idx].item()


@pytest.mark.parametrize("batch_size", [1, 5])
def test_transformers_regression_equals_model_forward(models, batch_size):
    conf = ClassifierConf(name="edu", kind="transformers", path="x", output="regression",
                          batch_size=batch_size)  # fmt: skip
    ours = load_classifier(models["edu"], conf).score_texts(TEXTS)
    ref = [_forward_reference(models["edu"], t, None) for t in TEXTS]
    assert ours == pytest.approx(ref, abs=1e-4)  # padding in a batch: float noise only
    assert len(set(np.round(ours, 4))) > 6


def test_transformers_label_probability_equals_softmax(models):
    conf = ClassifierConf(name="cls", kind="transformers", path="x", output="probability",
                          label="high")  # fmt: skip
    ours = load_classifier(models["cls"], conf).score_texts(TEXTS)
    ref = [_forward_reference(models["cls"], t, "high") for t in TEXTS]
    assert ours == pytest.approx(ref, abs=1e-5)
    bad_label = conf.model_copy(update={"label": "nope"})
    with pytest.raises(ValueError, match="not among the model's labels"):
        load_classifier(models["cls"], bad_label)


def test_onnx_export_scores_as_the_transformers_model(models):
    conf = ClassifierConf(name="edu", kind="onnx", path="x", output="regression", batch_size=4)
    ours = load_classifier(models["edu"], conf).score_texts(TEXTS)
    ref = [_forward_reference(models["edu"], t, None) for t in TEXTS]
    assert ours == pytest.approx(ref, abs=1e-4)


def test_onnx_tokenization_without_transformers_equals_the_fast_tokenizer(models):
    """The ONNX scorer tokenizes with `tokenizers` alone: the same ids, masks and types as
    transformers' fast tokenizer (padding to the longest, truncation at model_max_length or
    max_length), batch by batch."""
    import numpy as np
    from transformers import AutoTokenizer

    from curate_pipeline.document.quality.classifiers import FastTokenizer

    for max_length in (None, 8):
        ref_tok = AutoTokenizer.from_pretrained(str(models["edu"]))
        if max_length:
            ref_tok.model_max_length = max_length
        ours = FastTokenizer(models["edu"], max_length)
        for batch in (TEXTS, TEXTS[:1], list(reversed(TEXTS)), ["", "x " * 500]):
            ref = ref_tok(batch, return_tensors="np", padding="longest", truncation=True)
            got = ours(batch)
            for key in ref:
                np.testing.assert_array_equal(got[key], ref[key], err_msg=key)


def test_the_onnx_scorer_runs_without_transformers_or_torch(models):
    """What the default install has: onnxruntime and tokenizers, no transformers, no torch."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['transformers'] = None; sys.modules['torch'] = None\n"
        "from curate_pipeline.config import ClassifierConf\n"
        "from curate_pipeline.document.quality.classifiers import load_classifier\n"
        "c = ClassifierConf(name='edu', kind='onnx', path='x', output='regression')\n"
        f"print(load_classifier({str(models['edu'])!r}, c).score_texts(['some text'])[0])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    conf = ClassifierConf(name="edu", kind="onnx", path="x", output="regression")
    ref = load_classifier(models["edu"], conf).score_texts(["some text"])[0]
    assert float(r.stdout) == pytest.approx(ref, abs=1e-6)


def test_max_length_truncates_as_the_tokenizer_does(models):
    long = TEXTS[-2]
    conf = ClassifierConf(name="edu", kind="transformers", path="x", output="regression")
    full = load_classifier(models["edu"], conf).score_texts([long])[0]
    short = load_classifier(models["edu"], conf.model_copy(update={"max_length": 8}))
    assert short.score_texts([long])[0] != pytest.approx(full, abs=1e-6)


def test_fineweb_edu_int_score_threshold_and_clip():
    c = ClassifierConf(name="edu", kind="transformers", path="x", output="regression",
                       clip=(0, 5), integer=True, threshold=3)  # fmt: skip
    # FineWeb-Edu: int_score = int(round(max(0, min(score, 5)))) >= 3 keeps the page
    for raw in (-1.0, 2.49, 2.5, 2.51, 3.4, 7.0):
        s = finish(c, raw)
        kept = int(round(max(0, min(raw, 5)))) >= 3
        assert (below(c, s) is None) == kept, raw
    assert finish(c, 7.0) == 5 and finish(c, -1.0) == 0
    assert below(c, 2.5) == "edu 2.5 (int 2) < 3"


def test_config_refuses_what_a_kind_cannot_do():
    with pytest.raises(ValueError, match="needs `label`"):
        ClassifierConf(name="d", kind="fasttext", path="x", preprocessing="dclm")
    with pytest.raises(ValueError, match="one line"):
        ClassifierConf(name="d", kind="fasttext", path="x", label="__label__hq")
    with pytest.raises(ValueError, match="no regression"):
        ClassifierConf(name="d", kind="fasttext", path="x", preprocessing="dclm",
                       label="__label__hq", output="regression")  # fmt: skip
    assert ClassifierConf(name="Edu-x", kind="onnx", path="x",
                          output="regression").score_column == "edu_x_score"  # fmt: skip


def test_buckets_are_numpy_digitize_and_the_ensemble_rules():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=2000)
    cuts = list(np.quantile(scores, percentiles(20), method="inverted_cdf"))
    assert percentiles(20)[0] == pytest.approx(0.05) and len(cuts) == 19
    got = [bucket(s, cuts) for s in scores]
    assert got == list(np.digitize(scores, cuts))
    assert min(got) == 0 and max(got) == 19
    assert all(abs(got.count(b) - 100) <= 1 for b in range(20))  # 5% each
    assert ensemble([3, None, 17], "max") == 17
    assert ensemble([3, 4], "mean") == 4 and ensemble([3, 5, 6], "mean") == 5
    assert ensemble([None, None], "max") is None


def test_group_weights_refuse_overlaps_and_out_of_range():
    from curate_pipeline.outputs.mixture.quality_groups import GroupWeights

    gw = GroupWeights({"hi": QualityGroup(buckets=(2, 3), weight=2.0)}, 4)
    assert [gw.weight(b) for b in (None, 0, 2, 3)] == [1.0, 1.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="both"):
        GroupWeights({"a": QualityGroup(buckets=(0, 2)), "b": QualityGroup(buckets=(2, 3))}, 4)
    with pytest.raises(ValueError, match="not within"):
        GroupWeights({"a": QualityGroup(buckets=(0, 4))}, 4)


@pytest.mark.spark
def test_percentile_cuts_known_stored_and_reused(spark, cfg, tmp_path):
    from curate_pipeline.location import Location
    from curate_pipeline.stages.quality_buckets import PERCENTILES_FILE, quality_buckets

    c = cfg.model_copy(deep=True)
    c.quality.classifiers = [
        ClassifierConf(name="a", kind="naive_bayes", path=c.quality.model, languages=["all"]),
        ClassifierConf(name="b", kind="naive_bayes", path=c.quality.model, languages=["all"]),
    ]
    c.quality.ensemble.enabled, c.quality.ensemble.buckets = True, 4
    c.quality.ensemble.relative_error = 0.0  # exact: equal to numpy's inverted CDF
    a = [float(i) for i in range(100)]
    b = [float((i * 37) % 100) / 10 for i in range(100)]
    rows = [{"doc_id": str(i), "a_score": a[i], "b_score": b[i] if i % 10 else None}
            for i in range(100)]  # fmt: skip
    df = spark.createDataFrame(rows, "doc_id string, a_score double, b_score double")
    out = Location.of(tmp_path)
    got = {r["doc_id"]: r["quality_bucket"] for r in quality_buckets(spark, df, c, out).collect()}
    made = json.loads((tmp_path / PERCENTILES_FILE).read_text())
    bs = [x for i, x in enumerate(b) if i % 10]  # nulls are left out of the cuts
    assert made["cuts"]["a"] == list(np.quantile(a, [0.25, 0.5, 0.75], method="inverted_cdf"))
    assert made["cuts"]["b"] == list(np.quantile(bs, [0.25, 0.5, 0.75], method="inverted_cdf"))
    assert made["scored"] == {"a_score": 100, "b_score": 90}
    for i in range(100):
        ba = int(np.digitize(a[i], made["cuts"]["a"]))
        bb = int(np.digitize(b[i], made["cuts"]["b"])) if i % 10 else None
        assert got[str(i)] == ensemble([ba, bb], "max")
    # a later run into the same output (more documents) keeps the cuts of the first
    more = spark.createDataFrame([{"doc_id": "x", "a_score": 1000.0, "b_score": 1000.0}] + rows,
                                 "doc_id string, a_score double, b_score double")  # fmt: skip
    quality_buckets(spark, more, c, out)
    assert json.loads((tmp_path / PERCENTILES_FILE).read_text()) == made
    c.quality.ensemble.reuse = False
    quality_buckets(spark, more, c, out)
    assert json.loads((tmp_path / PERCENTILES_FILE).read_text())["documents"] == 101


@pytest.mark.spark
def test_registry_on_spark_scores_buckets_and_weights_the_mixture(spark, cfg, sample_warc,
                                                                 models, tmp_path):  # fmt: skip
    import fasttext

    from curate_pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.quality.classifiers = [
        ClassifierConf(name="dclm", kind="fasttext", path=str(models["dclm"]),
                       preprocessing="dclm", label="__label__hq", score_column="quality_score"),
        ClassifierConf(name="edu", kind="transformers", path=str(models["edu"]),
                       output="regression", clip=(0, 5), batch_size=3),
        ClassifierConf(name="edu_onnx", kind="onnx", path=str(models["edu"]),
                       output="regression", clip=(0, 5), threshold=-1),
    ]  # fmt: skip
    c.quality.ensemble.enabled, c.quality.ensemble.buckets = True, 4
    c.quality.ensemble.relative_error = 0.0
    c.mixture.quality_groups = {"top": QualityGroup(buckets=(3, 3), weight=3.0),
                                "rest": QualityGroup(buckets=(0, 2), weight=1.0)}  # fmt: skip
    out = tmp_path / "run"
    m = run(c, [str(sample_warc)], out, spark)
    assert [x["name"] for x in m["quality_model"]["classifiers"]] == ["dclm", "edu", "edu_onnx"]
    data = version_rows(out, "data")
    english = [d for d in data if d["lang"] == "en"]
    assert english
    ft = fasttext.load_model(str(models["dclm"]))
    for d in data:
        md = d["metadata"]
        if d["lang"] != "en":
            assert md["quality_score"] is None and md["edu_score"] is None
            assert md["quality_bucket"] is None
            continue
        assert md["quality_score"] == pytest.approx(_dclm_reference(ft, d["text"]), abs=1e-6)
        ref = min(max(_forward_reference(models["edu"], d["text"], None), 0), 5)
        assert md["edu_score"] == pytest.approx(ref, abs=1e-4)
        assert md["edu_onnx_score"] == pytest.approx(ref, abs=1e-4)
    cuts = json.loads((out / "quality_percentiles.json").read_text())["cuts"]
    for d in english:
        md = d["metadata"]
        want = max(int(np.digitize(md[f"{n}_score" if n != "dclm" else "quality_score"],
                                   cuts[n])) for n in ("dclm", "edu", "edu_onnx"))  # fmt: skip
        assert md["quality_bucket"] == want
    budget = json.loads((published(out) / "budget.json").read_text())
    groups = budget["quality_groups"]["groups"]
    top = sum(1 for d in english if d["metadata"]["quality_bucket"] == 3)
    assert groups.get("top", {"docs_before": 0})["docs_before"] == top
    files = sorted((published(out) / "shards").glob("*.parquet"))
    shards = pa.concat_tables([pq.read_table(p) for p in files])
    copies = {}
    for i in shards.column("id").to_pylist():
        copies[i] = copies.get(i, 0) + 1
    for d in data:  # natural mode: weights are whole numbers of copies here
        b = d["metadata"]["quality_bucket"]
        assert copies.get(d["id"], 0) == (3 if b == 3 else 1), (d["id"], b)
    # a rerun into the output: accepted (the stored cuts are the run's), the cuts kept
    stored = (out / "quality_percentiles.json").read_text()
    again = run(c, [str(sample_warc)], out, spark)
    assert again["counts"] == m["counts"]
    assert (out / "quality_percentiles.json").read_text() == stored
