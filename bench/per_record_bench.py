"""A run's cost per record at realistic size: `curate run` (conf/default.yaml, local mode, 2
cores) over a Common-Crawl-like crawl of >= 20,000 records (bench/cc_like.py: real pages,
a real crawl's language mix and non-HTML share, 10% duplicates), fresh processes, `--rounds`
times. The process tree's CPU (driver, JVMs, Python workers) is sampled every 0.25 s and
split where the log says the documents pass ended:

- documents pass (read, decode, extract, language, rules, quality, signatures), core-seconds
  per record read: `sizing.CORE_SECONDS_PER_RECORD`, what `curate plan` sizes a snapshot with;
- corpus half (exact and near dedup, kept rows, data/, ledger, shards, tokens, report),
  core-seconds per document reaching it: `sizing.CORPUS_CORE_SECONDS`.

Start-up (JVM, session) is counted apart. Prints the figures and their range over the rounds
and writes bench/results/per_record.json.

    python bench/per_record_bench.py [--files 16] [--pages-per-file 1400] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cc_like  # noqa: E402

from curate_pipeline.outputs.publish.versions import published_path  # noqa: E402

CURATE = str(Path(sys.executable).parent / "curate")
WORK = ROOT / "bench" / "work" / "per_record"
CORPUS_LEDGER = ("exact_dup", "near_dup", "prior_dup")  # the corpus stages' ledger names


class TreeCpu:
    """CPU seconds (user + system) of a process tree, sampled: a process's last reading
    counts after it exits (what it used in its last interval is lost: < 0.25 s each)."""

    def __init__(self, pid: int, every: float = 0.25):
        self.root, self.every = psutil.Process(pid), every
        self.last: dict[int, float] = {}
        self.series: list[tuple[float, float]] = []  # (monotonic time, total CPU so far)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                procs = []
            for p in procs:
                try:
                    t = p.cpu_times()
                    self.last[p.pid] = t.user + t.system
                except psutil.Error:
                    pass
            self.series.append((time.monotonic(), sum(self.last.values())))
            self._stop.wait(self.every)

    def stop(self) -> float:
        self._stop.set()
        self._t.join()
        return sum(self.last.values())

    def at(self, when: float) -> float:
        before = [c for t, c in self.series if t <= when]
        return before[-1] if before else 0.0


def one_run(inputs: list[str], out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [CURATE, "--log-level", "INFO", "run", "--config", "default", "--input", *inputs,
           "--output", str(out)]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip
    cpu = TreeCpu(proc.pid)
    marks: dict[str, float] = {}
    log = []
    assert proc.stdout is not None
    for line in proc.stdout:
        log.append(line)
        now = time.monotonic()
        if "sizing work for" in line and "up" not in marks:
            marks["up"] = now  # the session is up: the documents pass starts
        if "orchestrate: documents pass:" in line and "docs" not in marks:
            marks["docs"] = now  # its summary line: it ended
    proc.wait()
    wall = time.monotonic() - t0
    total = cpu.stop()
    (out.parent / f"{out.name}.log").write_text("".join(log))
    if proc.returncode:
        raise RuntimeError(f"curate failed ({proc.returncode}): see {out.parent / out.name}.log")
    manifest = json.loads((published_path(out) / "manifest.json").read_text())
    counts = manifest["counts"]
    stages = {s["name"]: s for s in manifest["stages"]}
    if "docs" not in marks or "up" not in marks:
        raise RuntimeError("the log did not say when the session was up or the pass ended")
    end_docs = marks["docs"]
    docs_cpu = cpu.at(end_docs)
    startup_wall = marks["up"] - t0
    startup_cpu = cpu.at(marks["up"])
    docs_wall = end_docs - marks["up"]
    # documents reaching the corpus half: kept, or dropped there (as duplicates)
    reach = counts["kept"] + sum(n for k, n in counts["rejected"].items()
                                 if k.split(":")[0] in CORPUS_LEDGER)  # fmt: skip
    return {
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(total, 1),
        "startup": {"wall": round(startup_wall, 1), "cpu": round(startup_cpu, 1)},
        "documents_pass": {
            "wall": round(docs_wall, 1),
            "cpu": round(docs_cpu - startup_cpu, 1),
        },  # fmt: skip
        "corpus_half": {
            "wall": round(t0 + wall - end_docs, 1),
            "cpu": round(total - docs_cpu, 1),
        },  # fmt: skip
        "records": counts["read"],
        "kept": counts["kept"],
        "reaching_corpus_half": reach,
        "stage_seconds": {k: round(v["seconds"], 1) for k, v in stages.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--pages-per-file", type=int, default=1400)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    inputs = cc_like.build(args.files, args.pages_per_file)
    crawl = cc_like.describe(inputs)
    print(f"crawl: {crawl}", flush=True)
    runs = []
    for _ in range(args.rounds):
        res = one_run(inputs, WORK / "out")
        runs.append(res)
        print(json.dumps(res), flush=True)
    per_record = [r["documents_pass"]["cpu"] / r["records"] for r in runs]
    per_reach = [r["corpus_half"]["cpu"] / max(1, r["reaching_corpus_half"]) for r in runs]
    whole = [(r["cpu_seconds"] - r["startup"]["cpu"]) / r["records"] for r in runs]
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": {"cpu": platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version()},  # fmt: skip
        "config": "default",
        "crawl": crawl,
        "rounds": runs,
        "documents_pass_core_seconds_per_record": {
            "median": round(statistics.median(per_record), 4),
            "range": [round(min(per_record), 4), round(max(per_record), 4)]},
        "corpus_half_core_seconds_per_document": {
            "median": round(statistics.median(per_reach), 4),
            "range": [round(min(per_reach), 4), round(max(per_reach), 4)]},
        "whole_run_core_seconds_per_record": {
            "median": round(statistics.median(whole), 4),
            "range": [round(min(whole), 4), round(max(whole), 4)]},
    }  # fmt: skip
    print(f"documents pass: {result['documents_pass_core_seconds_per_record']} core-s/record; "
          f"corpus half: {result['corpus_half_core_seconds_per_document']} core-s/document "
          f"reaching it; whole run: {result['whole_run_core_seconds_per_record']}")  # fmt: skip
    dest = ROOT / "bench" / "results" / "per_record.json"
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
