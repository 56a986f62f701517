"""The rule engine: run the configured rule sets over one document, name every rule it breaks.

A rule set computes statistics (kept as columns, so a report can show their distributions)
and a list of checks compares them with the thresholds in conf. Every configured set runs on
every document, so a rejected document lists all the rules it breaks, not only the first.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

from curate_pipeline.config import RulesConf
from curate_pipeline.document.text.c4 import c4_filter
from curate_pipeline.document.text.fineweb import fineweb_stats
from curate_pipeline.document.text.gopher import quality_stats, repetition_stats
from curate_pipeline.document.text.spacy_words import spacy_sentences, spacy_words
from curate_pipeline.document.text.words import split_words

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Check:
    """A rule: the document breaks it when `stat <op> limit` (e.g. n_words < 50)."""

    name: str
    stat: str
    op: str
    limit: float

    def broken_by(self, value: float | None) -> bool:
        return value is not None and _OPS[self.op](value, self.limit)


@dataclass
class RuleOutcome:
    text: str  # the text after any rule set that edits it (C4 drops lines)
    stats: dict[str, dict[str, float | None]]  # rule set -> statistic -> value
    failed: list[str] = field(default_factory=list)  # "set.rule", in evaluation order
    details: list[str] = field(default_factory=list)


def stat_names(rules: RulesConf) -> dict[str, list[str]]:
    """The statistics each rule set records: the columns of its stats struct."""
    rep = rules.gopher_repetition
    return {
        "gopher_repetition": [
            "empty",
            "dup_line_frac",
            "dup_para_frac",
            "dup_line_char_frac",
            "dup_para_char_frac",
        ]
        + [f"top_{n}_gram_char_frac" for n in sorted(rep.max_top_ngram_char_frac)]
        + [f"dup_{n}_gram_char_frac" for n in sorted(rep.max_dup_ngram_char_frac)],
        "gopher_quality": [
            "n_words",
            "mean_word_length",
            "hash_ratio",
            "ellipsis_ratio",
            "bullet_lines_ratio",
            "ellipsis_lines_ratio",
            "alpha_words_ratio",
            "stop_words",
        ],
        "c4": ["lines", "lines_kept", "sentences", "lorem_ipsum", "curly_bracket"],
        "fineweb": [
            "empty",
            "line_punct_ratio",
            "short_line_ratio",
            "char_dup_ratio",
            "newline_ratio",
        ],  # fmt: skip
    }


def checks(rules: RulesConf) -> dict[str, list[Check]]:
    """Each rule set's checks, from the thresholds in conf; a null threshold drops the rule."""
    q, r, c, f = rules.gopher_quality, rules.gopher_repetition, rules.c4, rules.fineweb
    spec: dict[str, list[tuple[str, str, str, float | None]]] = {
        "gopher_quality": [
            ("short_doc", "n_words", "<", q.min_doc_words),
            ("long_doc", "n_words", ">", q.max_doc_words),
            ("short_words", "mean_word_length", "<", q.min_avg_word_length),
            ("long_words", "mean_word_length", ">", q.max_avg_word_length),
            ("hash_ratio", "hash_ratio", ">", q.max_symbol_word_ratio),
            ("ellipsis_ratio", "ellipsis_ratio", ">", q.max_symbol_word_ratio),
            ("bullet_lines", "bullet_lines_ratio", ">", q.max_bullet_lines_ratio),
            ("ellipsis_lines", "ellipsis_lines_ratio", ">", q.max_ellipsis_lines_ratio),
            ("alpha_words", "alpha_words_ratio", "<", q.min_alpha_words_ratio),
            ("stop_words", "stop_words", "<", q.min_stop_words),
        ],
        "gopher_repetition": [
            ("empty", "empty", ">", 0),
            ("dup_line_frac", "dup_line_frac", ">", r.max_dup_line_frac),
            ("dup_para_frac", "dup_para_frac", ">", r.max_dup_para_frac),
            ("dup_line_char_frac", "dup_line_char_frac", ">", r.max_dup_line_char_frac),
            ("dup_para_char_frac", "dup_para_char_frac", ">", r.max_dup_para_char_frac),
        ]
        + [
            (f"top_{n}_gram", f"top_{n}_gram_char_frac", ">", v)
            for n, v in sorted(r.max_top_ngram_char_frac.items())
        ]
        + [
            (f"dup_{n}_gram", f"dup_{n}_gram_char_frac", ">", v)
            for n, v in sorted(r.max_dup_ngram_char_frac.items())
        ],
        "c4": [
            ("lorem_ipsum", "lorem_ipsum", ">", 0 if c.filter_lorem_ipsum else None),
            ("curly_bracket", "curly_bracket", ">", 0 if c.filter_curly_bracket else None),
            ("too_few_sentences", "sentences", "<", c.min_num_sentences),
        ],
        "fineweb": [  # datatrove's comparisons
            ("empty", "empty", ">", 0),
            ("line_punct", "line_punct_ratio", "<", f.line_punct_thr),
            ("short_lines", "short_line_ratio", ">", f.short_line_thr),
            ("char_dup", "char_dup_ratio", ">", f.char_duplicates_ratio),
            ("list_ratio", "newline_ratio", ">", f.new_line_ratio),
        ],
    }
    return {
        name: [Check(n, s, op, lim) for n, s, op, lim in rows if lim is not None]
        for name, rows in spec.items()
    }


