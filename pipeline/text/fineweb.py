"""FineWeb's own quality rules (Penedo et al. 2024), datatrove's FineWebQualityFilter defaults:
share of lines ending in punctuation, share of short lines, characters in duplicated lines,
and newlines per word (lists)."""

from __future__ import annotations

from collections.abc import Sequence

# datatrove's TERMINAL_PUNCTUATION, abridged to the common scripts.
TERMINAL_PUNCTUATION = tuple(".!?;:。！？；：…‼⁇⁈⁉।॥؟۔")


def fineweb_stats(text: str, words: Sequence[str], short_line_length: int) -> dict[str, float]:
    lines = [ln for ln in text.split("\n") if ln.strip()]
    n = len(lines) or 1
    seen: set[str] = set()
    dup_chars = 0
    for ln in lines:
        if ln in seen:
            dup_chars += len(ln)
        else:
            seen.add(ln)
    return {
        "line_punct_ratio": sum(ln.rstrip().endswith(TERMINAL_PUNCTUATION) for ln in lines) / n,
        "short_line_ratio": sum(len(ln) <= short_line_length for ln in lines) / n,
        "char_dup_ratio": dup_chars / (len(text.replace("\n", "")) or 1),
        "newline_ratio": text.count("\n") / (len(words) or 1),
    }
