"""Train the quality classifier on Spark: reference ("good") texts against random crawl.

Inputs are files of lines (one document a line, .txt/.txt.gz), JSONL (a `text` field) or
Parquet (a `text` column), read by Spark. Documents are tokenised with the same function the
scoring stage uses, a deterministic share is held out by a hash of the text, and then:
- naive_bayes: Spark MLlib CountVectorizer + multinomial NaiveBayes(smoothing); the artefact
  is the word votes theta[good] - theta[bad] plus the prior, as JSON;
- fasttext: the labelled lines are written to one local file and fastText train_supervised
  runs on the driver (fastText trains in one process, as DCLM's filter).
Held-out accuracy is computed with the artefact as the scoring stage loads it.
"""

from __future__ import annotations

import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from curate_pipeline.config import Config
from curate_pipeline.document.quality.fasttext_backend import (
    BAD,
    GOOD,
    meta_path,
    train_fasttext,
    training_line,
)
from curate_pipeline.document.quality.model import load_quality_model
from curate_pipeline.document.quality.naive_bayes import NaiveBayesModel
from curate_pipeline.document.quality.tokens import TOKENIZER_VERSION, classifier_tokens
from curate_pipeline.stages.arrow_batches import extended_schema, map_batches
from curate_pipeline.stages.schema import spark_schema


class TrainingInputError(ValueError):
    """A training input that cannot be read; the message names the path."""


def read_texts(spark: SparkSession, paths: list[str], text_field: str = "text") -> DataFrame:
    """One `text` column from files of lines, JSONL or Parquet (chosen by extension)."""
    frames = []
    for path in paths:
        p = path.lower()
        try:
            if p.endswith((".jsonl", ".json", ".jsonl.gz", ".json.gz")):
                df = spark.read.json(path).select(F.col(text_field).cast("string").alias("text"))
            elif p.endswith(".parquet") or Path(path).is_dir():
                df = spark.read.parquet(path).select(F.col(text_field).alias("text"))
            else:
                df = spark.read.text(path).select(F.col("value").alias("text"))
        except Exception as e:  # AnalysisException: missing path or column
            raise TrainingInputError(
                f"training input {path}: {str(e).splitlines()[0]} (files of lines, JSONL with "
                f"a {text_field!r} field, or Parquet with a {text_field!r} column)"
            ) from e
        frames.append(df)
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out.where(F.col("text").isNotNull() & (F.length(F.trim("text")) > 0))


def _tokenised(df: DataFrame) -> DataFrame:
    schema = extended_schema(df.schema, [pa.field("tokens", pa.list_(pa.string()))])

    def tok(rows: list[dict]) -> list[dict]:
        for r in rows:
            r["tokens"] = classifier_tokens(r["text"])
        return rows

    return df.mapInArrow(map_batches(tok, schema), spark_schema(schema))


def _split(df: DataFrame, fraction: float, seed: int) -> tuple[DataFrame, DataFrame]:
    bucket = F.pmod(F.xxhash64(F.lit(seed), "text"), F.lit(10_000))
    held = bucket < int(fraction * 10_000)
    return df.where(~held), df.where(held)


def _train_naive_bayes(train: DataFrame, cfg: Config) -> NaiveBayesModel:
    from pyspark.ml.classification import NaiveBayes
    from pyspark.ml.feature import CountVectorizer

    t = cfg.quality.train
    cv = CountVectorizer(
        inputCol="tokens", outputCol="features", vocabSize=t.max_vocab, minDF=float(t.min_df)
    ).fit(train)
    vec = cv.transform(train).cache()
    nb = NaiveBayes(smoothing=t.smoothing, modelType="multinomial", labelCol="label").fit(vec)
    theta = nb.theta.toArray()  # rows: label 0.0 (bad), 1.0 (good); log P(word | class)
    pi = nb.pi.toArray()
    votes = {w: float(g - b) for w, g, b in zip(cv.vocabulary, theta[1], theta[0], strict=True)}
    sums = {
        r["label"]: (int(r["docs"]), int(r["words"]))
        for r in vec.select("label", "features")
        .rdd.map(lambda r: (r["label"], (1, float(r["features"].values.sum()))))
        .reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]))
        .map(lambda kv: {"label": kv[0], "docs": kv[1][0], "words": kv[1][1]})
        .collect()
    }
    vec.unpersist()
    meta = {
        "docs_good": sums.get(1.0, (0, 0))[0],
        "docs_bad": sums.get(0.0, (0, 0))[0],
        "n_good": sums.get(1.0, (0, 0))[1],
        "n_bad": sums.get(0.0, (0, 0))[1],
        "vocabulary": len(cv.vocabulary),
        "smoothing": t.smoothing,
    }
    return NaiveBayesModel(votes, float(pi[1] - pi[0]), meta=meta)


