"""Benchmark deduplication: LSH accuracy, signature throughput, and scaling on Spark.

1. Accuracy (no Spark): pairs of shingle sets planted at known Jaccard 0.30 ... 1.00; per
   bin, the measured candidate rate (sharing a band) against 1 - (1 - s^r)^b, and after
   verification (estimated Jaccard >= threshold) the precision and recall against the exact
   Jaccard.
2. Signature throughput per core on the 697 real documents of ../shared/data/text: our
   vectorised signatures against a per-shingle datasketch `MinHash.update` loop with the same
   parameters, in the same run, alternating, medians (target: at least 10x).
3. Scaling: 10k, 100k and 1M synthetic short documents with planted exact and near
   duplicates, the exact_dedup and near_dedup stages in Spark local[2] as the pipeline runs
   them (Parquet in, Parquet out): wall time, peak memory of the driver's Python process and
   of the JVM and its Python workers, and the time ratio between sizes (target: 1M/100k at
   most 12; driver memory flat).

    python bench/dedup_bench.py [--sizes 10000 100000 1000000] [--rounds 3]
Writes bench/results/dedup.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from datasketch import MinHash

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import Config, load_config  # noqa: E402
from curate_pipeline.document.dedup.minhash import (  # noqa: E402
    MinHasher,
    candidate_probability,
    estimate_jaccard,
    shingles,
)

WORK = ROOT / "bench" / "work" / "dedup"
RESULTS = ROOT / "bench" / "results"
DOLMA = ROOT.parent / "shared" / "data" / "text"


def accuracy(cfg: Config, pairs_per_bin: int = 400) -> dict:
    c = cfg.near_dedup
    hasher = MinHasher(c.shingle_size, c.bands, c.rows, c.seed)
    rng = np.random.default_rng(7)
    bins = [round(x, 2) for x in np.arange(0.30, 1.001, 0.05)]
    out = []
    flagged_true = flagged = positives = found = 0
    for j in bins:
        m = 200  # shingles per document
        x = int(round(2 * m * j / (1 + j)))  # |A & B| for |A| = |B| = m and Jaccard j
        cand = verified = 0
        for _ in range(pairs_per_bin):
            pool = rng.choice(2**32 - 1, size=2 * m - x, replace=False).astype(np.uint64)
            a, b = pool[:m], np.concatenate([pool[:x], pool[m:]])
            exact = x / (2 * m - x)
            sa, sb = hasher.signature_of_hashes(a), hasher.signature_of_hashes(b)
            is_cand = bool(np.any(hasher.band_keys(sa) == hasher.band_keys(sb)))
            ok = is_cand and estimate_jaccard(sa, sb) >= c.threshold
            cand += is_cand
            verified += ok
            flagged += ok
            flagged_true += ok and exact >= c.threshold
            positives += exact >= c.threshold
            found += ok and exact >= c.threshold
        out.append({
            "jaccard": j,
            "candidate_rate": cand / pairs_per_bin,
            "theory": round(candidate_probability(j, c.bands, c.rows), 4),
            "kept_after_verification": verified / pairs_per_bin,
        })  # fmt: skip
    return {
        "bands": c.bands,
        "rows": c.rows,
        "threshold": c.threshold,
        "pairs_per_bin": pairs_per_bin,
        "bins": out,
        "max_abs_error_vs_curve": max(abs(b["candidate_rate"] - b["theory"]) for b in out),
        "precision": flagged_true / flagged if flagged else None,
        "recall": found / positives if positives else None,
    }


def throughput(cfg: Config, rounds: int) -> dict:
    c = cfg.near_dedup
    texts = [json.loads(x)["text"] for x in next(DOLMA.glob("*.jsonl")).read_text().split("\n")
             if x]  # fmt: skip
    texts = [t for t in texts if t.strip()]
    hasher = MinHasher(c.shingle_size, c.bands, c.rows, c.seed)
    hasher.signature("warm up")
    ours, loop = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        for text in texts:
            hasher.signature(text)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        for text in texts:
            mh = MinHash(num_perm=hasher.num_perm, seed=c.seed, scheme="legacy")
            for sh in shingles(text, c.shingle_size):
                mh.update(sh.encode("utf-8"))
        loop.append(time.perf_counter() - t)
    o, lp = statistics.median(ours), statistics.median(loop)
    return {
        "documents": len(texts),
        "rounds": rounds,
        "ours_docs_per_s": round(len(texts) / o, 1),
        "update_loop_docs_per_s": round(len(texts) / lp, 1),
        "ratio_of_medians": round(lp / o, 2),
        "ratio": round(statistics.median(b / a for a, b in zip(ours, loop, strict=True)), 2),
        "ratios_per_round": [round(b / a, 2) for a, b in zip(ours, loop, strict=True)],
    }


def synthetic(path: Path, n: int, seed: int = 0) -> None:
    """n short documents (30-80 words); 10% exact copies (case and spacing changed) and 10%
    near copies (three words replaced) of earlier documents."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20000)]
    writer = None
    batch: dict[str, list] = {"doc_id": [], "crawl_pos": [], "text": []}
    texts: list[str] = []
    for i in range(n):
        r = rng.random()
        if texts and r < 0.1:
            text = "  " + rng.choice(texts).upper()
        elif texts and r < 0.2:
            words = rng.choice(texts).split()
            for _ in range(3):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            text = " ".join(words)
        else:
            text = " ".join(rng.choices(vocab, k=rng.randint(30, 80)))
        if len(texts) < 50_000:
            texts.append(text)
        batch["doc_id"].append(f"doc{i}")
        batch["crawl_pos"].append(i)
        batch["text"].append(text)
        if len(batch["doc_id"]) == 100_000 or i == n - 1:
            nulls = pa.nulls(len(batch["doc_id"]), pa.string())
            table = pa.table(
                {**batch, "reject_stage": nulls, "reject_reason": nulls, "reject_detail": nulls}
            )
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            batch = {k: [] for k in batch}
    writer.close()


