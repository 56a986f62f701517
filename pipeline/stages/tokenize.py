"""Stage `tokenize`: each kept document's source (from the rules in `sources`) and its token
ids and count (the tokenizer in `tokenizer`), so the mixture can weigh sources in tokens."""

from __future__ import annotations

import threading

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pipeline.config import Config
from pipeline.document.sources import SourceMatcher
from pipeline.document.tokenizer import Tokenizer
from pipeline.stages.arrow_batches import RowStep, apply_step

TOKEN_FIELDS = [
    pa.field("source", pa.string()),
    pa.field("tokens", pa.list_(pa.int32())),
    pa.field("n_tokens", pa.int64()),
]
_tokenizers: dict[tuple[str, int | None], Tokenizer] = {}


_lock = threading.Lock()


def get_tokenizer(name: str, eot: int | None) -> Tokenizer:
    """One tokenizer per process (a Python worker, or the driver for the mixture)."""
    key = (name, eot)
    with _lock:  # the driver loads it in a thread while Spark works
        if key not in _tokenizers:
            _tokenizers[key] = Tokenizer(name, eot)
        return _tokenizers[key]


def tokens_step(spark: SparkSession, cfg: Config) -> RowStep:  # noqa: ARG001 (no shipping)
    tok_conf, src_conf = cfg.tokenizer, cfg.sources

    def encode(rows: list[dict]) -> list[dict]:
        tok = get_tokenizer(tok_conf.name, tok_conf.eot_token)
        matcher = SourceMatcher(src_conf.rules, src_conf.default)
        ids = tok.encode_batch([r["text"] or "" for r in rows])
        for row, t in zip(rows, ids, strict=True):
            row["source"] = matcher.source(row.get("url"), row.get("warc_file"))
            row["tokens"] = t
            row["n_tokens"] = len(t)
        return rows

    return encode


def tokenize(spark: SparkSession, docs: DataFrame, cfg: Config) -> DataFrame:
    return apply_step(docs, tokens_step(spark, cfg), TOKEN_FIELDS)