def _stats(name: str, text: str, words: list[str], lang: str | None, rules: RulesConf):
    """(text, stats) of one rule set; only C4 changes the text."""
    if name == "gopher_quality":
        q = rules.gopher_quality
        stop = q.stop_words.get(lang or "")
        case = q.stop_words_case_sensitive
        stop_set = frozenset(w if case else w.lower() for w in stop) if stop else None
        return text, quality_stats(text, words, stop_set, tuple(q.bullets), case,
                                   q.line_ratios_over == "all")  # fmt: skip
    if name == "gopher_repetition":
        r = rules.gopher_repetition
        return text, repetition_stats(
            text, words, sorted(r.max_top_ngram_char_frac), sorted(r.max_dup_ngram_char_frac),
            r.top_ngram_min_count,
        )  # fmt: skip
    if name == "c4":
        sentences = spacy_sentences if rules.word_splitter == "spacy_en" else None
        return c4_filter(text, rules.c4, sentences)
    if name == "fineweb":
        f = rules.fineweb
        return text, fineweb_stats(text, words, f.short_line_length, f.strip_line_ends)
    raise ValueError(f"unknown rule set {name!r}")


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def evaluate(
    text: str,
    lang: str | None,
    rules: RulesConf,
    all_checks: dict[str, list[Check]],
    split: Callable[[str], list[str]] | None = None,
) -> RuleOutcome:
    """Run every configured rule set on `text` (in a language the rules apply to). `split`:
    the words of a text, where the caller chose them per language (rules.word_splitter
    per_language); else the section's word splitter."""
    out = RuleOutcome(text=text, stats={})
    if split is None:
        if rules.word_splitter == "per_language":
            raise ValueError("rules.word_splitter per_language: pass the document's splitter")
        split = spacy_words if rules.word_splitter == "spacy_en" else split_words
    words = split(text)
    for name in rules.rule_sets:
        new_text, stats = _stats(name, out.text, words, lang, rules)
        if new_text is not out.text:
            out.text = new_text
            words = split(new_text)
        out.stats[name] = stats
        for chk in all_checks[name]:
            value = stats.get(chk.stat)
            if chk.broken_by(value):
                out.failed.append(f"{name}.{chk.name}")
                out.details.append(
                    f"{name}.{chk.name} ({chk.stat} {_fmt(value)} {chk.op} {_fmt(chk.limit)})"
                )
    return out
