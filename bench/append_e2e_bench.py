"""Appending, end to end (issue 61): the whole `curate run` that adds one input file to an
output, beside the first run that made it, side by side in one session; each run the CLI in a
process of its own, as a user runs it.

Inputs: JSONL text documents (text datasets enter after extraction and share every later
stage) made of real paragraphs from ../shared/data (growth_bench's pool), each document 3-6
paragraphs plus a line of its own; a tenth of the documents are exact copies and a tenth
one-word edits of earlier ones, the added file's too (so the append's prior dedup has work).

Scenarios (name: files before + 1 added, documents a file):
- `12+1`: 12 files of 6,000 documents, then a 13th (the held-out case that took 0.79x
  of the first run when the documents pass reran every chunk);
- `100k`: 99 files of 1,000 documents, then one more (1%);
- `1M` (with --large): 99 files of 10,000, then one more (1%).

For each: the first run's wall time, the append's, their ratio, the append's log of chunks
(ran vs reused), and whether the added file's documents are decided as one run over all the
files decides them (kept ids and ledger reasons of the new file's records; `--check`).

    python bench/append_e2e_bench.py [--large] [--check] [--only 12+1]

Writes bench/results/append_e2e.json.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from growth_bench import _paragraph_pool  # noqa: E402

WORK = ROOT / "bench" / "work" / "append_e2e"
RESULTS = ROOT / "bench" / "results" / "append_e2e.json"
SCENARIOS = {"12+1": (13, 6_000), "100k": (100, 1_000), "1M": (100, 10_000)}


def build(files: int, per_file: int, folder: Path, seed: int = 61) -> list[Path]:
    """`files` JSONL files of `per_file` documents (made once, kept for reruns)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"docs-{k:04d}.jsonl" for k in range(files)]
    if all(p.is_file() for p in paths):
        return paths
    pool = _paragraph_pool()
    rng = random.Random(seed)
    earlier: list[str] = []
    for k, path in enumerate(paths):
        with path.open("w") as fh:
            for i in range(per_file):
                roll = rng.random()
                if roll < 0.1 and earlier:
                    text = earlier[rng.randrange(len(earlier))]
                elif roll < 0.2 and earlier:
                    words = earlier[rng.randrange(len(earlier))].split(" ")
                    words[rng.randrange(len(words))] = "edited"
                    text = " ".join(words)
                else:
                    paras = [pool[rng.randrange(len(pool))] for _ in range(rng.randint(3, 6))]
                    text = "\n\n".join(paras) + f"\n\nDocument {k}-{i}."
                    if len(earlier) < 20_000:
                        earlier.append(text)
                site = (k * per_file + i) % 997
                doc = {"id": f"doc-{k:04d}-{i:06d}", "text": text,
                       "url": f"https://site-{site}.example/{k}/{i}"}  # fmt: skip
                fh.write(json.dumps(doc) + "\n")
    return paths


def curate(inputs: list[Path], out: Path, config: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "curate"), "run", "--config", str(config),
                        "--input", *map(str, inputs), "--output", str(out)],
                       cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"curate run failed ({out}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return seconds, r.stdout + r.stderr


def _decisions(out: Path, prefix: str) -> dict[str, str]:
    """id -> 'kept' or 'stage:reason', for the documents whose id starts with `prefix`."""
    import pyarrow.parquet as pq

    from curate_pipeline.outputs.publish import versions

    v = versions.current(out)
    got = {}
    for f in v.files("data"):
        for i in pq.read_table(f.uri, columns=["id"])["id"].to_pylist():
            if i.startswith(prefix):
                got[i] = "kept"
    for f in v.files("rejected"):
        t = pq.read_table(f.uri, columns=["doc_id", "stage", "reason"]).to_pylist()
        for r in t:
            if r["doc_id"].startswith(prefix):
                got[r["doc_id"]] = f"{r['stage']}:{r['reason']}"
    return got


def scenario(name: str, check: bool) -> dict:
    import shutil

    files, per_file = SCENARIOS[name]
    inputs = build(files, per_file, WORK / f"inputs-{name}")
    config = ROOT / "conf" / "default.yaml"
    out = WORK / f"out-{name}"
    shutil.rmtree(out, ignore_errors=True)
    first, _ = curate(inputs[:-1], out, config)
    append, log = curate(inputs, out, config)
    chunks = re.findall(r"(chunk-\d+) (ran|reused|retuned)\s+(\d+) file", log)
    row = {"scenario": name, "files_before": files - 1, "docs_per_file": per_file,
           "documents_before": (files - 1) * per_file, "documents_added": per_file,
           "first_run_s": round(first, 1), "append_s": round(append, 1),
           "ratio": round(append / first, 3),
           "append_chunks": {k: sum(int(n) for _, s, n in chunks if s == k)
                             for k in ("ran", "reused", "retuned")},
           "appended": "appending to version" in log}  # fmt: skip
    if check:
        whole = WORK / f"whole-{name}"
        shutil.rmtree(whole, ignore_errors=True)
        row["one_run_s"] = round(curate(inputs, whole, config)[0], 1)
        prefix = f"doc-{files - 1:04d}-"
        a, b = _decisions(out, prefix), _decisions(whole, prefix)
        # kept or dropped (an append names a copy of an earlier document prior_dup:exact or
        # prior_dup:near where one run says exact_dup or near_dup)
        same = sum((a.get(k) == "kept") == (v == "kept") for k, v in b.items())
        row["new_file_kept_or_dropped_equal"] = f"{same}/{len(b)}"
        row["new_file_differences"] = sorted(
            f"{k}: append {a.get(k)} / one run {v}"
            for k, v in b.items()
            if (a.get(k) == "kept") != (v == "kept")
        )[:10]
        row["new_file_kept"] = {"append": sum(v == "kept" for v in a.values()),
                                "one_run": sum(v == "kept" for v in b.values())}  # fmt: skip
    return row


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--large", action="store_true", help="also 1M documents")
    p.add_argument("--check", action="store_true", help="also one run over all the files")
    p.add_argument("--only", choices=list(SCENARIOS))
    a = p.parse_args()
    names = [a.only] if a.only else ["12+1", "100k", *(["1M"] if a.large else [])]
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    for name in names:
        row = scenario(name, a.check)
        print(json.dumps(row, indent=2), flush=True)
        results[name] = row
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
