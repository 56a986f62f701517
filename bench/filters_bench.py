"""Benchmark language ID and the rule sets against extraction, per document, on one core.

On the 181 real news pages of ../shared/data/extraction/scrapinghub_aeb, in one process and
one run: decode + trafilatura (our extract stage), then fastText LID on the extracted texts
in Arrow-sized batches (as the langid stage calls it), then each rule set alone and the
default chain together. Rounds alternate the steps; per-document medians are reported, with
docs/s per core and the share of extraction's cost. Target (issue 3): LID and all default
rules together under 10% of extraction.

    python bench/filters_bench.py [--rounds 5]
Writes bench/results/filters.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extract_bench import AEB, RESULTS, WORK, build_warc  # noqa: E402

from curate_pipeline.config import Config, load_config  # noqa: E402
from curate_pipeline.document.extract import process_record  # noqa: E402
from curate_pipeline.document.langid import load_fasttext, predict_languages  # noqa: E402
from curate_pipeline.document.text.rules import checks, evaluate  # noqa: E402
from curate_pipeline.document.warc.records import RecordPolicy, iter_warc_rows  # noqa: E402
from curate_pipeline.stages.langid import lid_model_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def rows_of(path: Path, cfg: Config) -> list[dict]:
    with open(path, "rb") as fh:
        return list(iter_warc_rows(fh, 0, str(path), RecordPolicy.from_conf(cfg.read)))


def time_extract(rows: list[dict], cfg: Config) -> tuple[float, list[str]]:
    scope = uuid.uuid4().hex  # a fresh outcome cache: every round extracts every page
    t = time.perf_counter()
    texts = []
    for r in rows:
        doc = process_record(r, cfg.extract, cfg.read, scope=scope)
        if doc["text"]:
            texts.append(doc["text"])
    return time.perf_counter() - t, texts


def time_lid(model, texts: list[str], batch: int) -> float:
    t = time.perf_counter()
    for i in range(0, len(texts), batch):
        predict_languages(model, texts[i : i + batch])
    return time.perf_counter() - t


def time_rules(texts: list[str], cfg: Config, rule_sets: list[str]) -> float:
    rules = cfg.rules.model_copy(update={"rule_sets": rule_sets})
    chk = checks(rules)
    t = time.perf_counter()
    for text in texts:
        evaluate(text, "en", rules, chk)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if not AEB.is_dir():
        print(f"benchmark data not found at {AEB}", file=sys.stderr)
        return 2
    cfg = load_config(ROOT / "conf" / "default.yaml")
    warc = WORK / "filters.warc.gz"
    n_records, _, _ = build_warc(warc, 1)
    rows = rows_of(warc, cfg)
    model = load_fasttext(str(lid_model_path(cfg)))
    steps = {
        "lid": None,
        "gopher_repetition": ["gopher_repetition"],
        "gopher_quality": ["gopher_quality"],
        "default_rules": list(cfg.rules.rule_sets),
        "c4": ["c4"],
        "fineweb": ["fineweb"],
    }
    times: dict[str, list[float]] = {"extract": [], **{k: [] for k in steps}}
    texts: list[str] = []
    for _ in range(args.rounds):
        seconds, texts = time_extract(rows, cfg)
        times["extract"].append(seconds / len(rows))
        for name, sets in steps.items():
            if sets is None:
                s = time_lid(model, texts, cfg.spark.arrow_batch_rows)
            else:
                s = time_rules(texts, cfg, sets)
            times[name].append(s / len(texts))
    med = {k: statistics.median(v) for k, v in times.items()}
    filters = med["lid"] + med["default_rules"]
    result = {
        "records": n_records,
        "documents_with_text": len(texts),
        "mean_text_chars": round(sum(map(len, texts)) / len(texts)),
        "rounds": args.rounds,
        "ms_per_doc_median": {k: round(v * 1000, 3) for k, v in med.items()},
        "docs_per_s_per_core": {k: round(1 / v, 1) for k, v in med.items()},
        "share_of_extraction": {k: round(v / med["extract"], 4) for k, v in med.items()},
        "lid_plus_default_rules_share": round(filters / med["extract"], 4),
        "target_share": 0.10,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "filters.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(texts)} documents ({result['mean_text_chars']} chars mean), "
          f"median of {args.rounds} rounds, one core")  # fmt: skip
    print(f"{'step':<20}{'ms/doc':>10}{'docs/s':>10}{'vs extract':>12}")
    for k in times:
        print(
            f"{k:<20}{result['ms_per_doc_median'][k]:>10.3f}"
            f"{result['docs_per_s_per_core'][k]:>10.1f}{result['share_of_extraction'][k]:>12.2%}"
        )
    print(f"LID + default rules = {result['lid_plus_default_rules_share']:.2%} of extraction "
          f"(target < 10%)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
