"""Stage `rules`: the configured rule sets (Gopher repetition and quality; C4 and FineWeb on
request) on every document in a language they apply to.

Each set's statistics are a struct column (`<set>_stats`), null where the set did not run;
`failed_rules` lists every rule broken. The ledger reason is the first broken rule
(`rules:<set>.<rule>`), the detail lists them all with the values that broke them. With
per-language recipes (`recipes.configs`), a document with a recipe (`lang_key`, set by
langid) is checked with its language's thresholds, and the detail starts with the key.
"""

from __future__ import annotations

from functools import partial

import pyarrow as pa
from pyspark.sql import SparkSession

from curate_pipeline.config import Config
from curate_pipeline.document.text.lang_words import assignment, split_words_in
from curate_pipeline.document.text.rules import checks, evaluate, stat_names
from curate_pipeline.stages.recipe_files import digest, load_recipes, splitter_table
from curate_pipeline.stages.step import DocumentStep, Drop, Stage, Verdict, each


def rule_fields(cfg: Config) -> list[pa.Field]:
    names = stat_names(cfg.rules)
    return [pa.field("failed_rules", pa.list_(pa.string()))] + [
        pa.field(f"{s}_stats", pa.struct([pa.field(n, pa.float64()) for n in names[s]]))
        for s in cfg.rules.rule_sets
    ]


def rules_step(spark: SparkSession, cfg: Config) -> DocumentStep:  # noqa: ARG001 (no model)
    rules = cfg.rules
    all_checks = checks(rules)
    recipes = load_recipes(cfg)
    table = splitter_table(cfg)

    def check(doc: dict) -> Verdict:
        doc["failed_rules"] = []
        lang, key = doc.get("lang"), doc.get("lang_key")
        if recipes is not None and key is not None:
            conf, conf_checks = recipes.rules(key)
        elif rules.applies_to(lang):
            conf, conf_checks = rules, all_checks
        else:
            return None
        split = partial(split_words_in, splitter=assignment(table, key, lang)) if table else None
        res = evaluate(doc["text"] or "", key or lang, conf, conf_checks, split)
        doc["text"] = res.text
        for name, stats in res.stats.items():
            doc[f"{name}_stats"] = stats
        doc["failed_rules"] = res.failed
        if not res.failed:
            return None
        detail = "; ".join(res.details)
        return Drop(res.failed[0], f"{key}: {detail}" if key else detail)

    return DocumentStep(rule_fields(cfg), each(check))


STAGE = Stage(
    "rules", step=rules_step,
    settings=lambda cfg: [cfg.section_hash("rules", "recipes"), digest(cfg)],
)  # fmt: skip
