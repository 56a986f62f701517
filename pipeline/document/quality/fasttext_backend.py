"""The fastText backend: a supervised classifier on `__label__hq` / `__label__cc` lines, as
DCLM trains its quality filter. Its score is the log-odds of `hq`, so a threshold of 0 means
the same thing (even odds) for both backends."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from pipeline.document.quality.tokens import TOKENIZER_VERSION, classifier_tokens

GOOD, BAD = "__label__hq", "__label__cc"
_EPS = 1e-6


def training_line(label: str, text: str) -> str:
    return f"{label} {' '.join(classifier_tokens(text))}"


def meta_path(model_path: str | Path) -> Path:
    return Path(str(model_path) + ".json")


class FastTextQualityModel:
    def __init__(self, model, meta: dict | None = None):
        self.model = model
        self.meta = meta or {}

    @classmethod
    def load(cls, path: str | Path) -> FastTextQualityModel:
        import fasttext

        meta = {}
        mp = meta_path(path)
        if mp.is_file():
            meta = json.loads(mp.read_text())
            if meta.get("tokenizer") != TOKENIZER_VERSION:
                raise ValueError(f"{path}: trained with another tokenizer; retrain it")
        return cls(fasttext.load_model(str(path)), meta)

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        lines = [" ".join(classifier_tokens(t)) for t in texts]
        labels, probs = self.model.predict(lines, k=2)
        out = []
        for labs, ps in zip(labels, probs, strict=True):
            p = dict(zip(labs, (float(x) for x in ps), strict=True)).get(GOOD, 0.0)
            p = min(max(p, _EPS), 1 - _EPS)
            out.append(math.log(p / (1 - p)))
        return out


def train_fasttext(lines_file: str | Path, params: dict):
    """fastText train_supervised on a file of labelled lines (single process, as DCLM)."""
    import fasttext

    return fasttext.train_supervised(input=str(lines_file), **params)
