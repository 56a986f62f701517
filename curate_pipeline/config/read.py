"""Reading archives and extracting text: the read, url_filter and extract sections."""

from __future__ import annotations

from importlib.util import find_spec
from typing import Literal

from pydantic import Field, field_validator, model_validator

from curate_pipeline.config.base import _Section


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
    # With splits_per_file 0, files under a chunk's bytes / (2 x cores) are read several to a
    # task, each task holding at least this many bytes (stages/read.py plan_tasks).
    pack_min_bytes: int = Field(4 << 20, ge=0)


class UrlFilterConf(_Section):
    # Before extraction, from the URL alone (curate_pipeline/document/url_filter.py; datatrove
    # URLFilter's
    # semantics). Lists are files: plain or gzipped, one entry a line, `#` comments.
    enabled: bool = False
    blocked_domains: list[str] = Field(default_factory=list)  # a domain blocks its subdomains
    blocked_urls: list[str] = Field(default_factory=list)  # compared normalised
    banned_words: list[str] = Field(default_factory=list)  # whole tokens of the URL
    soft_banned_words: list[str] = Field(default_factory=list)
    soft_threshold: int = Field(2, ge=1)  # datatrove's soft_word_threshold
    allowed_domains: list[str] = Field(default_factory=list)  # win over every list above


# curate_pipeline/document/extractors.py's names (rs_trafilatura: only where its wheel installs)
Extractor = Literal[
    "trafilatura", "trafilatura_fast", "trafilatura_recall", "trafilatura_precision",
    "resiliparse", "resiliparse_nocomments", "resiliparse_all", "justext", "readability",
    "rs_trafilatura",
]  # fmt: skip


class StrategyRule(_Section):
    # The first extractor's output is kept unless a later one's has at least `longer` times
    # as many words (or the kept one is empty); curate_pipeline/document/extract_strategy.py.
    runs: list[Extractor] = Field(min_length=1)
    longer: float = Field(2.0, gt=1)
    # set: the extractors after the first run only while the kept output has fewer words
    below: int | None = Field(None, gt=0)


def _strategies() -> dict[str, StrategyRule]:
    # Chosen on four public benchmarks and validated leaving each out, within a CPU budget per
    # strategy (bench/extract_chooser_train.py, bench/results/extract_chooser.json,
    # docs/extraction.md); tests/test_extract_strategy.py holds these equal to that file.
    return {
        "fast": StrategyRule(runs=["resiliparse_nocomments", "trafilatura_fast"], below=200),
        "balanced": StrategyRule(runs=["trafilatura_recall", "resiliparse_nocomments"], below=800),
        "best": StrategyRule(runs=["trafilatura_precision", "resiliparse_nocomments"]),
    }


class ExtractConf(_Section):
    # fast | balanced | best: a few extractors per page and a rule that keeps one output
    # (`strategies`; docs/extraction.md); single: `backend` alone.
    strategy: Literal["single", "fast", "balanced", "best"] = "balanced"
    strategies: dict[Literal["fast", "balanced", "best"], StrategyRule] = Field(
        default_factory=_strategies
    )

    @field_validator("strategies")
    @classmethod
    def _defaults_kept(cls, v: dict) -> dict:
        return {**_strategies(), **v}  # a file that redefines one strategy keeps the others

    @model_validator(mode="after")
    def _installed(self) -> ExtractConf:
        if self.strategy != "single" and "rs_trafilatura" in self.strategies[self.strategy].runs:
            if find_spec("rs_trafilatura") is None:
                raise ValueError(
                    f"extract.strategies.{self.strategy} runs rs_trafilatura, which is not "
                    "installed (pip install rs-trafilatura: a wheel for CPython 3.12 only; "
                    "docs/extraction.md)"
                )
        return self

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
