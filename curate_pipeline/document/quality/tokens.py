"""The one tokenisation the quality classifier trains and scores with, so words always match."""

from __future__ import annotations

import regex

from curate_pipeline.document.text.words import WORD_PATTERN

# Word tokens as curate_pipeline.document.text.words splits them (punctuation dropped), lowercased.
_WORD = regex.compile(WORD_PATTERN)

# Stored in every model: a change must retrain. v2: combining marks stay in their words.
TOKENIZER_VERSION = "words-lower-v2"


def classifier_tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())
