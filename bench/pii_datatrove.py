"""The anchor side of bench/pii_bench.py: datatrove's PIIFormatter (FineWeb's settings) on
each context of a JSONL file. Runs in the anchor venv (bench/.venv-anchor), never imports
`pipeline`.

    python bench/pii_datatrove.py IN.jsonl OUT.jsonl
"""

from __future__ import annotations

import json
import sys

from datatrove.pipeline.formatters import PIIFormatter


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as fh, open(dst, "w") as out:
        for line in fh:
            row = json.loads(line)
            pii = PIIFormatter()  # one per context: its stand-in counter restarts, as ours does
            out.write(json.dumps({"id": row["id"], "out": pii.format(row["context"])}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
