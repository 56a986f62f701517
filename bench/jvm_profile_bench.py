"""Where the JVM's CPU goes in a run (issue 65): `curate run` (default.yaml, local[2]: the
executor lives in the driver's JVM) over `--files` files of the Common-Crawl-like crawl
(bench/cc_like.py), with Java Flight Recorder sampling the JVM's threads (JDK 17's built-in
profiler, `jdk.ExecutionSample` every 10 ms). Each sample is put in one bucket by the first
frame of its stack that names one (Arrow to and from Python, Parquet encoding and decoding,
shuffle, compression, Python worker I/O, SQL code generation and planning, JIT-less
interpretation of the rest); and the JVM's CPU per thread (from /proc, polled), by role: task
threads, writers to Python, JIT compiler, garbage collector, the rest. Prints both, writes
bench/results/jvm_profile.json.

    python bench/jvm_profile_bench.py [--files 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cc_like  # noqa: E402

WORK = ROOT / "bench" / "work" / "jvm_profile"
CURATE = str(Path(sys.executable).parent / "curate")

# (bucket, substrings of a frame's method name), first match from the top of the stack wins
BUCKETS = [
    (
        "arrow (Python <-> JVM batches)",
        (
            "org.apache.spark.sql.execution.arrow",
            "org.apache.arrow",
            "ArrowPythonRunner",
            "ArrowEvalPython",
            "MapInBatch",
            "ArrowWriter",
            "ArrowColumnVector",
            "ArrowConverters",
        ),
    ),
    ("python worker I/O", ("org.apache.spark.api.python",)),
    (
        "parquet write",
        (
            "org.apache.parquet.hadoop.InternalParquetRecordWriter",
            "org.apache.parquet.column.impl.ColumnWriter",
            "org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport",
            "org.apache.parquet.hadoop.ColumnChunkPageWriteStore",
        ),
    ),
    (
        "parquet read",
        (
            "VectorizedParquetRecordReader",
            "org.apache.parquet.column.impl.Column",
            "org.apache.parquet.hadoop.ParquetFileReader",
            "VectorizedColumnReader",
            "VectorizedRleValuesReader",
        ),
    ),
    ("compression (zstd, lz4)", ("zstd", "Zstd", "lz4", "LZ4", "snappy", "Snappy")),
    (
        "shuffle",
        (
            "org.apache.spark.shuffle",
            "UnsafeShuffleWriter",
            "ShuffleExternalSorter",
            "BlockStoreShuffleReader",
            "org.apache.spark.storage",
        ),
    ),
    (
        "sort and aggregate",
        (
            "UnsafeExternalSorter",
            "UnsafeInMemorySorter",
            "HashAggregateExec",
            "UnsafeFixedWidthAggregationMap",
            "TungstenAggregationIterator",
            "SortExec",
        ),
    ),
    (
        "codegen and planning",
        (
            "org.codehaus.janino",
            "org.apache.spark.sql.catalyst",
            "CodeGenerator",
            "org.apache.spark.sql.execution.SparkPlan",
            "QueryExecution",
            "AdaptiveSparkPlan",
        ),
    ),
    (
        "scheduler and RPC",
        (
            "org.apache.spark.scheduler",
            "org.apache.spark.rpc",
            "io.netty",
            "org.apache.spark.network",
        ),
    ),
    (
        "generated code and rows",
        ("GeneratedClass", "UnsafeRow", "UnsafeProjection", "org.apache.spark.unsafe"),
    ),
    ("py4j (driver calls)", ("py4j",)),
]


def thread_kind(name: str) -> str:
    """A JVM thread's role, from its (15-character) name."""
    for prefix, kind in (
        ("Executor task", "task threads (rows, Parquet, Arrow out of Python)"),
        ("stdin writer", "writers to Python (rows to Arrow batches)"),
        ("stdout reader", "readers from Python"),
        ("C1 Compiler", "JIT compiler"),
        ("C2 Compiler", "JIT compiler"),
        ("GC ", "garbage collector"),
        ("VM Thread", "garbage collector"),
        ("Thread-", "py4j and driver calls"),
        ("main", "driver main"),
    ):
        if name.startswith(prefix):
            return kind
    return "other JVM threads"


