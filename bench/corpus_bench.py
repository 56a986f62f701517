"""Memory of the corpus half while the corpus grows 4x: exact dedup, near dedup, the outcome
counts (the report's aggregates) and the mixture's shard writer, run on real texts with
one giant duplicate group and one giant near-duplicate cluster, as a crawl of template pages
has. Peak PSS per role (driver Python, JVM, Python workers) is sampled every 0.5 s.

Inputs: the WCXB dev and scrapinghub ground-truth texts (../shared/data/extraction), each
document the head of one real text and the tail of another, with a one-word edit; 15% of
the rows are copies of one page (one exact group), 10% are edits of another (one near
cluster). The per-document
columns (exact key, MinHash signature and band keys, token ids) are computed here with the
pipeline's own step functions before the measured run, so the run measures the corpus
stages only.

    python bench/corpus_bench.py [--rows 10000] [--factor 4]

Writes bench/results/corpus.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pss import PeakPss  # noqa: E402

from curate_pipeline.config import load_config  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "extraction"
WORK = ROOT / "bench" / "work" / "corpus"
CFG = ROOT / "conf" / "default.yaml"


def real_texts() -> list[str]:
    out = []
    for gt in sorted((DATA / "wcxb_dev" / "ground-truth").glob("*.json")):
        text = json.loads(gt.read_text())["ground_truth"].get("main_content") or ""
        if len(text.split()) >= 80:
            out.append(text)
    aeb = json.loads((DATA / "scrapinghub_aeb" / "ground-truth.json").read_text())
    for _, item in sorted(aeb.items()):
        text = item.get("articleBody") or ""
        if len(text.split()) >= 80:
            out.append(text)
    return out


def edit(text: str, rng: random.Random) -> str:
    """`text` with one word replaced by another of its words: a near duplicate."""
    words = text.split(" ")
    words[rng.randrange(len(words))] = words[rng.randrange(len(words))] + "s"
    return " ".join(words)


def _steps(rows: list[dict]) -> list[dict]:
    from curate_pipeline.stages.exact_dedup import key_step
    from curate_pipeline.stages.near_dedup import signature_step
    from curate_pipeline.stages.tokenize import tokens_step

    cfg = load_config(CFG)
    for step in (key_step(None, cfg), signature_step(None, cfg), tokens_step(None, cfg)):
        step.check(rows)  # sets the step's fields on every row (no drops)
    return rows


def build_docs(n: int, out: Path, seed: int = 0) -> None:
    """`n` kept documents in the documents pass's shape (the columns the corpus half reads)."""
    texts = real_texts()
    rng = random.Random(seed)
    template, near_base = texts[0], texts[1]
    rows = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.15:
            text = template  # one exact group of ~15% of the corpus
        elif roll < 0.25:
            text = edit(near_base, rng)  # one near cluster of ~10%
        else:  # the head of one real text and the tail of another: distinct documents
            a, b = (texts[rng.randrange(len(texts))].split("\n") for _ in range(2))
            text = edit("\n".join(a[: max(1, len(a) // 2)] + b[len(b) // 2 :]), rng)
        rows.append({
            "doc_id": f"urn:bench:{i}", "url": f"https://recrawl-{i % 97}.example/{i}",
            "text": text, "source": "web", "lang": "en", "crawl_pos": i, "skipped_bytes": None,
            "warc_file": f"bench-{i // 1000:05d}.warc.gz",
            "reject_stage": None, "reject_reason": None, "reject_detail": None,
        })  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    batches = [rows[i : i + 500] for i in range(0, len(rows), 500)]
    with ProcessPoolExecutor(2) as pool:
        for k, done in enumerate(pool.map(_steps, batches)):
            table = pa.Table.from_pylist(done)
            nulls = {"reject_stage": pa.string(), "reject_reason": pa.string(),
                     "reject_detail": pa.string(), "skipped_bytes": pa.int64()}  # fmt: skip
            for c, t in nulls.items():  # all null: give their types
                table = table.set_column(table.schema.get_field_index(c), c,
                                         table.column(c).cast(t))  # fmt: skip
            pq.write_table(table, out / f"part-{k:05d}.parquet")


RUN = """
import json, sys, time
from pathlib import Path
from pyspark.sql import functions as F
from curate_pipeline.config import load_config
from curate_pipeline.engine.spark import get_spark
from curate_pipeline.stages.exact_dedup import exact_dedup
from curate_pipeline.stages.near_dedup import near_dedup
from curate_pipeline.outputs.mixture.write import write_mixture
from curate_pipeline.run.outcomes import count_outcomes
docs_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
cfg = load_config(sys.argv[3])
cfg.shards.rows_per_shard = 2000
spark = get_spark(cfg)
spark.sparkContext.setCheckpointDir(str(out / "_checkpoints"))
t0 = time.perf_counter()
docs = spark.read.parquet(str(docs_dir))
kept = lambda df: df.where(F.col("reject_reason").isNull())
exact = exact_dedup(spark, kept(docs), cfg)
exact.write.parquet(str(out / "exact"))
exact = spark.read.parquet(str(out / "exact"))
near = near_dedup(spark, kept(exact), cfg)
near.write.parquet(str(out / "near"))
near = spark.read.parquet(str(out / "near"))
o = count_outcomes(docs.count(), [docs, exact, near], docs)
budget = write_mixture(spark, kept(near), cfg, out, o.sources)
print(json.dumps({"seconds": time.perf_counter() - t0, "counts": o.counts,
                  "distributions": {k: {str(a): b for a, b in v.items()}
                                    for k, v in getattr(o, "distributions", {}).items()},
                  "shards": budget["shards"]}))
"""


def measured(docs: Path, out: Path, code: Path = ROOT) -> dict:
    """The corpus half over `docs`, with the pipeline package of the checkout `code`."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    cfg = code / "conf" / "default.yaml"  # its own defaults: config keys differ by version
    proc = subprocess.Popen([sys.executable, "-c", RUN, str(docs), str(out), str(cfg)],
                            cwd=code, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    sampler = PeakPss(proc.pid, every=0.5)
    stdout, _ = proc.communicate()
    peaks = sampler.stop()
    if proc.returncode:
        raise RuntimeError("the corpus run failed")
    result = json.loads(stdout.decode().strip().splitlines()[-1])
    result["peak_pss_mib"] = peaks
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--before", help="a git checkout of an earlier version, run side by side "
                                     "on the larger corpus (e.g. a `git worktree`)")  # fmt: skip
    args = ap.parse_args()
    results = {}
    for n in (args.rows, args.rows * args.factor):
        docs = WORK / f"docs-{n}"
        if not docs.is_dir():
            t0 = time.perf_counter()
            build_docs(n, docs)
            print(f"built {n} documents in {time.perf_counter() - t0:.0f} s", flush=True)
        out = WORK / f"out-{n}"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        r = measured(docs, out)
        exact_groups = r["distributions"]["exact_group_sizes"]
        near_sizes = r["distributions"]["near_cluster_sizes"]
        results[str(n)] = {
            "seconds": round(r["seconds"], 1),
            "peak_pss_mib": r["peak_pss_mib"],
            "kept": r["counts"]["kept"],
            "largest_exact_group": max(map(int, exact_groups)) if exact_groups else 1,
            "largest_near_cluster": max(map(int, near_sizes)) if near_sizes else 1,
            "shards": r["shards"],
        }
        print(n, json.dumps(results[str(n)]), flush=True)
    small, large = (results[str(n)] for n in (args.rows, args.rows * args.factor))
    results["peak_ratio_large_to_small"] = {
        k: round(large["peak_pss_mib"].get(k, 0) / max(1, small["peak_pss_mib"].get(k, 0)), 2)
        for k in small["peak_pss_mib"]
    }
    print(json.dumps(results["peak_ratio_large_to_small"]))
    if args.before:
        n = args.rows * args.factor
        out = WORK / f"out-{n}-before"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        r = measured(WORK / f"docs-{n}", out, Path(args.before))
        rev = subprocess.run(["git", "-C", args.before, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
        results["before"] = {
            "revision": rev, "rows": n, "seconds": round(r["seconds"], 1),
            "peak_pss_mib": r["peak_pss_mib"], "kept": r["counts"]["kept"],
        }  # fmt: skip
        print("before", json.dumps(results["before"]), flush=True)
    dest = ROOT / "bench" / "results" / "corpus.json"
    dest.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
