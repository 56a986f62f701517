"""The Gopher quality and repetition statistics (Rae et al. 2021, Table A1 and Appendix A).

Definitions follow datatrove's GopherQualityFilter / GopherRepetitionFilter (the FineWeb
recipe), so kept sets can be compared side by side. The stop-word rule counts distinct stop
words (Gopher's "at least two of"), as datatrove does. Three deliberate differences:
- stop words are matched case-insensitively ("The" counts);
- bullet and ellipsis line ratios are over non-empty lines (blank lines dilute them);
- the most frequent n-gram only counts when it occurs more than once (datatrove scores a
  single occurrence too, which fails short clean texts; `top_ngram_min_count: 1` = datatrove).
Each is a setting; conf/fineweb.yaml sets datatrove's.
The n-gram statistics hash word ids with a rolling polynomial in numpy, and walk only the
positions whose n-gram occurs more than once, so they cost a fraction of a Python n-gram loop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from itertools import filterfalse, repeat

import numpy as np
import regex

_WORD_CHAR = regex.compile(r"[\w\p{M}]")  # a token with one is a word, not a symbol run
_LETTER = regex.compile(r"[^\W\d_]")  # str.isalpha's letters
_PARAGRAPHS = re.compile(r"\n{2,}")
_ELLIPSES = ("...", "…")
_P = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier of the rolling n-gram hash


def quality_stats(
    text: str,
    words: Sequence[str],
    stop_words: AbstractSet[str] | None,
    bullets: tuple[str, ...],
    case_sensitive: bool = False,
    all_lines: bool = False,
) -> dict[str, float | None]:
    """Statistics the Gopher quality rules test. `stop_words` None: the rule does not apply.

    `words` are all tokens; the word tokens are those with a letter, digit or mark (datatrove:
    a character outside its punctuation set). `case_sensitive`: stop words as written
    (datatrove); `all_lines`: the line shares over every line, blank ones too (datatrove).
    Per-token work runs in C (filter/map/str methods), not in Python loops.
    """
    n_tokens = len(words)
    # str.isalpha (C, no regex call) settles most tokens: all letters = a word with a letter.
    # Only the rest ("don't", "3.14", "#", ...) go through the regexes.
    letters = list(filter(str.isalpha, words))
    mixed = list(filter(_WORD_CHAR.search, filterfalse(str.isalpha, words)))
    n_words = len(letters) + len(mixed)
    n_alpha = len(letters) + sum(map(bool, map(_LETTER.search, mixed)))
    lines = list(map(str.strip, text.splitlines()))
    if not all_lines:
        lines = list(filter(None, lines))
    n_lines = len(lines) or 1
    if stop_words is None:
        n_stop = None
    else:
        word_tokens = letters + mixed
        n_stop = float(len(stop_words.intersection(
            word_tokens if case_sensitive else map(str.lower, word_tokens))))  # fmt: skip
    return {
        "n_words": float(n_words),
        "mean_word_length": (
            (sum(map(len, letters)) + sum(map(len, mixed))) / n_words if n_words else 0.0
        ),
        "hash_ratio": text.count("#") / n_tokens if n_tokens else 0.0,
        "ellipsis_ratio": (text.count("...") + text.count("…")) / n_tokens if n_tokens else 0.0,
        "bullet_lines_ratio": sum(map(str.startswith, lines, repeat(bullets))) / n_lines,
        "ellipsis_lines_ratio": sum(map(str.endswith, lines, repeat(_ELLIPSES))) / n_lines,
        "alpha_words_ratio": n_alpha / n_tokens if n_tokens else 0.0,
        "stop_words": n_stop,
    }


def _lines(text: str) -> list[str]:
    """re.split(r"\n+", text) at a third of the cost: str.split, the empty pieces between
    newlines dropped, an empty first/last piece kept when the text starts/ends with one."""
    if not text:
        return [""]
    lines = list(filter(None, text.split("\n")))
    if text[0] == "\n":
        lines.insert(0, "")
    if text[-1] == "\n":
        lines.append("")
    return lines


def _duplicates(parts: list[str]) -> tuple[int, int]:
    """(elements, characters) that repeat an earlier element: whatever the set of distinct
    elements does not hold once (counted in C, no Python loop)."""
    distinct = set(parts)
    return len(parts) - len(distinct), sum(map(len, parts)) - sum(map(len, distinct))


def _repeated(keys: np.ndarray) -> np.ndarray:
    """Mask of the entries of `keys` that occur more than once (one sort; np.unique's
    inverse and counts cost more and are not needed)."""
    order = np.argsort(keys)
    ordered = keys[order]
    same = ordered[1:] == ordered[:-1]
    rep = np.zeros(len(keys), bool)
    rep[1:] = same
    rep[:-1] |= same
    mask = np.empty(len(keys), bool)
    mask[order] = rep
    return mask


def _top_ngram_chars(h: np.ndarray, pos: np.ndarray, prefix: np.ndarray, n: int,
                     min_count: int = 2) -> int:  # fmt: skip
    """Characters (with the joining spaces) of the most frequent repeated n-gram, times its
    count; ties go to the n-gram seen first, as Counter.most_common does. `pos` are the
    candidate positions (all occurrences of every repeated n-gram), `h` their hashes."""
    if not len(pos):
        return 0
    _, first, counts = np.unique(h, return_index=True, return_counts=True)
    top = counts.max()
    if top < min_count:
        return 0
    i = int(pos[first[counts == top].min()])
    return int(prefix[i + n] - prefix[i] + n - 1) * int(top)


def _dup_ngram_chars(h: np.ndarray, pos: np.ndarray, prefix: np.ndarray, n: int) -> int:
    """Characters in n-grams that repeat an earlier one, scanning left to right and jumping
    past each repeat (datatrove's find_all_duplicate). Only positions of repeated n-grams
    (`pos`, in order, hashes `h`) are visited: any other is new and changes nothing."""
    seen: set[int] = set()
    nxt = chars = 0
    for p, key in zip(pos.tolist(), h.tolist(), strict=True):
        if p < nxt:
            continue
        if key in seen:
            chars += int(prefix[p + n] - prefix[p])
            nxt = p + n
        else:
            seen.add(key)
            nxt = p + 1
    return chars


def _ngram_chars(
    words: Sequence[str], top_ns: Sequence[int], dup_ns: Sequence[int], top_min_count: int = 2
) -> tuple[dict[int, int], dict[int, int]]:
    """({n: top n-gram chars}, {n: duplicated n-gram chars}).

    Word ids are Python string hashes; the n-gram hash at position p is a rolling polynomial
    of the ids from p. Every occurrence of a repeated (n+1)-gram starts an occurrence of a
    repeated n-gram, so each n only looks at the previous n's repeated positions: after the
    first few n, the arrays are tiny.
    """
    top: dict[int, int] = {}
    dup: dict[int, int] = {}
    max_n = max([*top_ns, *dup_ns], default=1)
    ids = np.fromiter(map(hash, words), dtype=np.int64, count=len(words)).view(np.uint64)
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    prefix = np.concatenate(([0], np.cumsum(lens)))
    pos = np.arange(len(ids))
    h = ids
    for n in range(2, max_n + 1):
        if len(pos):  # once nothing repeats, no longer n-gram can
            pos = pos[pos + n <= len(ids)]  # n-grams that fit
            h = h[: len(pos)] * _P + ids[pos + n - 1]
            mask = _repeated(h)
            pos, h = pos[mask], h[mask]
        if n in top_ns:
            top[n] = _top_ngram_chars(h, pos, prefix, n, top_min_count)
            if not top[n] and top_min_count <= 1 and len(ids) >= n:
                # nothing repeats: the top n-gram is the first (Counter.most_common's tie)
                top[n] = int(prefix[n] - prefix[0] + n - 1)
        if n in dup_ns:
            dup[n] = _dup_ngram_chars(h, pos, prefix, n) if len(pos) else 0
    return top, dup


def repetition_stats(
    text: str,
    words: Sequence[str],
    top_ns: Sequence[int],
    dup_ns: Sequence[int],
    top_min_count: int = 2,
) -> dict[str, float]:
    """Statistics the Gopher repetition rules test, as fractions (elements or characters);
    `empty` is 1 for a text with nothing in it (it fails the set, as in datatrove)."""
    n_chars = len(text) or 1
    paragraphs = _PARAGRAPHS.split(text.strip())
    para_dups, para_chars = _duplicates(paragraphs)
    lines = _lines(text)
    line_dups, line_chars = _duplicates(lines)
    stats: dict[str, float] = {
        "empty": 0.0 if text else 1.0,
        "dup_para_frac": para_dups / len(paragraphs),
        "dup_para_char_frac": para_chars / n_chars,
        "dup_line_frac": line_dups / len(lines),
        "dup_line_char_frac": line_chars / n_chars,
    }
    top, dup = _ngram_chars(words, top_ns, dup_ns, top_min_count)
    for n in top_ns:
        stats[f"top_{n}_gram_char_frac"] = top.get(n, 0) / n_chars
    for n in dup_ns:
        stats[f"dup_{n}_gram_char_frac"] = dup.get(n, 0) / n_chars
    return stats
