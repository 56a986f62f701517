"""Benchmark the tokenizer stage against tiktoken's own batch encoder, one core, same texts.

Texts: the 697 documents of ../shared/data/text (real crawl text, 53 languages), falling
back to the 181 extracted news pages' ground truth. "Stage" is the tokenize stage's batch
function as Spark runs it (rows in, rows with source, tokens and count out), over Arrow
batches of `spark.arrow_batch_rows` rows, fed through pyarrow like mapInArrow does; "plain"
is `encode_ordinary_batch` over the same texts in a loop. Alternating rounds, medians, and
the median of per-round ratios (target: stage at least 0.8x plain).

    python bench/tokens_bench.py [--rounds 5]
Writes bench/results/tokens.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import pyarrow as pa
import tiktoken

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.stages.schema import spark_schema  # noqa: E402
from curate_pipeline.stages.tokenize import TOKEN_FIELDS, tokenize  # noqa: E402

RESULTS = ROOT / "bench" / "results"
DOLMA = ROOT.parent / "shared" / "data" / "text"


class _Capture:
    """Stands in for a DataFrame: records the function and schema mapInArrow would get."""

    schema = spark_schema(pa.schema([pa.field("url", pa.string()), pa.field("text", pa.string()),
                                     pa.field("warc_file", pa.string())]))  # fmt: skip

    def mapInArrow(self, fn, schema):  # noqa: N802 (Spark's name)
        self.fn = fn
        return self


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    path = next(DOLMA.glob("*.jsonl"), None)
    if path is None:
        print(f"benchmark data not found at {DOLMA}", file=sys.stderr)
        return 2
    texts = [json.loads(x)["text"] for x in path.read_text(encoding="utf-8").split("\n") if x]
    cfg = load_config(ROOT / "conf" / "default.yaml")
    stage = tokenize(None, _Capture(), cfg).fn  # the exact function the stage runs
    n = cfg.spark.arrow_batch_rows
    batches = [
        pa.RecordBatch.from_pylist(
            [{"url": f"https://x.example/{i}", "text": t, "warc_file": "bench.warc.gz"}
             for i, t in enumerate(texts[j : j + n])]
        )
        for j in range(0, len(texts), n)
    ]  # fmt: skip
    enc = tiktoken.get_encoding(cfg.tokenizer.name)
    stage_s, plain_s, total = [], [], 0
    for _ in range(args.rounds):
        t = time.perf_counter()
        total = sum(sum(b.column("n_tokens").to_pylist()) for b in stage(iter(batches)))
        stage_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        for j in range(0, len(texts), n):
            enc.encode_ordinary_batch(texts[j : j + n], num_threads=1)
        plain_s.append(time.perf_counter() - t)
    ratios = [p / s for s, p in zip(stage_s, plain_s, strict=True)]
    result = {
        "documents": len(texts),
        "tokens": total,
        "rounds": args.rounds,
        "stage_tokens_per_s": round(total / statistics.median(stage_s)),
        "plain_tokens_per_s": round(total / statistics.median(plain_s)),
        "ratio_stage_to_plain": round(statistics.median(ratios), 3),
        "ratios_per_round": [round(r, 3) for r in ratios],
        "target": 0.8,
        "fields": [f.name for f in TOKEN_FIELDS],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "tokens.json").write_text(json.dumps(result, indent=2) + "\n")
    r = result
    print(f"{len(texts)} documents, {total} tokens; stage {r['stage_tokens_per_s']:,} "
          f"tokens/s, plain encode_ordinary_batch {r['plain_tokens_per_s']:,} tokens/s: "
          f"{r['ratio_stage_to_plain']}x (per round {r['ratios_per_round']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
