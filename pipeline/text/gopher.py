"""The Gopher quality and repetition statistics (Rae et al. 2021, Table A1 and Appendix A).

Definitions follow datatrove's GopherQualityFilter / GopherRepetitionFilter (the FineWeb
recipe), so kept sets can be compared side by side, with three deliberate differences:
- stop words are matched case-insensitively ("The" counts);
- bullet and ellipsis line ratios are over non-empty lines (blank lines dilute them);
- the most frequent n-gram only counts when it occurs more than once (datatrove scores a
  single occurrence too, which fails short clean texts).
The n-gram statistics hash word ids with a rolling polynomial in numpy, and walk only the
positions whose n-gram occurs more than once, so they cost a fraction of a Python n-gram loop.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import numpy as np

from pipeline.text.words import is_word

_ALPHA = re.compile(r"[^\W\d_]")
_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile(r"\n+")
_P = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier of the rolling n-gram hash


def quality_stats(
    text: str,
    words: Sequence[str],
    stop_words: Collection[str] | None,
    bullets: tuple[str, ...],
) -> dict[str, float | None]:
    """Statistics the Gopher quality rules test. `stop_words` None: the rule does not apply."""
    n_tokens = len(words)
    word_tokens = [w for w in words if is_word(w)]
    n_words = len(word_tokens)
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    n_lines = len(lines) or 1
    return {
        "n_words": float(n_words),
        "mean_word_length": sum(map(len, word_tokens)) / n_words if n_words else 0.0,
        "hash_ratio": text.count("#") / n_tokens if n_tokens else 0.0,
        "ellipsis_ratio": (text.count("...") + text.count("…")) / n_tokens if n_tokens else 0.0,
        "bullet_lines_ratio": sum(ln.startswith(bullets) for ln in lines) / n_lines,
        "ellipsis_lines_ratio": sum(ln.endswith(("...", "…")) for ln in lines) / n_lines,
        "alpha_words_ratio": (
            sum(1 for w in words if _ALPHA.search(w)) / n_tokens if n_tokens else 0.0
        ),
        "stop_words": (
            None
            if stop_words is None
            else float(sum(1 for w in word_tokens if w.lower() in stop_words))
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


def _ngram_hashes(ids: np.ndarray, max_n: int) -> dict[int, np.ndarray]:
    """{n: hash of the n-gram starting at each position} for n = 1..max_n."""
    out = {1: ids}
    h = ids
    for n in range(2, max_n + 1):
        if len(ids) < n:
            break
        h = h[:-1] * _P + ids[n - 1 :]
        out[n] = h
    return out


def _top_ngram_chars(h: np.ndarray, prefix: np.ndarray, n: int) -> int:
    """Characters (with the joining spaces) of the most frequent repeated n-gram, times its
    count; ties go to the n-gram seen first, as Counter.most_common does."""
    _, first, counts = np.unique(h, return_index=True, return_counts=True)
    top = counts.max()
    if top < 2:
        return 0
    i = int(first[counts == top].min())
    return int(prefix[i + n] - prefix[i] + n - 1) * int(top)


def _dup_ngram_chars(h: np.ndarray, prefix: np.ndarray, n: int) -> int:
    """Characters in n-grams that repeat an earlier one, scanning left to right and jumping
    past each repeat (datatrove's find_all_duplicate), visiting only multi-occurrence n-grams:
    any other position is new by definition and cannot affect the result."""
    _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
    multi = np.flatnonzero(counts[inverse] >= 2)
    seen: set[int] = set()
    pos = chars = 0
    for p in multi.tolist():
        if p < pos:
            continue
        key = int(h[p])
        if key in seen:
            chars += int(prefix[p + n] - prefix[p])
            pos = p + n
        else:
            seen.add(key)
            pos = p + 1
    return chars


def repetition_stats(
    text: str, words: Sequence[str], top_ns: Sequence[int], dup_ns: Sequence[int]
) -> dict[str, float]:
    """Statistics the Gopher repetition rules test, as fractions (elements or characters)."""
    n_chars = len(text) or 1
    paragraphs = _PARAGRAPHS.split(text.strip())
    para_dups, para_chars = _duplicates(paragraphs)
    lines = _LINES.split(text.strip())
    line_dups, line_chars = _duplicates(lines)
    stats: dict[str, float] = {
        "dup_para_frac": para_dups / len(paragraphs),
        "dup_para_char_frac": para_chars / n_chars,
        "dup_line_frac": line_dups / len(lines),
        "dup_line_char_frac": line_chars / n_chars,
    }
    ns = list(top_ns) + list(dup_ns)
    ids = np.fromiter(map(hash, words), dtype=np.int64, count=len(words)).view(np.uint64)
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    prefix = np.concatenate(([0], np.cumsum(lens)))
    hashes = _ngram_hashes(ids, max(ns, default=1))
    for n in top_ns:
        h = hashes.get(n)
        chars = 0 if h is None or not len(h) else _top_ngram_chars(h, prefix, n)
        stats[f"top_{n}_gram_char_frac"] = chars / n_chars
    for n in dup_ns:
        h = hashes.get(n)
        chars = 0 if h is None or not len(h) else _dup_ngram_chars(h, prefix, n)
        stats[f"dup_{n}_gram_char_frac"] = chars / n_chars
    return stats
