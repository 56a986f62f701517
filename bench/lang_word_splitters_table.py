"""conf/fineweb2/word_splitters.csv from datatrove 0.10.1's word-tokenizer table.

datatrove assigns every language a word tokenizer (`assets/tokenizer_assignment.csv`: a
spaCy language, a dedicated segmenter, or a proxy language's rules) and looks a language up by
`<iso639-3>_<Script>`, by its ISO 639-3 code alone (the default script's row), and by its
ISO 639-1 code with or without the script (the default row of that code). This writes the
same lookup as a flat table, key -> (splitter, code), read by
curate_pipeline/document/text/lang_words.py: the project's per-language words are datatrove's
choice for every key it has. The table is data from datatrove (Apache-2.0, as conf/fineweb2).

    python bench/lang_word_splitters_table.py   # reads it from bench/.venv-anchor
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "conf" / "fineweb2" / "word_splitters.csv"
# datatrove's class names -> ours (curate_pipeline/document/text/lang_words.py)
KINDS = {
    "SpaCyTokenizer": "spacy",
    "StanzaTokenizer": "stanza",
    "ThaiTokenizer": "thai",
    "IndicNLPTokenizer": "indic",
    "KiwiTokenizer": "kiwi",
    "KhmerTokenizer": "khmer",
    "LaoTokenizer": "lao",
    "TibetanTokenizer": "tibetan",
    "BurmeseTokenizer": "burmese",
    "WhitespaceTokenizer": "whitespace",
}


def main() -> None:
    found = list((ROOT / "bench" / ".venv-anchor").glob(
        "lib/python*/site-packages/datatrove/assets/tokenizer_assignment.csv"))  # fmt: skip
    if not found:
        sys.exit("datatrove not found: make bench/.venv-anchor/bin/datatrove-ready")
    table: dict[str, tuple[str, str]] = {}
    with found[0].open() as fh:
        for row in csv.DictReader(fh):
            if not row["type"]:
                continue
            entry = (KINDS[row["type"]], row["tok_code"])
            default_script = row["default_script"] == "TRUE"
            key3 = f"{row['code_3']}_{row['script']}"
            if key3 not in table:  # the first row of a key wins, as in datatrove
                table[key3] = entry
                if default_script:
                    table[row["code_3"]] = entry
            key1 = f"{row['code_1']}_{row['script']}"
            if row["code_1"] and row["default_code_1"] == "TRUE" and key1 not in table:
                table[key1] = entry
                if default_script:
                    table[row["code_1"]] = entry
    with OUT.open("w", newline="") as fh:
        fh.write("# from datatrove 0.10.1 assets/tokenizer_assignment.csv (Apache-2.0): "
                 "bench/lang_word_splitters_table.py\n")  # fmt: skip
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["key", "splitter", "code"])
        for key in sorted(table):
            out.writerow([key, *table[key]])
    print(f"{len(table)} keys -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
