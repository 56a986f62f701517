"""The one tokenisation the quality classifier trains and scores with, so words always match."""

from __future__ import annotations

import re

from pipeline.text.words import WORD_PATTERN

# Word tokens as pipeline.text.words splits them (punctuation dropped), lowercased.
_WORD = re.compile(WORD_PATTERN)

TOKENIZER_VERSION = "words-lower-v1"  # stored in every model: a change must retrain


def classifier_tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())
