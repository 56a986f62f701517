"""The text a classifier is given, as its authors gave it. A model scores what it was trained
on: the same page joined, cased or cut another way is another input.

- dclm: DCLM's `classify_fasttext_hq_prob` (baselines/mappers/enrichers/
  quality_prediction_enrichers_calc_fasttext.py): `" ".join(text.strip().splitlines())`.
- raw: the text as is; FineWeb-Edu's published inference passes the text straight to the
  tokenizer (`tokenizer(text, return_tensors="pt", padding="longest", truncation=True)`).
- words: the lowercased words of curate_pipeline/document/quality/tokens.py, as
  `curate train-quality` trains.
"""

from __future__ import annotations

from collections.abc import Callable

from curate_pipeline.document.quality.tokens import classifier_tokens


def dclm(text: str) -> str:
    return " ".join(text.strip().splitlines())


def raw(text: str) -> str:
    return text


def words(text: str) -> str:
    return " ".join(classifier_tokens(text))


PREPROCESSING: dict[str, Callable[[str], str]] = {"dclm": dclm, "raw": raw, "words": words}
