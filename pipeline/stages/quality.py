"""Stage `quality`: score each document with the quality classifier; below the threshold it is
`quality:below_threshold`. Documents in languages the model does not judge pass, unscored."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pipeline.config import Config
from pipeline.document.quality.fasttext_backend import meta_path
from pipeline.document.quality.model import load_quality_model
from pipeline.engine.models import load_shipped, resolve, ship
from pipeline.stages.arrow_batches import RowStep, apply_step

QUALITY_FIELDS = [pa.field("quality_score", pa.float64())]


def quality_model_path(cfg: Config) -> Path:
    return resolve(
        cfg.quality.model,
        "quality classifier",
        "run `make models` (trains the default toy model), train your own with "
        "`curate train-quality`, or set quality.enabled: false",
    )


def quality_step(spark: SparkSession, cfg: Config) -> RowStep:
    conf = cfg.quality
    path = quality_model_path(cfg)
    name = ship(spark, path)
    if conf.backend == "fasttext" and meta_path(path).is_file():
        ship(spark, meta_path(path))

    def score(rows: list[dict]) -> list[dict]:
        model = load_shipped(
            name, lambda p: load_quality_model(p, conf), f"{conf.backend}:{conf.use_prior}"
        )
        judged = [r for r in rows if conf.applies_to(r.get("lang"))]
        for row in rows:
            row["quality_score"] = None
        for row, s in zip(judged, model.score_texts([r["text"] or "" for r in judged]),
                          strict=True):  # fmt: skip
            row["quality_score"] = s
            if s < conf.threshold:
                row["reject_stage"] = "quality"
                row["reject_reason"] = "below_threshold"
                row["reject_detail"] = f"{s:.3f} < {conf.threshold:g}"
        return rows

    return score


def score_quality(spark: SparkSession, docs: DataFrame, cfg: Config) -> DataFrame:
    return apply_step(docs, quality_step(spark, cfg), QUALITY_FIELDS)
