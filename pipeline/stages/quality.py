"""Stage `quality`: score each document with the quality classifier; below the threshold it is
`quality:below_threshold`. Documents in languages the model does not judge pass, unscored."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from pipeline.config import Config
from pipeline.document.quality.fasttext_backend import meta_path
from pipeline.document.quality.model import load_quality_model
from pipeline.engine.models import load_shipped, resolve, ship
from pipeline.stages.step import DocumentStep, Drop, Stage, Verdict

QUALITY_FIELDS = [pa.field("quality_score", pa.float64())]


def quality_model_path(cfg: Config) -> Path:
    return resolve(
        cfg.quality.model,
        "quality classifier",
        "run `make models` (trains the default toy model), train your own with "
        "`curate train-quality`, or set quality.enabled: false",
    )


def quality_step(spark: SparkSession, cfg: Config) -> DocumentStep:
    conf = cfg.quality
    path = quality_model_path(cfg)
    name = ship(spark, path)
    if conf.backend == "fasttext" and meta_path(path).is_file():
        ship(spark, meta_path(path))

    def score(docs: list[dict]) -> list[Verdict]:
        model = load_shipped(
            name, lambda p: load_quality_model(p, conf), f"{conf.backend}:{conf.use_prior}"
        )
        judged = [d for d in docs if conf.applies_to(d.get("lang"))]
        for doc in docs:
            doc["quality_score"] = None
        for doc, s in zip(judged, model.score_texts([d["text"] or "" for d in judged]),
                          strict=True):  # fmt: skip
            doc["quality_score"] = s
        return [
            Drop("below_threshold", f"{s:.3f} < {conf.threshold:g}")
            if (s := d["quality_score"]) is not None and s < conf.threshold
            else None
            for d in docs
        ]

    return DocumentStep(QUALITY_FIELDS, score)


STAGE = Stage("quality", step=quality_step, model=quality_model_path,
              enabled=lambda c: c.quality.enabled)  # fmt: skip
