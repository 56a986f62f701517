"""Text normalisation for the two dedup stages.

- Exact duplicates compare `exact_key`: SHA-1 of the text lowercased with whitespace runs
  collapsed, so pages that differ only in case and layout are one page.
- Near duplicates shingle `simplify(text)`: Unicode NFKD with combining marks (diacritics)
  removed, lowercased, every digit mapped to 0, punctuation and symbols turned into spaces,
  whitespace collapsed (datatrove's simplify_text does the same four things).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACES = re.compile(r"\s+")
_NON_WORD = re.compile(r"[\W_]+")
_DIGIT = re.compile(r"\d")


def exact_key(text: str) -> str:
    return hashlib.sha1(_SPACES.sub(" ", text.lower()).strip().encode("utf-8")).hexdigest()


def simplify(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    no_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    out = _DIGIT.sub("0", no_marks.lower())
    return _SPACES.sub(" ", _NON_WORD.sub(" ", out)).strip()
