"""Adding 1% of the documents to an output (issue 52): the corpus half of the append (the new
documents deduplicated against the output's dedup index and among themselves, their kept
rows, data/, rejected/, index/, shards) beside the full corpus pass that made the output,
side by side in one run, with the driver's peak memory of each.

Inputs: growth_bench.py's documents (real paragraphs from ../shared/data/extraction, 8% exact
and 4% near copies of earlier documents, 30,000 a file): all but the last file's are the
output's (a full corpus half, committed as version 1 with its index, as a run does), the last
file's are added (N = 1M: 10,000 documents, 1%). The append is the pipeline's own
`corpus_half` with the output itself in `dedup.against`, which is what run/orchestrate.py
does when a run appends (run/increment.py). Each run in a process of its own, memory
sampled by role (PSS).

    python bench/append_bench.py [--size 1000000]

Writes bench/results/append.json (by size).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from growth_bench import CFG, PER_FILE, WORK, build_docs  # noqa: E402
from pss import PeakPss  # noqa: E402

RUN = """
import json, sys, time
from pathlib import Path
from pyspark.sql import functions as F
from curate_pipeline.outputs.publish import versions
from curate_pipeline.config import load_config
from curate_pipeline.document.warc.records import OFFSET_BITS
from curate_pipeline.engine.spark import get_spark
from curate_pipeline.location import Location
from curate_pipeline.run.corpus_half import corpus_half
from curate_pipeline.stages.prior_dedup import index_settings
from curate_pipeline.stages.registry import enabled_stages
mode, docs_dir, out, n_inputs, first_new = sys.argv[1], Path(sys.argv[2]), \\
    Location.of(sys.argv[3]), int(sys.argv[5]), int(sys.argv[6])
cfg = load_config(sys.argv[4])
cfg.rules.rule_sets = []  # the documents carry no rule statistics
cfg.spark.conf["spark.ui.enabled"] = "true"  # its REST API: each step's shuffle bytes
if mode == "append":
    cfg.dedup.against = [str(out)]  # what an appending run does (run/increment.py)
spark = get_spark(cfg)
t0 = time.perf_counter()
sys.path.insert(0, "bench")
from growth_bench import stored_documents
docs = stored_documents(spark, docs_dir)
split = F.col("crawl_pos") >= F.lit(first_new << OFFSET_BITS)
docs = docs.where(split if mode == "append" else ~split)
enabled = [s for s in enabled_stages(cfg) if s.corpus or s.final]
timers = {s.name: spark.sparkContext.accumulator(0.0) for s in enabled}
read = docs.count()
number = 2 if mode == "append" else 1
half = corpus_half(spark, cfg, docs, read, n_inputs, out, mode, ["exact_key", "minhash",
                   "bands"], enabled, {s.name: None for s in enabled}, "bench", timers,
                   publish=versions.folder(out, number))
seconds = time.perf_counter() - t0
import urllib.request
def api(what):
    url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/"
    url += f"{spark.sparkContext.applicationId}/{what}"
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())
stages = {s["stageId"]: s for s in api("stages?status=complete")}
moved, seen = {}, set()
for job in api("jobs"):  # each corpus step names its jobs (engine/progress.py)
    step = (job.get("description") or "other").split(" (")[0].removeprefix("stage ")
    for sid in job["stageIds"]:
        if sid in stages and sid not in seen:
            seen.add(sid)
            moved[step] = moved.get(step, 0) + stages[sid]["shuffleWriteBytes"]
if mode == "full":
    versions.commit(out, 1, {"files": half.published, "dedup_index": index_settings(cfg)})
print(json.dumps({"seconds": seconds, "read": read, "counts": half.outcomes.counts,
                  "shuffle_write_bytes": moved, "sources": half.outcomes.sources,
                  "stages": {k: round(r.seconds, 1) for k, r in half.results.items()},
                  "write_seconds": round(half.write_seconds, 1),
                  "mixture_seconds": round(half.mixture_seconds, 1)}))
"""


def measured(mode: str, docs: Path, out: Path, n_inputs: int, first_new: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", RUN, mode, str(docs), str(out), str(CFG),
                             str(n_inputs), str(first_new)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=(WORK / f"{mode}.log").open("wb"),
                            start_new_session=True)  # fmt: skip
    sampler = PeakPss(proc.pid, every=0.5)
    stdout, _ = proc.communicate()
    peaks = sampler.stop()
    if proc.returncode:
        raise RuntimeError(f"the {mode} corpus half failed: {WORK / f'{mode}.log'}")
    result = json.loads(stdout.decode().strip().splitlines()[-1])
    result["peak_pss_mib"] = peaks
    return result


def exchanges(run: dict) -> dict:
    """Each corpus step's shuffle bytes from Spark's metrics beside what `curate plan`'s
    figures (run/sizing.py) predict for the documents it measured."""
    from curate_pipeline.config import load_config
    from curate_pipeline.run import sizing

    cfg = load_config(CFG)
    rejected = run["counts"]["rejected"]
    reach = run["read"]
    near = reach - rejected.get("exact_dup:duplicate", 0)
    kept = run["counts"]["kept"]
    text = sum(b for _, _, b in run["sources"].values())
    perm = cfg.near_dedup.bands * cfg.near_dedup.rows
    predicted = sizing.exchange_bytes(cfg.near_dedup.bands, perm, reach, near, kept, text)
    out = {}
    for step, bytes_ in predicted.items():
        got = run["shuffle_write_bytes"].get(step, 0)
        out[step] = {"measured": got, "predicted": int(bytes_),
                     "ratio": round(got / bytes_, 2) if bytes_ else None}  # fmt: skip
    out["other"] = {k: v for k, v in run["shuffle_write_bytes"].items() if k not in predicted}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.size
    docs = WORK / f"docs-{n}"
    if not (docs / "_built").exists():
        t0 = time.perf_counter()
        build_docs(n, docs)
        (docs / "_built").write_text("")
        print(f"built {n:,} documents in {time.perf_counter() - t0:.0f} s", flush=True)
    n_inputs = -(-n // PER_FILE)
    # the added input: the last file (1,000,000 documents: its 10,000, 1%)
    first_new = n_inputs - 1
    out = WORK / f"append-{n}"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    full = measured("full", docs, out, n_inputs, first_new)
    append = measured("append", docs, out, n_inputs, first_new)
    result = {
        "documents": full["read"] + append["read"],
        "exchanges": exchanges(full),
        "full": full,
        "append": append,
        "added_share": round(append["read"] / (full["read"] + append["read"]), 4),
        "append_over_full": round(append["seconds"] / full["seconds"], 3),
        "driver_peak_ratio": round(append["peak_pss_mib"].get("driver_python", 0)
                                   / max(1, full["peak_pss_mib"].get("driver_python", 1)), 2),
    }  # fmt: skip
    print(json.dumps({k: v for k, v in result.items() if k not in ("full", "append")}, indent=1))
    dest = ROOT / "bench" / "results" / "append.json"  # by size: one run each
    held = json.loads(dest.read_text()) if dest.exists() else {}
    held = held if "sizes" in held else {"sizes": {}}
    held["sizes"][str(n)] = result
    dest.write_text(json.dumps(held, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
