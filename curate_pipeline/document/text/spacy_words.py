"""spaCy's rule-based tokenizers and sentencizer (`spacy.blank(lang)`: no model download), the
word splitters datatrove 0.10.1 uses for English (`rules.word_splitter: spacy_en`, making the
rule decisions FineWeb's) and, through curate_pipeline/document/text/lang_words.py, for most other
languages (Chinese with jieba, Japanese with SudachiPy, Vietnamese with pyvi: spaCy's own
segmenters for them). Tokens are stripped and empty ones dropped, as datatrove does with
spaCy's whitespace tokens. Each language is loaded once per process.

spaCy's vocabulary caches a lexeme for every new string it meets: fast (2.1 ms a document
warm, against 6.3 ms inside `memory_zone()`, which frees them after each document, as
datatrove does), but it grows with the corpus. So the cache is kept and the language
reloaded past MAX_LEXEMES strings; the tokens never depend on the cache."""

from __future__ import annotations

from functools import cache

MAX_LEXEMES = 100_000  # measured: 168k lexemes held +139 MiB
# spaCy's Japanese tokenizer (SudachiPy) refuses texts over 49,149 bytes: datatrove cuts
# Japanese texts into pieces of at most 40,000 UTF-8 bytes, so do we
JA_PIECE_BYTES = 40_000
# spaCy's choice of segmenter per language where it has several (datatrove: jieba for Chinese;
# spaCy's default, character segmentation, would make every character a word)
_CONFIGS = {"zh": {"nlp": {"tokenizer": {"segmenter": "jieba"}}}}


@cache
def _load(lang: str):
    import spacy

    config = _CONFIGS.get(lang)
    nlp = spacy.blank(lang, config=config) if config else spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    return nlp


def _nlp(lang: str = "en"):
    nlp = _load(lang)
    if len(nlp.vocab) > MAX_LEXEMES:
        _load.cache_clear()
        nlp = _load(lang)
    return nlp


def _pieces(text: str, lang: str) -> list[str]:
    """The text, or for Japanese its pieces of at most JA_PIECE_BYTES bytes (whole characters)."""
    if lang != "ja" or len(text) * 4 <= JA_PIECE_BYTES:
        return [text]
    data = text.encode("utf-8")
    out, start = [], 0
    while start < len(data):
        end = min(len(data), start + JA_PIECE_BYTES)
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # not inside a character
            end -= 1
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out


def spacy_words(text: str, lang: str = "en") -> list[str]:
    nlp = _nlp(lang)
    nlp.max_length = max(nlp.max_length, len(text) + 10)
    out: list[str] = []
    for piece in _pieces(text, lang):
        doc = nlp.make_doc(piece)
        out.extend(t for t in (tok.text.strip() for tok in doc) if t)
    return out


def spacy_sentences(text: str, lang: str = "en") -> int:
    """Sentences in `text` by spaCy's sentencizer; at least 1."""
    nlp = _nlp(lang)
    nlp.max_length = max(nlp.max_length, len(text) + 10)
    return max(1, sum(1 for _ in nlp(text).sents))