def _write_fasttext_lines(train: DataFrame, path: Path) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for r in train.select("label", "text").toLocalIterator():
            fh.write(training_line(GOOD if r["label"] == 1.0 else BAD, r["text"]) + "\n")
            n += 1
    return n


def _evaluate(model, held: DataFrame, threshold: float) -> dict:
    """Accuracy of the saved artefact on the held-out documents (streamed to the driver)."""
    tp = tn = fp = fn = 0
    batch: list = []

    def flush() -> None:
        nonlocal tp, tn, fp, fn
        scores = model.score_texts([t for _, t in batch])
        for (label, _), s in zip(batch, scores, strict=True):
            pred = s >= threshold
            if label == 1.0:
                tp, fn = tp + pred, fn + (not pred)
            else:
                fp, tn = fp + pred, tn + (not pred)
        batch.clear()

    for r in held.select("label", "text").toLocalIterator():
        batch.append((r["label"], r["text"]))
        if len(batch) >= 512:
            flush()
    flush()
    n = tp + tn + fp + fn
    return {
        "documents": n,
        "good": tp + fn,
        "bad": tn + fp,
        "accuracy": (tp + tn) / n if n else None,
        "precision_good": tp / (tp + fp) if tp + fp else None,
        "recall_good": tp / (tp + fn) if tp + fn else None,
        "threshold": threshold,
    }


def train_quality(
    spark: SparkSession, good: list[str], bad: list[str], output: str | Path, cfg: Config
) -> dict:
    """Train, save the artefact at `output`, return the training report."""
    t0 = time.perf_counter()
    conf, t = cfg.quality, cfg.quality.train
    docs = (
        read_texts(spark, good)
        .withColumn("label", F.lit(1.0))
        .unionByName(read_texts(spark, bad).withColumn("label", F.lit(0.0)))
    )
    train, held = _split(_tokenised(docs), t.heldout_fraction, t.seed)
    train = train.cache()
    counts = {r["label"]: int(r["count"]) for r in train.groupBy("label").count().collect()}
    if not counts.get(1.0) or not counts.get(0.0):
        raise TrainingInputError(
            f"training needs documents of both classes: good {counts.get(1.0, 0)}, "
            f"bad {counts.get(0.0, 0)} after the held-out split"
        )
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "trained_at": datetime.now(UTC).isoformat(),
        "good_inputs": good,
        "bad_inputs": bad,
        "tokenizer": TOKENIZER_VERSION,
        "heldout_fraction": t.heldout_fraction,
    }
    if conf.backend == "naive_bayes":
        model = _train_naive_bayes(train, cfg)
        model.meta.update(meta)
        model.save(out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            lines = Path(tmp) / "train.txt"
            _write_fasttext_lines(train, lines)
            ft = train_fasttext(lines, dict(t.fasttext))
        ft.save_model(str(out))
        meta.update({"docs_good": counts[1.0], "docs_bad": counts[0.0],
                     "params": dict(t.fasttext)})  # fmt: skip
        meta_path(out).write_text(json.dumps(meta, indent=2) + "\n")
    train.unpersist()
    seconds_train = time.perf_counter() - t0
    heldout = _evaluate(load_quality_model(out, conf), held, conf.threshold)
    report = {
        "backend": conf.backend,
        "model": str(out),
        "train_documents": {"good": counts[1.0], "bad": counts[0.0]},
        "heldout": heldout,
        "seconds_train": round(seconds_train, 3),
        "seconds_total": round(time.perf_counter() - t0, 3),
    }
    Path(str(out) + ".report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report
