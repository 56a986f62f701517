"""Benchmark the quality classifier: Spark training time, held-out accuracy, scoring cost.

Training data is real: "good" = the article bodies (ground truth) of the 181 scrapinghub news
pages, "bad" = the 697 documents extracted from one 2019 Common Crawl WARC (dolma sample),
both from ../shared/data. Both backends are trained through `train_quality` in Spark
local[2] (20% held out), then, in one process, extraction of the 181 pages and scoring of
their extracted texts alternate for several rounds: per-document medians, docs/s per core and
the share of extraction's cost (target: under 5%).

    python bench/quality_bench.py [--rounds 5]
Writes bench/results/quality.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extract_bench import AEB, RESULTS, WORK, build_warc  # noqa: E402
from filters_bench import rows_of, time_extract  # noqa: E402

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.document.quality.model import load_quality_model  # noqa: E402
from curate_pipeline.engine.spark import get_spark  # noqa: E402
from curate_pipeline.run.train_quality import train_quality  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOLMA = ROOT.parent / "shared" / "data" / "text"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    crawl = sorted(DOLMA.glob("*.jsonl"))
    if not AEB.is_dir() or not crawl:
        print(f"benchmark data not found under {AEB.parent.parent}", file=sys.stderr)
        return 2
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.quality.train.heldout_fraction = 0.2
    # fastText's defaults (5 epochs, lr 0.1) underfit 700 documents: it calls everything bad.
    cfg.quality.train.fasttext = {**cfg.quality.train.fasttext, "epoch": 25, "lr": 0.5}
    WORK.mkdir(parents=True, exist_ok=True)
    truth = json.loads((AEB / "ground-truth.json").read_text())
    good = WORK / "quality_good.jsonl"
    good.write_text("".join(json.dumps({"text": v["articleBody"]}) + "\n" for v in truth.values()))

    t = time.perf_counter()
    spark = get_spark(cfg)
    startup = time.perf_counter() - t
    training = {}
    models = {}
    for backend, name in (("naive_bayes", "quality_bench_nb.json"), ("fasttext", "qb_ft.bin")):
        cfg.quality.backend = backend
        out = WORK / name
        t = time.perf_counter()
        report = train_quality(spark, [str(good)], [str(p) for p in crawl], out, cfg)
        training[backend] = {
            "seconds": round(time.perf_counter() - t, 2),
            "train_documents": report["train_documents"],
            "heldout": report["heldout"],
        }
        models[backend] = load_quality_model(out, cfg.quality)
    spark.stop()

    warc = WORK / "filters.warc.gz"
    build_warc(warc, 1)
    rows = rows_of(warc, cfg)
    times: dict[str, list[float]] = {"extract": [], "naive_bayes": [], "fasttext": []}
    texts: list[str] = []
    for _ in range(args.rounds):
        seconds, texts = time_extract(rows, cfg)
        times["extract"].append(seconds / len(rows))
        for backend, model in models.items():
            t = time.perf_counter()
            for i in range(0, len(texts), cfg.spark.arrow_batch_rows):
                model.score_texts(texts[i : i + cfg.spark.arrow_batch_rows])
            times[backend].append((time.perf_counter() - t) / len(texts))
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "training_data": {"good": "181 news article bodies", "bad": f"{crawl[0].name}"},
        "fasttext_params": cfg.quality.train.fasttext,
        "spark_startup_s": round(startup, 2),
        "training": training,
        "scoring_documents": len(texts),
        "rounds": args.rounds,
        "ms_per_doc_median": {k: round(v * 1000, 3) for k, v in med.items()},
        "docs_per_s_per_core": {k: round(1 / v, 1) for k, v in med.items()},
        "share_of_extraction": {k: round(v / med["extract"], 4) for k, v in med.items()},
        "target_share": 0.05,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quality.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"Spark start-up {startup:.1f} s")
    for backend, tr in training.items():
        h = tr["heldout"]
        print(
            f"train {backend:<12} {tr['seconds']:>7.1f} s  held-out accuracy "
            f"{h['accuracy']:.3f} on {h['documents']} (good {h['good']}, bad {h['bad']})"
        )
    print(f"{'step':<14}{'ms/doc':>10}{'docs/s':>10}{'vs extract':>12}")
    for k in times:
        ms, rate = result["ms_per_doc_median"][k], result["docs_per_s_per_core"][k]
        print(f"{k:<14}{ms:>10.3f}{rate:>10.1f}{result['share_of_extraction'][k]:>12.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
