"""Growth of the corpus half (everything after extraction: exact and near dedup, the kept
rows and their tokens, data/, rejected/, shards) from 0.3M to 1M to 3M documents: wall
time per document and the driver's peak memory per size.

Inputs: documents in the documents pass's shape, their text made from the real texts of
../shared/data/extraction (WCXB dev and scrapinghub ground truth: runs of 1-3 paragraphs,
cut to 1,500 characters, numbered so that no two are equal by accident), 30,000 documents an
"input file"; 8% exact copies and 4% near copies (a signature of an earlier document with 8
of its 112 values changed: estimated Jaccard 0.93) of earlier documents. Unique documents get
random MinHash signatures (the stage only compares them): computing 3M real ones would take
longer than the run measured. The run is the pipeline's own `corpus_half`
(curate_pipeline/run/corpus_half.py), in a process of its own, its memory sampled by role (PSS).

    python bench/growth_bench.py [--sizes 300000 1000000 3000000]

Writes bench/results/growth.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus_bench import real_texts  # noqa: E402
from pss import PeakPss  # noqa: E402

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.document.dedup.normalize import exact_key  # noqa: E402
from curate_pipeline.document.warc.records import OFFSET_BITS  # noqa: E402
from curate_pipeline.stages.near_dedup import hasher_of  # noqa: E402

WORK = ROOT / "bench" / "work" / "growth"
CFG = ROOT / "conf" / "default.yaml"
PER_FILE = 30_000
BATCH = 100_000


def _paragraph_pool() -> list[str]:
    pool = []
    for t in real_texts():
        paras = [p for p in t.split("\n") if len(p.split()) >= 8]
        for i in range(0, len(paras), 2):
            pool.append("\n".join(paras[i : i + 1 + (i % 3)])[:1500])
    return pool


def build_docs(n: int, out: Path, seed: int = 0) -> None:
    cfg = load_config(CFG)
    hasher = hasher_of(cfg)
    perm = hasher.num_perm
    pool = _paragraph_pool()
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    earlier: list[tuple[str, str, list[int], list[int]]] = []  # text, key, sig, bands
    for b, start in enumerate(range(0, n, BATCH)):
        rows = []
        for i in range(start, min(n, start + BATCH)):
            roll = rng.random()
            if roll < 0.08 and earlier:
                text, key, sig, bands = earlier[rng.randrange(len(earlier))]
            elif roll < 0.12 and earlier:
                text0, _, sig0, _ = earlier[rng.randrange(len(earlier))]
                text = text0 + " (edited)"
                s = np.array(sig0, dtype=np.int32).view(np.uint32)
                s[nprng.choice(perm, 8, replace=False)] = nprng.integers(0, 2**32, 8)
                sig, bands = s.view(np.int32).tolist(), hasher.band_keys(s).tolist()
                key = exact_key(text)
            else:
                text = f"{pool[rng.randrange(len(pool))]}\n[{i}]"
                s = nprng.integers(0, 2**32, perm, dtype=np.uint64).astype(np.uint32)
                sig, bands = s.view(np.int32).tolist(), hasher.band_keys(s).tolist()
                key = exact_key(text)
                if len(earlier) < 50_000:
                    earlier.append((text, key, sig, bands))
            fi, off = divmod(i, PER_FILE)
            rows.append({
                "doc_id": f"<urn:growth:{i}>", "url": f"https://site-{i % 997}.example/{i}",
                "host": f"site-{i % 997}.example", "warc_date": "2024-05-22T00:00:00Z",
                "warc_type": "response", "warc_file": f"growth-{fi:05d}.warc.gz",
                "warc_offset": off * 1000, "crawl_pos": (fi << OFFSET_BITS) | (off * 1000),
                "http_status": 200, "content_type": "text/html", "skipped_bytes": None,
                "charset": "utf-8", "text": text, "reject_stage": None, "reject_reason": None,
                "reject_detail": None, "lang": "en", "lang_score": 0.95, "exact_key": key,
                "minhash": sig, "bands": bands,
            })  # fmt: skip
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), out / f"part-{b:05d}.parquet",
                       compression="zstd")  # fmt: skip


def stored_documents(spark, docs_dir: Path):
    """The built documents as the documents pass stores them today: the columns it has gained
    since they were built (langid's recipe key, the stored text length, ...) added."""
    from pyspark.sql import functions as F

    from curate_pipeline.stages.schema import DOC_SCHEMA, spark_schema

    docs = spark.read.parquet(str(docs_dir))
    if "lang_key" not in docs.columns:  # langid's recipe key (null: no per-language recipes)
        docs = docs.withColumn("lang_key", F.lit(None).cast("string"))
    for f in spark_schema(DOC_SCHEMA).fields:
        if f.name not in docs.columns:
            docs = docs.withColumn(
                f.name,
                F.octet_length("text").cast("long")
                if f.name == "text_bytes"
                else F.lit(None).cast(f.dataType),
            )
    return docs


SCHEMA = pa.schema([
    ("doc_id", pa.string()), ("url", pa.string()), ("host", pa.string()),
    ("warc_date", pa.string()), ("warc_type", pa.string()), ("warc_file", pa.string()),
    ("warc_offset", pa.int64()), ("crawl_pos", pa.int64()), ("http_status", pa.int32()),
    ("content_type", pa.string()), ("skipped_bytes", pa.int64()), ("charset", pa.string()),
    ("text", pa.string()), ("reject_stage", pa.string()), ("reject_reason", pa.string()),
    ("reject_detail", pa.string()), ("lang", pa.string()), ("lang_score", pa.float64()),
    ("exact_key", pa.string()), ("minhash", pa.list_(pa.int32())),
    ("bands", pa.list_(pa.int64())),
])  # fmt: skip

RUN = """
import json, sys, time
from pathlib import Path
from curate_pipeline.config import load_config
from curate_pipeline.engine.spark import get_spark
from curate_pipeline.location import Location
from curate_pipeline.run.corpus_half import corpus_half
from curate_pipeline.stages.registry import enabled_stages
docs_dir, out, n_inputs = Path(sys.argv[1]), Location.of(sys.argv[2]), int(sys.argv[4])
cfg = load_config(sys.argv[3])
cfg.rules.rule_sets = []  # the documents carry no rule statistics
spark = get_spark(cfg)
t0 = time.perf_counter()
sys.path.insert(0, "bench")
from growth_bench import stored_documents
docs = stored_documents(spark, docs_dir)
enabled = [s for s in enabled_stages(cfg) if s.corpus or s.final]
timers = {s.name: spark.sparkContext.accumulator(0.0) for s in enabled}
read = docs.count()
half = corpus_half(spark, cfg, docs, read, n_inputs, out, "growth", ["exact_key", "minhash",
                   "bands"], enabled, {s.name: None for s in enabled}, "bench", timers)
print(json.dumps({"seconds": time.perf_counter() - t0, "counts": half.outcomes.counts,
                  "data_files": len(half.published["data"]), "shards": half.budget["shards"],
                  "tokens": half.budget["total_tokens"]}))
"""


def measured(docs: Path, out: Path, n_inputs: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", RUN, str(docs), str(out), str(CFG),
                             str(n_inputs)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    sampler = PeakPss(proc.pid, every=0.5)
    stdout, _ = proc.communicate()
    peaks = sampler.stop()
    if proc.returncode:
        raise RuntimeError("the corpus half failed")
    result = json.loads(stdout.decode().strip().splitlines()[-1])
    result["peak_pss_mib"] = peaks
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[300_000, 1_000_000, 3_000_000])
    args = ap.parse_args()
    results: dict = {"sizes": {}}
    for n in args.sizes:
        docs = WORK / f"docs-{n}"
        if not (docs / "_built").exists():
            t0 = time.perf_counter()
            build_docs(n, docs)
            (docs / "_built").write_text("")
            print(f"built {n:,} documents in {time.perf_counter() - t0:.0f} s", flush=True)
        out = WORK / f"out-{n}"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        r = measured(docs, out, math.ceil(n / PER_FILE))
        results["sizes"][str(n)] = {
            "seconds": round(r["seconds"], 1),
            "us_per_document": round(r["seconds"] / n * 1e6, 1),
            "peak_pss_mib": r["peak_pss_mib"],
            "kept": r["counts"]["kept"],
            "rejected": r["counts"]["rejected"],
            "data_files": r["data_files"],
            "shards": r["shards"],
            "tokens": r["tokens"],
        }
        print(n, json.dumps(results["sizes"][str(n)]), flush=True)
    sizes = sorted(results["sizes"], key=int)
    lo, hi = results["sizes"][sizes[0]], results["sizes"][sizes[-1]]
    n0, n1 = int(sizes[0]), int(sizes[-1])
    results["driver_peak_ratio"] = round(
        hi["peak_pss_mib"].get("driver_python", 0) / max(1, lo["peak_pss_mib"]["driver_python"]),
        2,
    )
    results["jvm_peak_ratio"] = round(
        hi["peak_pss_mib"].get("jvm", 0) / max(1, lo["peak_pss_mib"].get("jvm", 1)), 2
    )
    results["time_ratio"] = round(hi["seconds"] / lo["seconds"], 2)
    results["n_log_n_ratio"] = round(n1 * math.log(n1) / (n0 * math.log(n0)), 2)
    print(json.dumps({k: v for k, v in results.items() if k != "sizes"}))
    dest = ROOT / "bench" / "results" / "growth.json"
    dest.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
