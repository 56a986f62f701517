"""Per-language recipes: one language's settings (FineWeb-2's format) over the rules section.

FineWeb-2 (`fineweb-2-pipeline.py`, huggingface/fineweb-2 @d0defb2) filters each language with
datatrove's filters fed that language's config: a minimum `language_score`, then
GopherRepetitionFilter(dup_line_frac, top_n_grams, dup_n_grams), FineWebQualityFilter(
line_punct_thr, new_line_ratio) and GopherQualityFilter(min/max_avg_word_length,
max_non_alpha_words_ratio, stop words, at least 2). Its fixed choices for every language
(paragraph and line-character repetition off, short lines off, duplicated-line characters
0.1) are settings of the `rules` section (conf/fineweb2.yaml); the fields below replace the
section's per language. datatrove reads a zero threshold as "rule off" (`if self.x and ...`),
so a zero becomes null here where its test is guarded so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from curate_pipeline.config import RulesConf
from curate_pipeline.document.lang_recipes import RecipeKeys
from curate_pipeline.document.text.rules import Check, checks

FIELDS = ("dup_line_frac", "dup_n_grams", "top_n_grams", "line_punct_thr", "new_line_ratio",
          "min_avg_word_length", "max_avg_word_length", "max_non_alpha_words_ratio",
          "stopwords", "language_score")  # fmt: skip


class RecipeError(ValueError):
    """A recipe file that cannot be used; the message names the file and the field."""


def _off(value: float) -> float | None:
    return value or None


def _ngrams(pairs: list, where: str) -> dict[int, float]:
    try:
        return {int(n): float(v) for n, v in pairs}
    except (TypeError, ValueError):
        msg = f"{where}: expected a list of [n, fraction] pairs, got {pairs!r}"
        raise RecipeError(msg) from None


def recipe_rules(base: RulesConf, key: str, cfg: dict[str, Any]) -> RulesConf:
    """The rules section with `key`'s settings in place of the section's own."""
    missing = [f for f in FIELDS if f not in cfg]
    if missing:
        raise RecipeError(f"recipe {key}: missing {', '.join(missing)} (FineWeb-2's fields)")
    rep = base.gopher_repetition.model_copy(update={
        "max_dup_line_frac": _off(cfg["dup_line_frac"]),
        "max_top_ngram_char_frac": _ngrams(cfg["top_n_grams"], f"recipe {key} top_n_grams"),
        "max_dup_ngram_char_frac": _ngrams(cfg["dup_n_grams"], f"recipe {key} dup_n_grams"),
    })  # fmt: skip
    for name, field_name in (("top_n_grams", "max_top_ngram_char_frac"),
                             ("dup_n_grams", "max_dup_ngram_char_frac")):  # fmt: skip
        theirs = getattr(rep, field_name)
        ours = getattr(base.gopher_repetition, field_name)
        if sorted(theirs) != sorted(ours):  # the stats columns are the section's n
            raise RecipeError(f"recipe {key} {name}: n = {sorted(theirs)}, the rules section's "
                              f"are {sorted(ours)}; set them alike in the config")  # fmt: skip
    fw = base.fineweb.model_copy(update={
        "line_punct_thr": float(cfg["line_punct_thr"]),
        "new_line_ratio": float(cfg["new_line_ratio"]),
    })  # fmt: skip
    q = base.gopher_quality.model_copy(update={
        "min_avg_word_length": _off(cfg["min_avg_word_length"]),
        "max_avg_word_length": _off(cfg["max_avg_word_length"]),
        "min_alpha_words_ratio": _off(cfg["max_non_alpha_words_ratio"]),  # datatrove's name
        "stop_words": {key: [str(w) for w in cfg["stopwords"] or []]},
    })  # fmt: skip
    return base.model_copy(update={"gopher_repetition": rep, "fineweb": fw, "gopher_quality": q})


@dataclass
class Recipes:
    """A set of per-language recipes (key -> config) over a rules section."""

    configs: dict[str, dict[str, Any]]
    base: RulesConf
    keys: RecipeKeys = field(init=False)

    def __post_init__(self) -> None:
        self.keys = RecipeKeys(set(self.configs))
        self._rules = lru_cache(maxsize=None)(self._rules_of)

    def __getstate__(self) -> dict:  # shipped to executors: the caches stay behind
        return {"configs": self.configs, "base": self.base}

    def __setstate__(self, state: dict) -> None:
        self.configs, self.base = state["configs"], state["base"]
        self.__post_init__()

    def key_for(self, label: str | None, text: str) -> str | None:
        return self.keys.key_for(label, text) if label else None

    def language_score(self, key: str | None) -> float | None:
        return float(self.configs[key]["language_score"]) if key in self.configs else None

    def rules(self, key: str) -> tuple[RulesConf, dict[str, list[Check]]]:
        """The rules of `key`'s documents and their checks (built once per key)."""
        return self._rules(key)

    def _rules_of(self, key: str) -> tuple[RulesConf, dict[str, list[Check]]]:
        conf = recipe_rules(self.base, key, self.configs[key])
        return conf, checks(conf)
