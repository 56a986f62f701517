"""Stage `rules`: the configured rule sets (Gopher repetition and quality; C4 and FineWeb on
request) on every document in a language they apply to.

Each set's statistics are a struct column (`<set>_stats`), null where the set did not run;
`failed_rules` lists every rule broken. The ledger reason is the first broken rule
(`rules:<set>.<rule>`), the detail lists them all with the values that broke them.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession

from pipeline.config import Config
from pipeline.document.text.rules import checks, evaluate, stat_names
from pipeline.stages.step import DocumentStep, Drop, Stage, Verdict, each


def rule_fields(cfg: Config) -> list[pa.Field]:
    names = stat_names(cfg.rules)
    return [pa.field("failed_rules", pa.list_(pa.string()))] + [
        pa.field(f"{s}_stats", pa.struct([pa.field(n, pa.float64()) for n in names[s]]))
        for s in cfg.rules.rule_sets
    ]


def rules_step(spark: SparkSession, cfg: Config) -> DocumentStep:  # noqa: ARG001 (no model)
    rules = cfg.rules
    all_checks = checks(rules)

    def check(doc: dict) -> Verdict:
        doc["failed_rules"] = []
        if not rules.applies_to(doc.get("lang")):
            return None
        res = evaluate(doc["text"] or "", doc.get("lang"), rules, all_checks)
        doc["text"] = res.text
        for name, stats in res.stats.items():
            doc[f"{name}_stats"] = stats
        doc["failed_rules"] = res.failed
        return Drop(res.failed[0], "; ".join(res.details)) if res.failed else None

    return DocumentStep(rule_fields(cfg), each(check))


STAGE = Stage("rules", step=rules_step)
