"""datatrove 0.10.1's FineWeb rule filters on texts, for bench/rules_agreement_bench.py. Runs
in the anchor venv (bench/.venv-anchor: `make bench/.venv-anchor/bin/datatrove-ready`).

    python bench/rules_datatrove.py TEXTS.jsonl OUT.jsonl

Each input line {"id", "text"}; each output line {"id", "sets": {set: reason or null},
"chain": reason or null}: every filter alone on the text, and the chain in FineWeb's order
(C4 edits the text the FineWeb filter then sees), as its example pipeline runs them.
"""

import json
import sys

from datatrove.data import Document
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
)


def verdict(f, doc):
    out = f.filter(doc)
    if out is True:
        return None
    return out[1] if isinstance(out, tuple) else "dropped"


def main(src, dst):
    sets = {
        "gopher_repetition": GopherRepetitionFilter(),
        "gopher_quality": GopherQualityFilter(),
        "c4": C4QualityFilter(filter_no_terminal_punct=False),
        "fineweb": FineWebQualityFilter(),
    }
    with open(src) as fin, open(dst, "w") as fout:
        for line in fin:
            item = json.loads(line)
            alone = {}
            for name, f in sets.items():
                alone[name] = verdict(f, Document(text=item["text"], id=item["id"]))
            doc = Document(text=item["text"], id=item["id"])
            chain = None
            for name, f in sets.items():
                reason = verdict(f, doc)
                if reason is not None:
                    chain = f"{name}:{reason}"
                    break
            fout.write(json.dumps({"id": item["id"], "sets": alone, "chain": chain}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
