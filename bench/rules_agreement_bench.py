"""Rule decisions against datatrove 0.10.1's (the FineWeb pipeline), text by text.

Texts: the project's real texts in ../shared/data: the scrapinghub article bodies, the 697
Common Crawl documents (dolma) and the WCXB dev ground truths. datatrove runs in its own venv
(bench/rules_datatrove.py; `make bench/.venv-anchor/bin/datatrove-ready`): each of its four
filters alone on every text, and the chain in FineWeb's order. Ours runs the same sets with
the `rules` section of conf/fineweb.yaml (the preset) and of conf/default.yaml (our
defaults, with C4 and FineWeb added as in the preset). Printed and written to
bench/results/rules_agreement.json: the share of equal keep/drop decisions per rule set and
for the chain, every disagreement with both sides' reasons, how many chain decisions each
deliberate difference of the defaults changes per set and in the chain (one setting at a
time from the preset), and
the cost per document of each word splitter.

    python bench/rules_agreement_bench.py [--anchor-python bench/.venv-anchor/bin/python]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import RulesConf, load_config  # noqa: E402
from curate_pipeline.document.text.rules import checks, evaluate  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETS = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]
WORK = ROOT / "bench" / "work" / "rules"


def texts() -> list[dict]:
    out = []
    aeb = json.loads((DATA / "extraction" / "scrapinghub_aeb" / "ground-truth.json").read_text())
    for key, item in sorted(aeb.items()):
        out.append({"id": f"aeb/{key}", "text": item.get("articleBody") or ""})
    for path in sorted((DATA / "text").glob("dolma_*.jsonl")):
        for line in path.read_text().split("\n"):
            if not line.strip():
                continue
            item = json.loads(line)
            out.append({"id": f"dolma/{item['id']}", "text": item["text"]})
    for gt in sorted((DATA / "extraction" / "wcxb_dev" / "ground-truth").glob("*.json")):
        item = json.loads(gt.read_text())["ground_truth"]
        out.append({"id": f"wcxb/{gt.stem}", "text": item.get("main_content") or ""})
    return out


def ours(items: list[dict], rules: RulesConf) -> dict[str, dict]:
    """id -> {"sets": {set: failed rules or None}, "chain": failed rules or None}."""
    alone = {s: rules.model_copy(update={"rule_sets": [s]}) for s in SETS}
    alone_checks = {s: checks(r) for s, r in alone.items()}
    chain = rules.model_copy(update={"rule_sets": SETS})
    chain_checks = checks(chain)
    out = {}
    for it in items:
        sets = {}
        for s in SETS:
            o = evaluate(it["text"], "en", alone[s], alone_checks[s])
            sets[s] = "; ".join(o.details) or None
        o = evaluate(it["text"], "en", chain, chain_checks)
        out[it["id"]] = {"sets": sets, "chain": "; ".join(o.details) or None}
    return out


def agreement(mine: dict, theirs: dict) -> dict:
    res = {}
    for key in [*SETS, "chain"]:
        diffs = []
        for i, t in theirs.items():
            a = mine[i]["sets"][key] if key != "chain" else mine[i]["chain"]
            b = t["sets"][key] if key != "chain" else t["chain"]
            if (a is None) != (b is None):
                diffs.append({"id": i, "ours": a, "datatrove": b})
        res[key] = {"agreement": round(1 - len(diffs) / len(theirs), 4),
                    "disagreements": len(diffs), "cases": diffs}  # fmt: skip
    return res


def decisions_changed(items: list[dict], base: dict, rules: RulesConf) -> dict[str, int]:
    """Keep/drop decisions of each set alone, and of the chain, that differ from `base`."""
    other = ours(items, rules)
    out = {s: sum((base[i]["sets"][s] is None) != (other[i]["sets"][s] is None) for i in base)
           for s in SETS}  # fmt: skip
    out["chain"] = sum((base[i]["chain"] is None) != (other[i]["chain"] is None) for i in base)
    return out


def per_doc_ms(items: list[dict], rules: RulesConf, rounds: int = 3) -> float:
    chain = rules.model_copy(update={"rule_sets": SETS})
    c = checks(chain)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for it in items:
            evaluate(it["text"], "en", chain, c)
        times.append((time.perf_counter() - t0) / len(items) * 1000)
    return round(statistics.median(times), 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchor-python", default=str(ROOT / "bench" / ".venv-anchor" / "bin" /
                                                  "python"))  # fmt: skip
    args = ap.parse_args()
    items = texts()
    WORK.mkdir(parents=True, exist_ok=True)
    src, dst = WORK / "texts.jsonl", WORK / "datatrove.jsonl"
    src.write_text("".join(json.dumps(it) + "\n" for it in items))
    t0 = time.perf_counter()
    subprocess.run([args.anchor_python, str(ROOT / "bench" / "rules_datatrove.py"), str(src),
                    str(dst)], check=True)  # fmt: skip
    theirs_s = time.perf_counter() - t0
    theirs = {d["id"]: d for d in map(json.loads, filter(None, dst.read_text().split("\n")))}

    preset = load_config(ROOT / "conf" / "fineweb.yaml").rules
    default = load_config(ROOT / "conf" / "default.yaml").rules
    default = default.model_copy(deep=True)
    default.c4.filter_no_terminal_punct = False  # the same chain as FineWeb's
    result: dict = {"texts": len(items), "datatrove_seconds": round(theirs_s, 1)}
    mine_preset = ours(items, preset)
    result["preset"] = agreement(mine_preset, theirs)
    result["default"] = agreement(ours(items, default), theirs)

    # each deliberate difference of the defaults, alone, from the preset
    toggles = {
        "word_splitter: regex": lambda r: setattr(r, "word_splitter", "regex"),
        "stop words case-insensitive": lambda r: setattr(
            r.gopher_quality, "stop_words_case_sensitive", False),
        "bullet/ellipsis lines over non-empty lines": lambda r: setattr(
            r.gopher_quality, "line_ratios_over", "non_empty"),
        "top n-gram must repeat": lambda r: setattr(
            r.gopher_repetition, "top_ngram_min_count", 2),
        "line ends stripped (FineWeb punctuation)": lambda r: setattr(
            r.fineweb, "strip_line_ends", True),
    }  # fmt: skip
    changes = {}
    for name, apply in toggles.items():
        r = preset.model_copy(deep=True)
        apply(r)
        changes[name] = decisions_changed(items, mine_preset, r)
    result["default_differences_decisions_changed"] = changes
    result["ms_per_document_chain"] = {
        "spacy_en (preset)": per_doc_ms(items, preset),
        "regex (default)": per_doc_ms(items, default),
    }

    for variant in ("preset", "default"):
        print(variant, {k: (v["agreement"], v["disagreements"])
                        for k, v in result[variant].items()})  # fmt: skip
    print("default differences, decisions changed (per set alone, chain):", changes)
    print("ms per document:", result["ms_per_document_chain"])
    dest = ROOT / "bench" / "results" / "rules_agreement.json"
    dest.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