class PeakMemory:
    """Peak RSS of this process, and of its child processes (JVM + Python workers)."""

    def __init__(self) -> None:
        self.driver = self.children = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            try:
                self.driver = max(self.driver, me.memory_info().rss)
                kids = sum(p.memory_info().rss for p in me.children(recursive=True))
                self.children = max(self.children, kids)
            except psutil.Error:
                pass
            time.sleep(0.2)

    def __enter__(self) -> PeakMemory:
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def scaling(cfg: Config, sizes: list[int]) -> dict:
    from curate_pipeline.engine.spark import get_spark
    from curate_pipeline.run.stage_store import materialize
    from curate_pipeline.stages.exact_dedup import exact_dedup
    from curate_pipeline.stages.near_dedup import near_dedup

    spark = get_spark(cfg, "local[2]")
    out = {}
    for n in sizes:
        work = WORK / f"n{n}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        src = work / "docs.parquet"
        # generated in another process: the driver's peak memory is then the pipeline's own
        subprocess.run([sys.executable, __file__, "--generate", str(src), str(n)], check=True)
        spark.sparkContext.setCheckpointDir(str(work / "checkpoints"))
        docs = spark.read.parquet(str(src))
        with PeakMemory() as mem:
            t = time.perf_counter()
            ex, r1 = materialize(
                spark, "exact_dedup", work / "exact", str(n),
                lambda d=docs: exact_dedup(spark, d, cfg), "zstd", force=True,
            )  # fmt: skip
            kept = ex.where("reject_reason is null")
            near, r2 = materialize(
                spark, "near_dedup", work / "near", str(n),
                lambda k=kept: near_dedup(spark, k, cfg), "zstd", force=True,
            )  # fmt: skip
            seconds = time.perf_counter() - t
        # side by side: each candidate verified against its bucket's first member only
        star = cfg.model_copy(deep=True)
        star.near_dedup.all_pairs = 0
        near_star, r3 = materialize(
            spark, "near_dedup", work / "near_star", str(n),
            lambda k=kept, s=star: near_dedup(spark, k, s), "zstd", force=True,
        )  # fmt: skip
        c = {r["reject_stage"]: r["count"] for r in
             ex.groupBy("reject_stage").count().union(near.groupBy("reject_stage").count())
             .collect()}  # fmt: skip
        out[str(n)] = {
            "seconds": round(seconds, 1),
            "exact_seconds": round(r1.seconds, 1),
            "near_seconds": round(r2.seconds, 1),
            "docs_per_s": round(n / seconds, 1),
            "exact_dups": c.get("exact_dup", 0),
            "near_dups": c.get("near_dup", 0),
            "near_seconds_first_member_only": round(r3.seconds, 1),
            "near_dups_first_member_only": near_star.where("reject_stage = 'near_dup'").count(),
            "peak_driver_python_mb": round(mem.driver / 2**20),
            "peak_jvm_and_workers_mb": round(mem.children / 2**20),
        }
        print(f"{n:>9} docs: {out[str(n)]}", flush=True)
        shutil.rmtree(work / "checkpoints", ignore_errors=True)
    spark.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--all-pairs", type=int, default=None, help="near_dedup.all_pairs")
    ap.add_argument("--generate", nargs=2, metavar=("PATH", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        synthetic(Path(args.generate[0]), int(args.generate[1]))
        return 0
    cfg = load_config(ROOT / "conf" / "default.yaml")
    if args.all_pairs is not None:
        cfg.near_dedup.all_pairs = args.all_pairs
    result: dict = {}
    result["accuracy"] = acc = accuracy(cfg)
    print(f"LSH {acc['bands']}x{acc['rows']}, threshold {acc['threshold']}: max |rate - curve| "
          f"{acc['max_abs_error_vs_curve']:.3f}, precision {acc['precision']:.3f}, "
          f"recall {acc['recall']:.3f}")  # fmt: skip
    for b in acc["bins"]:
        kept = b["kept_after_verification"]
        print(f"  J={b['jaccard']:.2f} candidates {b['candidate_rate']:.3f} (curve "
              f"{b['theory']:.3f}), kept after verification {kept:.3f}")  # fmt: skip
    if DOLMA.is_dir():
        result["signatures"] = th = throughput(cfg, args.rounds)
        print(f"signatures: ours {th['ours_docs_per_s']} docs/s, MinHash.update loop "
              f"{th['update_loop_docs_per_s']} docs/s: {th['ratio']}x (median of per-round "
              f"ratios {th['ratios_per_round']})")  # fmt: skip
    if args.sizes:
        result["scaling"] = sc = scaling(cfg, args.sizes)
        keys = sorted(sc, key=int)
        result["scaling_ratios"] = {
            f"{b}/{a}": round(sc[b]["seconds"] / sc[a]["seconds"], 2)
            for a, b in zip(keys, keys[1:], strict=False)
        }
        print(f"time ratios: {result['scaling_ratios']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "dedup.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
