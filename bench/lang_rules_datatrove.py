"""datatrove 0.10.1's FineWeb-2 filters on texts, for bench/lang_rules_agreement_bench.py. Runs
in the anchor venv (bench/.venv-anchor) with datatrove's word tokenizers installed; never
imports `pipeline`.

    python bench/lang_rules_datatrove.py CONFIGS_DIR TEXTS.jsonl OUT.jsonl

Each input line {"id", "text", "key", "label", "fallback"}; each output line {"id", "reason",
"seconds"}: the three filters FineWeb-2 runs per language, built as fineweb-2-pipeline.py
builds them from the key's config (GopherRepetitionFilter, FineWebQualityFilter,
GopherQualityFilter, in that order), the first failing filter's reason or null. A key without a
config (English) gets the filters with the same fixed settings and their defaults. `fallback`
true: the language's datatrove tokenizer cannot run offline (Stanza, botok) or conflicts with
the project's fastText (pyidaungsu), so both sides use spaCy `xx`, datatrove's own
WhitespaceTokenizer.
"""

import json
import sys
import time
from pathlib import Path

import yaml
from datatrove.data import Document
from datatrove.pipeline.filters import (
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
)
from datatrove.utils.text import split_into_parts
from datatrove.utils.word_tokenizers import WhitespaceTokenizer

_FILTERS = {}
_XX = WhitespaceTokenizer()


def filters(configs: Path, key: str | None, label: str, fallback: bool):
    cache_key = (key, label, fallback)
    if cache_key in _FILTERS:
        return _FILTERS[cache_key]
    language = _XX if fallback else (key or label)
    path = configs / f"{key}.yml"
    if key and path.exists():
        c = yaml.safe_load(path.read_text())
        chain = [
            GopherRepetitionFilter(
                language=language,
                dup_para_frac=0,
                dup_line_char_frac=0,
                dup_para_char_frac=0,
                dup_line_frac=c["dup_line_frac"],
                top_n_grams=c["top_n_grams"],
                dup_n_grams=c["dup_n_grams"],
            ),
            FineWebQualityFilter(
                language=language,
                short_line_thr=999,
                char_duplicates_ratio=0.1,
                line_punct_thr=c["line_punct_thr"],
                new_line_ratio=c["new_line_ratio"],
            ),
            GopherQualityFilter(
                language=language,
                max_avg_word_length=c["max_avg_word_length"],
                min_avg_word_length=c["min_avg_word_length"],
                stop_words=c["stopwords"],
                max_non_alpha_words_ratio=c["max_non_alpha_words_ratio"],
                min_stop_words=2,
            ),
        ]
    else:  # the preset's fallback: the same fixed choices, datatrove's default thresholds
        chain = [
            GopherRepetitionFilter(
                language=language, dup_para_frac=0, dup_line_char_frac=0, dup_para_char_frac=0
            ),
            FineWebQualityFilter(language=language, short_line_thr=999, char_duplicates_ratio=0.1),
            GopherQualityFilter(language=language, min_stop_words=2),
        ]
    _FILTERS[cache_key] = chain
    return chain


def verdict(chain, doc):
    for f in chain:
        out = f.filter(doc)
        if out is not True:
            return out[1] if isinstance(out, tuple) else "dropped"
    return None


def main(configs, src, dst):
    configs = Path(configs)
    with open(src) as fin, open(dst, "w") as fout:
        for line in fin:
            item = json.loads(line)
            chain = filters(configs, item["key"], item["label"], item["fallback"])
            doc = Document(text=item["text"], id=item["id"])
            verdict(chain, doc)  # first call: tokenizers load, not timed
            split_into_parts.cache_clear()  # its words cache (5 texts) would time nothing
            t0 = time.perf_counter()
            reason = verdict(chain, doc)
            fout.write(
                json.dumps(
                    {"id": item["id"], "reason": reason, "seconds": time.perf_counter() - t0}
                )
                + "\n"
            )


if __name__ == "__main__":
    main(*sys.argv[1:4])
