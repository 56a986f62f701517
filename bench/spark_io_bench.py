"""Spark's Parquet writes and reads through its own Hadoop connector against the project's
Python data source over pyarrow.fs (pipeline/engine/parquet_source.py), on the same rows.

Rows: the WCXB dev ground-truth texts (real main contents, ../shared/data) repeated under new
ids to `--rows` rows, shaped like the documents store (id, url, text, a few numbers), held in
Spark's memory before timing. Each round writes them once per path (local disk: Hadoop;
local disk: Python source; and, with `--s3`, a moto S3 server on 127.0.0.1: Python source,
the only path there without hadoop-aws), then reads each back (count and text bytes). Rounds
alternate the order; the figures are medians and the ratio python/hadoop per round.

    python bench/spark_io_bench.py [--rows 200000] [--rounds 3] [--s3]

Writes bench/results/spark_io.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.config import load_config  # noqa: E402
from pipeline.engine.spark import get_spark  # noqa: E402
from pipeline.engine.storage import read_parquet, write_parquet  # noqa: E402
from pipeline.location import Location  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
WCXB = DATA / "extraction" / "wcxb_dev"
WORK = ROOT / "bench" / "work" / "spark_io"


def texts() -> list[str]:
    out = []
    for p in sorted((WCXB / "ground-truth").glob("*.json")):
        t = (json.loads(p.read_text()).get("ground_truth") or {}).get("main_content") or ""
        if t.strip():
            out.append(t)
    if not out:
        sys.exit(f"no ground truth under {WCXB}: the real-data folder is needed")
    return out


def moto_env() -> tuple[object, dict]:
    from moto.server import ThreadedMotoServer

    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "bench",
           "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
    os.environ.update(env)
    import boto3

    boto3.client("s3").create_bucket(Bucket="bench")
    return srv, env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--s3", action="store_true", help="also the Python source on moto S3")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "spark_io.json"))
    args = ap.parse_args()

    srv = moto_env()[0] if args.s3 else None
    cfg = load_config(ROOT / "conf" / "default.yaml")
    spark = get_spark(cfg, "local[2]")
    base = texts()
    from pyspark.sql import functions as F

    df = (
        spark.range(args.rows, numPartitions=8)
        .withColumn(
            "text",
            F.element_at(
                F.array(*[F.lit(t) for t in base[:400]]), (F.col("id") % 400 + 1).cast("int")
            ),
        )  # fmt: skip
        .withColumn("doc_id", F.concat(F.lit("urn:bench:"), F.col("id").cast("string")))
        .withColumn("url", F.concat(F.lit("https://example.org/p/"), F.col("id").cast("string")))
        .withColumn("crawl_pos", F.col("id") * 7919)
        .withColumn("lang_score", (F.col("id") % 1000) / 1000.0)
        .drop("id")
        .cache()
    )
    text_bytes = df.agg(F.sum(F.octet_length("text"))).first()[0]
    schema = df.schema
    paths = {"hadoop_local": ("hadoop", Location.of(WORK / "hadoop")),
             "python_local": ("python", Location.of(WORK / "python"))}  # fmt: skip
    if args.s3:
        paths["python_s3"] = ("python", Location.of("s3://bench/spark-io"))
    times: dict[str, dict[str, list[float]]] = {k: {"write": [], "read": []} for k in paths}
    for rnd in range(args.rounds):
        order = list(paths) if rnd % 2 == 0 else list(reversed(paths))
        for name in order:
            mode, loc = paths[name]
            loc.delete()
            t0 = time.perf_counter()
            files = write_parquet(df, loc, "zstd", mode)
            times[name]["write"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            back = read_parquet(spark, [loc / f["file"] for f in files], schema, mode)
            n, nbytes = back.agg(F.count("*"), F.sum(F.octet_length("text"))).first()
            times[name]["read"].append(time.perf_counter() - t0)
            assert (n, nbytes) == (args.rows, text_bytes), (name, n, nbytes)
            print(f"round {rnd} {name:13} write {times[name]['write'][-1]:6.2f} s  "
                  f"read {times[name]['read'][-1]:6.2f} s", flush=True)  # fmt: skip
    mb = text_bytes / 2**20
    result = {
        "rows": args.rows,
        "text_mib": round(mb, 1),
        "rounds": args.rounds,
        "paths": {
            name: {
                "write_s_median": round(statistics.median(t["write"]), 2),
                "read_s_median": round(statistics.median(t["read"]), 2),
                "write_mib_per_s": round(mb / statistics.median(t["write"]), 1),
                "read_mib_per_s": round(mb / statistics.median(t["read"]), 1),
                "write_s": [round(x, 2) for x in t["write"]],
                "read_s": [round(x, 2) for x in t["read"]],
            }
            for name, t in times.items()
        },
        "python_over_hadoop_local": {
            op: round(
                statistics.median(
                    p / h
                    for p, h in zip(
                        times["python_local"][op], times["hadoop_local"][op], strict=True
                    )
                ),
                2,
            )  # fmt: skip
            for op in ("write", "read")
        },
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    spark.stop()
    shutil.rmtree(WORK, ignore_errors=True)
    if srv is not None:
        srv.stop()


if __name__ == "__main__":
    main()
