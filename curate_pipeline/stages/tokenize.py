"""Stage `tokenize`: each kept document's source (from the rules in `sources`) and its token
ids and count (the tokenizer in `tokenizer`), so the mixture can weigh sources in tokens."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from curate_pipeline.config import Config
from curate_pipeline.document.sources import SourceMatcher
from curate_pipeline.document.tokenizer import Tokenizer
from curate_pipeline.engine.models import load_shipped, resolve, ship
from curate_pipeline.stages.step import DocumentStep, Stage, Verdict

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


def tokenizer_file(cfg: Config) -> Path | None:
    """The Hugging Face tokenizer.json the config names (a URI is fetched to the driver), or
    None for a tiktoken encoding (which ships inside its package)."""
    name = cfg.tokenizer.name
    if not name.endswith(".json"):
        return None
    return resolve(name, "tokenizer", "give a Hugging Face tokenizer.json (tokenizer.name)")


def driver_tokenizer(cfg: Config) -> Tokenizer:
    """The run's tokenizer in this (the driver's) process: the mixture needs its EOT id."""
    path = tokenizer_file(cfg)
    return get_tokenizer(str(path) if path else cfg.tokenizer.name, cfg.tokenizer.eot_token)


def tokens_step(spark: SparkSession, cfg: Config) -> DocumentStep:
    tok_conf, src_conf = cfg.tokenizer, cfg.sources
    path = tokenizer_file(cfg)
    shipped = ship(spark, path) if path else None  # a tokenizer.json travels like a model
    eot = tok_conf.eot_token

    def load() -> Tokenizer:
        if shipped is None:
            return get_tokenizer(tok_conf.name, eot)
        return load_shipped(shipped, lambda p: Tokenizer(p, eot), variant=str(eot))

    def encode(docs: list[dict]) -> list[Verdict]:
        tok = load()
        matcher = SourceMatcher(src_conf.rules, src_conf.default)
        ids = tok.encode_batch([d["text"] or "" for d in docs])
        for doc, t in zip(docs, ids, strict=True):
            doc["source"] = matcher.source(doc.get("url"), doc.get("warc_file"))
            doc["tokens"] = t
            doc["n_tokens"] = len(t)
        return [None] * len(docs)  # sets fields, never drops

    return DocumentStep(TOKEN_FIELDS, encode)


# final: after the last drop (dedup), so no document a later stage drops is tokenized
STAGE = Stage("tokenize", step=tokens_step, sections=("sources", "tokenizer"), passed="tokenized",
              final=True)  # fmt: skip
