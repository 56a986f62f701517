"""lid.176 labels to FineWeb-2 keys: ours against datatrove's own table, label by label.

datatrove 0.10.1 ships `assets/tokenizer_assignment.csv`, whose rows flagged `default_code_1`
and `default_script` say which `<iso639-3>_<Script>` an ISO 639-1 code stands for. This
compares curate_pipeline/document/lang_recipes.py's key for every lid.176 label with that table
(read from the anchor venv: `make bench/.venv-anchor/bin/datatrove-ready`) and writes
bench/results/lang_recipes_datatrove.json with every difference.

    python bench/lang_recipes_datatrove.py
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import Config  # noqa: E402
from curate_pipeline.document.lang_recipes import RecipeKeys  # noqa: E402
from curate_pipeline.document.langid import load_fasttext  # noqa: E402
from curate_pipeline.stages.langid import lid_model_path  # noqa: E402

TABLE = next((ROOT / "bench" / ".venv-anchor").glob(
    "lib/python3*/site-packages/datatrove/assets/tokenizer_assignment.csv"), None)  # fmt: skip
OUT = ROOT / "bench" / "results" / "lang_recipes_datatrove.json"


def main() -> None:
    if TABLE is None:
        sys.exit("datatrove not found: make bench/.venv-anchor/bin/datatrove-ready")
    keys = {p.stem for p in (ROOT / "conf" / "fineweb2" / "configs").glob("*.yml")}
    ours = RecipeKeys(keys)
    theirs: dict[str, str] = {}
    with TABLE.open() as f:
        for row in csv.DictReader(f):
            if (
                row["code_1"]
                and row["default_code_1"] == "TRUE"
                and row["default_script"] == "TRUE"
            ):
                theirs.setdefault(row["code_1"], f"{row['code_3']}_{row['script']}")
    labels = sorted(x.removeprefix("__label__") for x in
                    load_fasttext(str(lid_model_path(Config()))).get_labels())  # fmt: skip
    compared = [label for label in labels if label in theirs]
    differ = {label: {"ours": ours.key_for(label), "datatrove": theirs[label],
                      "datatrove_key_in_fineweb2": theirs[label] in keys}
              for label in compared if ours.key_for(label) != theirs[label]}  # fmt: skip
    report = {
        "lid176_labels": len(labels),
        "in_datatrove_table": len(compared),
        "same": len(compared) - len(differ),
        "different": differ,
        "not_in_datatrove_table": [label for label in labels if label not in theirs],
    }
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{report['same']} of {len(compared)} labels take datatrove's key; differences:")
    for label, d in differ.items():
        print(f"  {label}: ours {d['ours']}, datatrove {d['datatrove']}"
              f"{'' if d['datatrove_key_in_fineweb2'] else ' (no FineWeb-2 config)'}")  # fmt: skip
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
