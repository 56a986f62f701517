"""Training the fastText backend: a supervised classifier on `__label__hq` / `__label__cc`
lines, as DCLM trains its quality filter. It scores
(curate_pipeline/document/quality/classifiers.py)
as the log-odds of `hq`, so a threshold of 0 means the same thing (even odds) for both
backends."""

from __future__ import annotations

import json
from pathlib import Path

from curate_pipeline.document.quality.tokens import TOKENIZER_VERSION, classifier_tokens

GOOD, BAD = "__label__hq", "__label__cc"


def training_line(label: str, text: str) -> str:
    return f"{label} {' '.join(classifier_tokens(text))}"


def meta_path(model_path: str | Path) -> Path:
    return Path(str(model_path) + ".json")


def check_tokenizer(path: str | Path) -> None:
    """A model `curate train-quality` wrote (its metadata beside it) was trained on this
    version of our words; another version must be retrained."""
    mp = meta_path(path)
    if mp.is_file() and json.loads(mp.read_text()).get("tokenizer") != TOKENIZER_VERSION:
        raise ValueError(f"{path}: trained with another tokenizer; retrain it")


def train_fasttext(lines_file: str | Path, params: dict):
    """fastText train_supervised on a file of labelled lines (single process, as DCLM)."""
    import fasttext

    return fasttext.train_supervised(input=str(lines_file), **params)
