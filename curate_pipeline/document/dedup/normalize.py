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
import sys
import unicodedata
from functools import cache

import numpy as np

_SPACES = re.compile(r"\s+")


def exact_key(text: str) -> str:
    return hashlib.sha1(_SPACES.sub(" ", text.lower()).strip().encode("utf-8")).hexdigest()


_KEEP, _DROP, _DIGIT_CLS, _SPACE = 0, 1, 2, 3


@cache
def _classes() -> np.ndarray:
    """What simplify does with each code point: keep it, drop it (a combining mark), make it
    "0" (a decimal digit) or a space (anything not a letter or digit). Built once per process
    (~1 s) so that simplify is a few numpy lookups, not a regex over the text."""
    table = np.full(sys.maxunicode + 1, _SPACE, dtype=np.uint8)
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if unicodedata.combining(ch):
            table[cp] = _DROP
        elif ch.isdecimal():
            table[cp] = _DIGIT_CLS
        elif ch.isalnum():
            table[cp] = _KEEP
    return table


def simplify(text: str) -> str:
    """Words of the text, lowercased, without diacritics, digits as 0, separated by one space."""
    cps = np.frombuffer(
        unicodedata.normalize("NFKD", text).lower().encode("utf-32-le"), dtype=np.uint32
    )
    cls = _classes()[cps]
    cps, cls = cps[cls != _DROP], cls[cls != _DROP]
    cps = np.where(cls == _DIGIT_CLS, 48, np.where(cls == _SPACE, 32, cps)).astype(np.uint32)
    return " ".join(cps.tobytes().decode("utf-32-le").split())