def jvm_threads(proc: subprocess.Popen) -> dict[str, float]:
    """CPU seconds per thread role of the run's JVM (polled from /proc until it exits)."""
    tick = os.sysconf("SC_CLK_TCK")
    last: dict[tuple[int, int], tuple[str, float]] = {}
    while proc.poll() is None:
        for p in psutil.Process(proc.pid).children(recursive=True) if psutil.pid_exists(
                proc.pid) else []:  # fmt: skip
            try:
                if not os.path.basename(p.exe()).startswith("java"):
                    continue
            except psutil.Error:
                continue
            for tid in os.listdir(f"/proc/{p.pid}/task"):
                try:
                    base = f"/proc/{p.pid}/task/{tid}"
                    name = Path(base, "comm").read_text().strip()
                    fields = Path(base, "stat").read_text().rsplit(")", 1)[1].split()
                    cpu = (int(fields[11]) + int(fields[12])) / tick
                    last[(p.pid, int(tid))] = (name, cpu)
                except (OSError, IndexError, ValueError):
                    pass
        time.sleep(0.5)
    out: Counter[str] = Counter()
    for name, cpu in last.values():
        out[thread_kind(name)] += cpu
    return {k: round(v, 1) for k, v in out.most_common()}


def bucket(frames: list[str]) -> str:
    for frame in frames:
        for name, keys in BUCKETS:
            if any(k in frame for k in keys):
                return name
    return "other: " + (frames[0].rsplit(".", 2)[0] if frames else "?")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2)
    args = ap.parse_args()
    inputs = cc_like.build(16, 1400)[: args.files]
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    jfr = WORK / "run.jfr"
    cfg = yaml.safe_load((ROOT / "conf" / "default.yaml").read_text())
    opts = cfg["spark"]["local_conf"]["spark.driver.extraJavaOptions"]
    cfg["spark"]["local_conf"]["spark.driver.extraJavaOptions"] = (
        f"{opts} -XX:StartFlightRecording=filename={jfr},settings=profile"
    )
    conf = WORK / "profile.yaml"
    conf.write_text(yaml.safe_dump(cfg))
    t0 = time.perf_counter()
    proc = subprocess.Popen([CURATE, "run", "--config", str(conf), "--input", *inputs,
                             "--output", str(WORK / "out")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    threads = jvm_threads(proc)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"curate failed ({proc.returncode})")
    cmd = ["jfr", "print", "--json", "--events", "jdk.ExecutionSample", str(jfr)]
    printed = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    events = json.loads(printed)["recording"]["events"]
    counts: Counter[str] = Counter()
    for ev in events:
        frames = [f"{f['method']['type']['name']}.{f['method']['name']}".replace("/", ".")
                  for f in ev["values"]["stackTrace"]["frames"]]  # fmt: skip
        counts[bucket(frames)] += 1
    total = sum(counts.values())
    shares = {k: round(v / total, 3) for k, v in counts.most_common()}
    result = {"date": time.strftime("%Y-%m-%d"), "files": args.files,
              "wall_seconds": round(wall, 1), "jvm_cpu_seconds_by_thread": threads,
              "jvm_cpu_seconds": round(sum(threads.values()), 1),
              "java_code_samples": total, "java_code_shares": shares}  # fmt: skip
    print(f"JVM CPU by thread ({result['jvm_cpu_seconds']} s):")
    for k, v in threads.items():
        print(f"  {v:7.1f} s  {k}")
    print("Java code, by what the sampled stacks were doing:")
    for k, v in list(shares.items())[:15]:
        print(f"  {v:6.1%}  {k}")
    out = ROOT / "bench" / "results" / "jvm_profile.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{total} samples, wall {wall:.1f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
