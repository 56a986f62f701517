"""Stage `rules`: the configured rule sets (Gopher repetition and quality; C4 and FineWeb on
request) on every document in a language they apply to.

Each set's statistics are a struct column (`<set>_stats`), null where the set did not run;
`failed_rules` lists every rule broken. The ledger reason is the first broken rule
(`rules:<set>.<rule>`), the detail lists them all with the values that broke them.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pipeline.config import Config
from pipeline.document.text.rules import checks, evaluate, stat_names
from pipeline.stages.arrow_batches import RowStep, apply_step


def rule_fields(cfg: Config) -> list[pa.Field]:
    names = stat_names(cfg.rules)
    return [pa.field("failed_rules", pa.list_(pa.string()))] + [
        pa.field(f"{s}_stats", pa.struct([pa.field(n, pa.float64()) for n in names[s]]))
        for s in cfg.rules.rule_sets
    ]


def rules_step(spark: SparkSession, cfg: Config) -> RowStep:  # noqa: ARG001 (no model)
    rules = cfg.rules
    all_checks = checks(rules)

    def check(rows: list[dict]) -> list[dict]:
        for row in rows:
            row["failed_rules"] = []
            if not rules.applies_to(row.get("lang")):
                continue
            res = evaluate(row["text"] or "", row.get("lang"), rules, all_checks)
            row["text"] = res.text
            for name, stats in res.stats.items():
                row[f"{name}_stats"] = stats
            row["failed_rules"] = res.failed
            if res.failed:
                row["reject_stage"] = "rules"
                row["reject_reason"] = res.failed[0]
                row["reject_detail"] = "; ".join(res.details)[:1000]
        return rows

    return check


def apply_rules(spark: SparkSession, docs: DataFrame, cfg: Config) -> DataFrame:
    return apply_step(docs, rules_step(spark, cfg), rule_fields(cfg))
