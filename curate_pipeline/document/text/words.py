r"""Word splitting shared by the rule sets and (its word pattern) the quality classifier.

Words are runs of letters, digits and combining marks (with inner apostrophes, hyphens and
decimal points kept, as in "don't", "state-of-the-art", "3.14"), and every run of other
non-space characters is a symbol token of its own. Combining marks (Unicode M: Mn, Mc, Me)
belong to the word: `\w` alone excludes them, which shattered Tamil, Devanagari, Thaana and
Thai-script words, and Russian words with stress marks, into fragments. The `regex` module
has the `\p{M}` class Python's `re` lacks. (`rules.word_splitter: spacy_en` uses spaCy's
English rules instead, as datatrove does: curate_pipeline/document/text/spacy_words.py.)
"""

from __future__ import annotations

import regex

# A word: letters/digits/marks with inner apostrophes, hyphens and decimal points. The
# quality classifier's tokens use the same pattern (curate_pipeline/document/quality/tokens.py).
_W = r"[\w\p{M}]"
WORD_PATTERN = _W + r"+(?:['’.\-]" + _W + r"+)*"
_TOKEN = regex.compile(WORD_PATTERN + r"|[^\w\p{M}\s]+")


def split_words(text: str) -> list[str]:
    """Word and symbol tokens of `text`, in order."""
    return _TOKEN.findall(text)
