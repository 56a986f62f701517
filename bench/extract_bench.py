"""Benchmark read + extract: quality against ground truth, and throughput local[2] vs one process.

Builds a WARC from the 181 real news pages of the scrapinghub article-extraction-benchmark
(../shared/data/extraction/scrapinghub_aeb), repeated under new URLs so Spark start-up is a
small share of the run, then in one process and one run:
  * quality: token-level precision / recall / F1 of our extraction against `articleBody`,
    with our default settings (trafilatura's own) and with FineWeb's favor_precision;
  * throughput: a plain single-process loop (warcio + the same decode + trafilatura call) and
    the Spark pipeline in local[2] on the same file, alternated, medians reported, Spark with
    and without its start-up.
Writes bench/results/extract.json and prints a table.

    python bench/extract_bench.py [--repeat 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import statistics
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curate_pipeline.config import ExtractConf, load_config
from curate_pipeline.document.extract import process_record
from curate_pipeline.document.warc.records import RecordPolicy, iter_warc_rows
from curate_pipeline.outputs.publish.versions import read_rows

ROOT = Path(__file__).resolve().parents[1]
AEB = ROOT.parent / "shared" / "data" / "extraction" / "scrapinghub_aeb"
WORK = ROOT / "bench" / "work"
RESULTS = ROOT / "bench" / "results"
TOKEN = re.compile(r"\w+", re.UNICODE)


def build_warc(path: Path, repeat: int) -> tuple[int, int, dict[str, str]]:
    """Write the pages `repeat` times under distinct URLs; returns (records, bytes, truth)."""
    truth_raw = json.loads((AEB / "ground-truth.json").read_text())
    truth: dict[str, str] = {}
    n = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for r in range(repeat):
            for sha, item in sorted(truth_raw.items()):
                html = (AEB / "html" / f"{sha}.html").read_bytes()
                url = item["url"] if r == 0 else f"{item['url']}#copy{r}"
                truth[url] = item["articleBody"]
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], "HTTP/1.1")
                rec = w.create_warc_record(
                    url, "response", payload=io.BytesIO(html), http_headers=http
                )
                w.write_record(rec)
                n += 1
    return n, path.stat().st_size, truth


def prf(pred: str, gold: str) -> tuple[float, float, float]:
    """Token-level precision, recall, F1 over bags of words (the benchmark's measure)."""
    p, g = Counter(TOKEN.findall(pred.lower())), Counter(TOKEN.findall(gold.lower()))
    if not g and not p:
        return 1.0, 1.0, 1.0
    common = sum((p & g).values())
    prec = common / max(1, sum(p.values()))
    rec = common / max(1, sum(g.values()))
    f1 = 0.0 if common == 0 else 2 * prec * rec / (prec + rec)
    return prec, rec, f1


def quality(texts: dict[str, str], truth: dict[str, str], urls: list[str]) -> dict:
    scores = [prf(texts.get(u, ""), truth[u]) for u in urls]
    return {
        "documents": len(urls),
        "extracted": sum(1 for u in urls if texts.get(u)),
        "precision": round(statistics.mean(s[0] for s in scores), 4),
        "recall": round(statistics.mean(s[1] for s in scores), 4),
        "f1": round(statistics.mean(s[2] for s in scores), 4),
        "f1_median": round(statistics.median(s[2] for s in scores), 4),
    }


def single_process(warc: Path, cfg, settings: ExtractConf) -> tuple[float, dict[str, str]]:
    policy = RecordPolicy.from_conf(cfg.read)
    texts: dict[str, str] = {}
    scope = uuid.uuid4().hex  # a fresh outcome cache: each call extracts every record
    t0 = time.perf_counter()
    with open(warc, "rb") as fh:
        for row in iter_warc_rows(fh, 0, str(warc), policy):
            out = process_record(row, settings, cfg.read, scope=scope)
            if out["text"]:
                texts[out["url"]] = out["text"]
    return time.perf_counter() - t0, texts


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=4, help="copies of the 181 pages")
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs of each side")
    args = ap.parse_args()
    if not AEB.is_dir():
        print(f"benchmark data not found at {AEB}", file=sys.stderr)
        return 2
    cfg = load_config(ROOT / "conf" / "default.yaml")
    warc = WORK / "aeb.warc.gz"
    records, size, truth = build_warc(warc, args.repeat)
    originals = [u for u in truth if "#copy" not in u]
    mb = size / 1e6
    print(f"benchmark WARC: {records} records, {mb:.1f} MB ({args.repeat} x 181 pages)")

    ours = cfg.extract
    # Quality, in one process: our defaults (trafilatura's own), and FineWeb's setting.
    _, texts_default = single_process(warc, cfg, ours)
    q_ours = quality(texts_default, truth, originals)
    _, texts_fineweb = single_process(
        warc, cfg, ours.model_copy(update={"favor_precision": True, "include_comments": False})
    )
    q_fineweb = quality(texts_fineweb, truth, originals)

    t0 = time.perf_counter()
    from curate_pipeline.engine.spark import get_spark
    from curate_pipeline.run.orchestrate import run

    spark = get_spark(cfg, "local[2]")
    spark.range(1).count()
    startup = time.perf_counter() - t0

    loop_times, spark_times = [], []
    spark_texts: dict[str, str] = {}
    for i in range(args.rounds):
        dt, _ = single_process(warc, cfg, ours)
        loop_times.append(dt)
        out = WORK / "spark_out"
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        run(cfg, [str(warc)], out, spark, force=True)
        spark_times.append(time.perf_counter() - t)
        print(f"round {i + 1}: loop {dt:.1f} s, local[2] {spark_times[-1]:.1f} s")
        if i == 0:
            for d in read_rows(out, "data", ["url", "text"]):
                spark_texts[d["url"]] = d["text"]
    spark.stop()

    loop_s, spark_s = statistics.median(loop_times), statistics.median(spark_times)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "records": records,
        "megabytes": round(mb, 2),
        "cores": 2,
        "quality_ours": q_ours,
        "quality_ours_spark": quality(spark_texts, truth, originals),
        "quality_fineweb_favor_precision": q_fineweb,
        "published_trafilatura_2_0_0": {"f1": 0.958, "precision": 0.938, "recall": 0.978},
        "loop_seconds": [round(x, 2) for x in loop_times],
        "spark_seconds": [round(x, 2) for x in spark_times],
        "spark_startup_seconds": round(startup, 2),
        "loop_records_per_s": round(records / loop_s, 1),
        "loop_mb_per_s": round(mb / loop_s, 2),
        "spark_records_per_s": round(records / spark_s, 1),
        "spark_mb_per_s": round(mb / spark_s, 2),
        "speedup_without_startup": round(loop_s / spark_s, 2),
        "speedup_with_startup": round(loop_s / (spark_s + startup), 2),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "extract.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
