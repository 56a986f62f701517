"""Stage `quality_buckets`: the classifiers' scores of the kept corpus cut into percentile
buckets, combined per document into `quality_bucket` (curate_pipeline/document/quality/buckets.py;
Nemotron-CC's ensemble). A corpus stage: the cuts need every kept document's scores, after
dedup, and move only the narrow rows with their score columns.

The cuts are Spark's approximate quantiles (`approxQuantile`, quality.ensemble.relative_error)
of each score column, stored with the run in DIR/quality_percentiles.json with what made them
(classifiers, models' digests, buckets). A later run into the same output (a resume, added
inputs) reuses them while the classifiers are the same, so a document's bucket does not move
because the corpus grew; quality.ensemble.reuse: false computes them again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from curate_pipeline.config import Config
from curate_pipeline.document.quality.buckets import percentiles
from curate_pipeline.engine.models import digest
from curate_pipeline.location import Location
from curate_pipeline.stages.quality import classifier_path
from curate_pipeline.stages.step import Stage

log = logging.getLogger(__name__)

PERCENTILES_FILE = "quality_percentiles.json"
BUCKET = pa.field("quality_bucket", pa.int32())


def identity(cfg: Config) -> list[dict]:
    """What the cuts depend on: each classifier's scoring and its model's digest."""
    return [
        {"name": c.name, "kind": c.kind, "preprocessing": c.preprocessing, "label": c.label,
         "output": c.output, "max_length": c.max_length, "score_column": c.score_column,
         "languages": sorted(c.languages), "model": digest(classifier_path(cfg, c))}
        for c in cfg.quality.registry()
    ]  # fmt: skip


def corpus_cuts(docs: DataFrame, cfg: Config, out: Location) -> dict:
    """The stored cuts when they fit this run, else computed over `docs` and stored."""
    e = cfg.quality.ensemble
    ident = identity(cfg)
    stored = out / PERCENTILES_FILE
    if e.reuse and stored.is_file():
        prev = json.loads(stored.read_text())
        if prev.get("classifiers") == ident and prev.get("buckets") == e.buckets:
            log.info("quality buckets: reusing the cuts in %s (computed %s over %d documents)",
                     stored, prev.get("computed"), prev.get("documents", 0))  # fmt: skip
            return prev
        log.info("quality buckets: %s was made by other classifiers; computing again", stored)
    cols = [c["score_column"] for c in ident]
    probs = percentiles(e.buckets)
    quantiles = docs.approxQuantile(cols, probs, e.relative_error)  # one job, every column
    counts = docs.agg(F.count(F.lit(1)).alias("_n"),
                      *[F.count(c).alias(c) for c in cols]).first()  # fmt: skip
    made = {
        "classifiers": ident,
        "buckets": e.buckets,
        "percentiles": [round(p * 100, 6) for p in probs],
        "relative_error": e.relative_error,
        "documents": int(counts["_n"]),
        "scored": {c: int(counts[c]) for c in cols},  # non-null scores: what the cuts are of
        "computed": datetime.now(UTC).isoformat(timespec="seconds"),
        "cuts": {c["name"]: q for c, q in zip(ident, quantiles, strict=True)},
    }
    stored.write_text(json.dumps(made, indent=2) + "\n")
    return made


def assign(batch: pa.RecordBatch, columns: list[str], cuts: list[list[float]],
           rule: str) -> pa.Array:  # fmt: skip
    """quality_bucket of each row: numpy.digitize per column, then the ensemble rule over the
    columns that scored the row (null where none did)."""
    per = []
    for col, c in zip(columns, cuts, strict=True):
        vals = batch.column(col).to_numpy(zero_copy_only=False).astype(np.float64)
        b = np.digitize(vals, np.asarray(c, dtype=np.float64)).astype(np.float64)
        b[np.isnan(vals)] = np.nan
        per.append(b)
    stack = np.vstack(per) if per else np.full((1, batch.num_rows), np.nan)
    none = np.isnan(stack).all(axis=0)
    filled = np.where(np.isnan(stack), -np.inf if rule == "max" else 0.0, stack)
    if rule == "max":
        got = filled.max(axis=0)
    else:
        n = (~np.isnan(stack)).sum(axis=0)
        got = np.floor(filled.sum(axis=0) / np.maximum(n, 1) + 0.5)
    got[none] = 0
    return pa.array(got.astype(np.int32), mask=none, type=pa.int32())


def quality_buckets(spark: SparkSession, docs: DataFrame, cfg: Config,  # noqa: ARG001
                    out: Location) -> DataFrame:  # fmt: skip
    made = corpus_cuts(docs, cfg, out)
    cols = [c["score_column"] for c in made["classifiers"]]
    cuts = [made["cuts"][c["name"]] for c in made["classifiers"]]
    rule = cfg.quality.ensemble.rule
    from pyspark.sql.types import IntegerType, StructField, StructType

    names = [*docs.columns, BUCKET.name]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield pa.RecordBatch.from_arrays([*b.columns, assign(b, cols, cuts, rule)],
                                             names=names)  # fmt: skip

    return docs.mapInArrow(
        run, StructType([*docs.schema.fields, StructField(BUCKET.name, IntegerType())])
    )


def score_columns(cfg: Config) -> list[str]:
    return [c.score_column for c in cfg.quality.registry()]


STAGE = Stage(
    "quality_buckets",
    corpus=quality_buckets,
    sections=("quality",),
    enabled=lambda c: c.quality.enabled and c.quality.ensemble.enabled,
    reads=score_columns,
    stored=True,
    passed=None,  # drops nothing: it adds each kept document's bucket
)
