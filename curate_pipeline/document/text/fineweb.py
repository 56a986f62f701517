"""FineWeb's own quality rules (Penedo et al. 2024), datatrove's FineWebQualityFilter defaults:
share of lines ending in punctuation, share of short lines, characters in duplicated lines,
and newlines per word (lists). An empty text fails (`empty`), as in datatrove."""

from __future__ import annotations

from collections.abc import Sequence

import regex

# A line ending in Unicode's Sentence_Terminal punctuation (the regex module's tables) or one
# of three Khmer signs: datatrove's TERMINAL_PUNCTUATION is this property as of an older
# Unicode version (16 newer characters of rare scripts aside). Not `; : …`: a line ending so
# introduces a list or trails off.
_TERMINAL_END = regex.compile(r"[\p{Sentence_Terminal}\u17d6\u17d9\u17da]\Z")


def fineweb_stats(
    text: str, words: Sequence[str], short_line_length: int, strip_line_ends: bool = True
) -> dict[str, float]:
    lines = [ln for ln in text.split("\n") if ln.strip()]
    n = len(lines) or 1
    ends = (ln.rstrip() for ln in lines) if strip_line_ends else lines
    seen: set[str] = set()
    dup_chars = 0
    for ln in lines:
        if ln in seen:
            dup_chars += len(ln)
        else:
            seen.add(ln)
    return {
        "empty": 0.0 if lines else 1.0,
        "line_punct_ratio": sum(map(bool, map(_TERMINAL_END.search, ends))) / n,
        "short_line_ratio": sum(len(ln) <= short_line_length for ln in lines) / n,
        "char_dup_ratio": dup_chars / (len(text.replace("\n", "")) or 1),
        "newline_ratio": text.count("\n") / (len(words) or 1),
    }
