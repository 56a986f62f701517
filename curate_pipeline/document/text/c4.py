"""The C4 rules (Raffel et al. 2020, section 2.2) with datatrove's C4QualityFilter defaults.

C4 edits the text, dropping lines, and drops whole documents for a few signals. Lines go when
they hold a word over `max_word_length`, lack terminal punctuation, have too few words,
mention javascript or a policy phrase; the document goes for "lorem ipsum", a curly bracket
(code), or too few sentences in what is left.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_SENTENCE_END = re.compile(r"[.!?。！？]+(?:[\"'”’)\]]*)(?=\s|$)")
END_PUNCTUATION = (".", "?", "!", '"', "'")
POLICY = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)


def c4_filter(
    text: str, c, sentences: Callable[[str], int] | None = None
) -> tuple[str, dict[str, float]]:
    """(edited text, statistics). `c` holds C4Conf's settings (see
    curate_pipeline/config/filters.py);
    `sentences` counts a kept line's sentences (default: a regex on sentence ends)."""
    kept: list[str] = []
    n_sentences = 0
    lorem = curly = 0
    lines = text.splitlines()
    for raw in lines:
        line = raw.strip()
        words = line.split()
        if c.max_word_length and any(len(w) > c.max_word_length for w in words):
            continue
        if c.remove_citations:
            line = _CITATION.sub("", line)
        if c.filter_no_terminal_punct and (
            not line.endswith(END_PUNCTUATION) or line.endswith("...")
        ):
            continue
        if len(words) < c.min_words_per_line:
            continue
        low = line.lower()
        if "lorem ipsum" in low:
            lorem = 1
        if c.filter_javascript and "javascript" in low:
            continue
        if "{" in line:
            curly = 1
        if c.filter_policy and any(p in low for p in POLICY):
            continue
        n_sentences += sentences(line) if sentences else max(1, len(_SENTENCE_END.findall(line)))
        kept.append(line)
    return "\n".join(kept).strip(), {
        "lines": float(len(lines)),
        "lines_kept": float(len(kept)),
        "sentences": float(n_sentences),
        "lorem_ipsum": float(lorem),
        "curly_bracket": float(curly),
    }
