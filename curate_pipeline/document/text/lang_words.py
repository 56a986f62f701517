"""Words per language, as datatrove 0.10.1 splits them for FineWeb-2 (`rules.word_splitter:
per_language`).

The table (conf/fineweb2/word_splitters.csv, datatrove's own assignment as a flat lookup:
bench/lang_word_splitters_table.py) gives each language key a splitter and a code: spaCy's
rules for a language (its own, or a proxy's: `ms` for many Austronesian languages, `xx` for
languages without one; with jieba for Chinese, SudachiPy for Japanese, pyvi for Vietnamese),
pythainlp for Thai, the Indic NLP library's tokenizer for Indic scripts, Kiwi for Korean,
khmer-nltk and LaoNLP for Khmer and Lao. Each is loaded once per worker process, on first use.

Where datatrove's choice cannot run here its place is taken by spaCy's multi-language rules
(`xx`, datatrove's own WhitespaceTokenizer): Stanza (98 FineWeb-2 languages: Kazakh, Welsh,
Uyghur, ...) and botok (Tibetan) download their models on first use, which a worker without
internet access cannot; pyidaungsu (Burmese, 6 languages) requires a second `fasttext`
distribution that installs over the one language ID uses. A language with no row (no recipe
key and a label the table lacks) takes `xx` too.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from functools import cache

from curate_pipeline.document.text.spacy_words import spacy_words

Splitter = tuple[str, str]  # (kind, code)
FALLBACK: Splitter = ("spacy", "xx")
# datatrove's choices that cannot run here: spaCy xx instead (module docstring)
REPLACED = {"stanza": FALLBACK, "tibetan": FALLBACK, "burmese": FALLBACK, "whitespace": FALLBACK}
_KIWI_LONG_NUMBERS = re.compile(r"[0-9,]{20,}")  # Kiwi stalls on them; datatrove drops them


def read_table(lines: Iterable[str]) -> dict[str, Splitter]:
    """key -> (kind, code) from the CSV's lines (`#` lines are comments)."""
    rows = csv.DictReader(line for line in lines if not line.startswith("#"))
    return {r["key"]: (r["splitter"], r["code"]) for r in rows}


def assignment(table: dict[str, Splitter], key: str | None, label: str | None) -> Splitter:
    """The splitter of a document: its recipe key's, else its LID label's, else `xx`."""
    for name in (key, label):
        if name and name in table:
            found = table[name]
            return REPLACED.get(found[0], found)
    return FALLBACK


def split_words_in(text: str, splitter: Splitter) -> list[str]:
    return _splitter(*splitter)(text)


def _strip(tokens: Iterable[str]) -> list[str]:
    return [t for t in (tok.strip() for tok in tokens) if t]


@cache
def _splitter(kind: str, code: str) -> Callable[[str], list[str]]:
    """The splitting function of a (kind, code): libraries imported and models loaded here,
    once per process. A missing library raises ImportError: an environment failure."""
    if kind == "spacy":
        return lambda text: spacy_words(text, code)
    if kind == "thai":
        from pythainlp.tokenize import word_tokenize

        return lambda text: _strip(word_tokenize(text, keep_whitespace=False,
                                                 engine="newmm-safe"))  # fmt: skip
    if kind == "indic":
        from indicnlp.tokenize.indic_tokenize import trivial_tokenize

        return lambda text: _strip(trivial_tokenize(text, code))
    if kind == "kiwi":
        from kiwipiepy import Kiwi

        kiwi = Kiwi(model_type="sbg")  # datatrove's model (kiwipiepy_model < 0.21 ships it)

        def korean(text: str) -> list[str]:
            text = _KIWI_LONG_NUMBERS.sub("", text)
            return _strip(text[t.start : t.end] for t in kiwi.tokenize(text))

        return korean
    if kind == "khmer":
        from khmernltk import word_tokenize as khmer

        return lambda text: _strip(khmer(text, return_tokens=True))
    if kind == "lao":
        from laonlp.tokenize import word_tokenize as lao

        return lambda text: _strip(lao(text))
    raise ValueError(f"unknown word splitter {kind!r} (conf/fineweb2/word_splitters.csv)")
