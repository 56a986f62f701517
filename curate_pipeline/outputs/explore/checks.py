"""A document's rules and scores as a table a reader follows: for each check of the run's
config, the statistic's value, when the rule breaks, and the verdict; then the language score
and each quality classifier's score against its threshold. The verdict of a rule is the run's
own (the `failed_rules` the documents pass wrote); the values and limits are the config's, so
where a per-language recipe moved a limit the row says so rather than disagree silently."""

from __future__ import annotations

from curate_pipeline.config import Config
from curate_pipeline.document.quality.classifiers import below
from curate_pipeline.document.text.rules import checks


def _num(v: object) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def check_rows(doc: dict, config: dict) -> list[dict]:
    """[{"group", "rule", "value", "breaks_when", "verdict"}], in the config's order; rule
    sets that did not run on the document (dropped before, or another language) are left out."""
    cfg = Config.model_validate(config)
    failed = set(doc.get("failed_rules") or [])
    rows: list[dict] = []
    for set_name, set_checks in checks(cfg.rules).items():
        stats = doc.get(f"{set_name}_stats")
        if not isinstance(stats, dict):
            continue
        for c in set_checks:
            value = stats.get(c.stat)
            broke = f"{set_name}.{c.name}" in failed
            verdict = "—" if value is None else ("breaks" if broke else "passes")
            if value is not None and broke != c.broken_by(value):
                verdict += " (a language recipe's limit)"
            rows.append({"group": set_name, "rule": c.name, "value": _num(value),
                         "breaks_when": f"{c.stat} {c.op} {c.limit:g}",
                         "verdict": verdict})  # fmt: skip
    score = doc.get("lang_score")
    if score is not None:  # the verdict is the run's (per-language thresholds may apply)
        dropped = str(doc.get("verdict", "")).startswith("langid:")
        rows.append({"group": "langid", "rule": f"language {doc.get('lang') or '?'}",
                     "value": _num(float(score)),
                     "breaks_when": f"score < {cfg.langid.threshold:g}",
                     "verdict": "breaks" if dropped else "passes"})  # fmt: skip
    meta = (doc.get("kept") or {}).get("meta") or {}
    if cfg.quality.enabled:
        for c in cfg.quality.registry():
            s = doc.get(c.score_column, meta.get(c.score_column))
            if s is None:
                continue
            why = below(c, float(s))
            rows.append({"group": "quality", "rule": c.name, "value": _num(float(s)),
                         "breaks_when": "never (scores only)" if c.threshold is None
                         else f"score < {c.threshold:g}",
                         "verdict": "breaks" if why else "passes"})  # fmt: skip
    return rows
