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

import numpy as np
import regex

_WORD_CHAR = regex.compile(r"[\w\p{M}]")  # a token with one is a word, not a symbol run
_LETTER = regex.compile(r"[^\W\d_]")  # str.isalpha's letters
_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile(r"\n+")
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
    Per-token work runs in C (filter/map/findall), not in Python loops.
    """
    n_tokens = len(words)
    word_tokens = list(filter(_WORD_CHAR.search, words))
    n_words = len(word_tokens)
    joined = " ".join(word_tokens)  # only word tokens can hold a letter
    if all_lines:
        lines = [ln.strip() for ln in text.splitlines()]
    else:
        lines = [ln for ln in map(str.strip, text.splitlines()) if ln]
    n_lines = len(lines) or 1
    return {
        "n_words": float(n_words),
        "mean_word_length": sum(map(len, word_tokens)) / n_words if n_words else 0.0,
        "hash_ratio": text.count("#") / n_tokens if n_tokens else 0.0,
        "ellipsis_ratio": (text.count("...") + text.count("…")) / n_tokens if n_tokens else 0.0,
        "bullet_lines_ratio": sum(ln.startswith(bullets) for ln in lines) / n_lines,
        "ellipsis_lines_ratio": sum(ln.endswith(("...", "…")) for ln in lines) / n_lines,
        "alpha_words_ratio": (
            sum(map(bool, map(_LETTER.search, word_tokens))) / n_tokens if n_tokens else 0.0
        ),
        "stop_words": (
            None
            if stop_words is None
            else float(
                len(stop_words.intersection((joined if case_sensitive else joined.lower()).split()))
            )
        ),
    }


def _duplicates(parts: list[str]) -> tuple[int, int]:
    """(elements, characters) that repeat an earlier element."""
    seen: set[str] = set()
    n = chars = 0
    for p in parts:
        if p in seen:
            n += 1
            chars += len(p)
        else:
            seen.add(p)
    return n, chars


def _multi(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """(mask of entries whose key occurs more than once, highest count) of `keys`."""
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse] >= 2, int(counts.max(initial=0))


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
        pos = pos[pos + n <= len(ids)]  # n-grams that fit
        h = h[: len(pos)] * _P + ids[pos + n - 1]
        mask, _ = _multi(h) if len(pos) else (np.zeros(0, bool), 0)
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
    lines = _LINES.split(text)
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
