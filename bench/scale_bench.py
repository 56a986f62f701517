"""Crawl-scale evidence on 2 cores: a crawl of >= 20,000 records in >= 16 files built from the
real pages in ../shared/data (the WCXB dev split and the scrapinghub pages; every file a later
re-crawl: new URLs, a one-word edit per page, 15% duplicates), run with `curate run`:

- fresh runs over 12 files (~10k records) and over all files (~23k): wall time, records/s,
  peak memory (PSS) of the driver's Python, the JVM (driver and local executor) and Spark's
  Python workers, sampled every second;
- the same command killed (SIGKILL to its process group) once 70% of the chunks are
  committed, then rerun: the rerun's documents pass against the undisturbed one's, and its
  output against the undisturbed output (data, ledger, counts, shards and token shards);
- the crawl without its last 10% of files, then the same command with them: the second run's
  wall time against a fresh run over all of them, and its output against that run's;
- `langid.threshold` changed on the finished run: its wall time against a fresh run's.

    python bench/scale_bench.py [--files 28] [--pages-per-file 720] [--chunk-files 1]

Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pss import PeakPss  # noqa: E402

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.examples.corpus import Page, small_edit, with_duplicates, write_pages_warc  # noqa: E402
from curate_pipeline.outputs.publish.versions import published_path, read_rows  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "extraction"
WORK = ROOT / "bench" / "work" / "scale"
CURATE = str(Path(sys.executable).parent / "curate")


def real_pages() -> list[tuple[str, bytes]]:
    out = []
    for gt in sorted((DATA / "wcxb_dev" / "ground-truth").glob("*.json")):
        html = DATA / "wcxb_dev" / "html" / f"{gt.stem}.html.gz"
        if html.exists():
            out.append((json.loads(gt.read_text()).get("url") or f"https://wcxb.example/{gt.stem}",
                        gzip.decompress(html.read_bytes())))  # fmt: skip
    aeb = json.loads((DATA / "scrapinghub_aeb" / "ground-truth.json").read_text())
    for sha, item in sorted(aeb.items()):
        out.append((item["url"], (DATA / "scrapinghub_aeb" / "html" / f"{sha}.html").read_bytes()))
    return out


def build_crawl(n_files: int, per_file: int) -> list[str]:
    pages = real_pages()
    files = []
    for k in range(n_files):
        path = WORK / "crawl" / f"crawl-{k:03d}.warc.gz"
        files.append(str(path))
        if path.exists():
            continue
        rng = random.Random(k)
        start = (k * per_file) % len(pages)
        chosen = [pages[(start + i) % len(pages)] for i in range(per_file)]
        crawl = [Page(f"{url.rstrip('/')}/crawl-{k}", small_edit(html, rng), "text/html")
                 for url, html in chosen]  # fmt: skip
        path.parent.mkdir(parents=True, exist_ok=True)
        write_pages_warc(path, with_duplicates(crawl, share=0.15, seed=k), tag=f"scale{k}")
    return files


def curate(config: Path, inputs: list[str], out: Path, kill_when=None) -> dict:
    """Run `curate run`; wall seconds and peak PSS per role (MiB). `kill_when()`, polled,
    SIGKILLs the run's process group when true."""
    cmd = [CURATE, "run", "--config", str(config), "--input", *inputs, "--output", str(out)]
    log = open(out.parent / f"{out.name}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    sampler = PeakPss(proc.pid, every=1.0)
    killed = False
    while proc.poll() is None:
        if kill_when and kill_when():
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            proc.wait()
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    peaks = sampler.stop()
    if not killed and proc.returncode:
        raise RuntimeError(f"curate failed: see {log.name}")
    return {"seconds": round(wall, 1), "killed": killed,
            "peak_pss_mib": peaks}  # fmt: skip


def manifest(out: Path) -> dict:
    return json.loads((published_path(out) / "manifest.json").read_text())


def published(out: Path) -> dict:
    """What a run publishes, partition-independent, and the shard files byte for byte."""
    m = manifest(out)
    files = {f"{sub}/{p.name}": p.read_bytes()
             for sub in ("shards", "tokens") for p in sorted((out / sub).iterdir())}  # fmt: skip
    return {
        "data": sorted(read_rows(out, "data"), key=lambda d: d["id"]),
        "ledger": sorted(
            read_rows(out, "rejected"),
            key=lambda r: (r["doc_id"], r["stage"]),
        ),  # fmt: skip
        "counts": m["counts"],
        "files": files,
    }


def documents_seconds(out: Path) -> float:
    return next(s["seconds"] for s in manifest(out)["stages"] if s["name"] == "extract")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=28)
    ap.add_argument("--pages-per-file", type=int, default=720)
    ap.add_argument("--chunk-files", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale.json"))
    args = ap.parse_args()
    files = build_crawl(args.files, args.pages_per_file)
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.chunks.files = args.chunk_files
    cfg.output.data_files = 4  # the same data files whatever ran when
    config = WORK / "run.yaml"
    config.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    runs = WORK / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir(parents=True)
    res: dict = {"files": len(files), "chunk_files": args.chunk_files}

    def fresh(name: str, inputs: list[str]) -> tuple[Path, dict]:
        out = runs / name
        r = curate(config, inputs, out)
        m = manifest(out)
        r.update(records=m["counts"]["read"], kept=m["counts"]["kept"],
                 records_per_s=round(m["counts"]["read"] / r["seconds"], 1),
                 documents_pass_s=documents_seconds(out))  # fmt: skip
        print(name, json.dumps(r), flush=True)
        return out, r

    half = max(1, len(files) * 12 // 28)
    _, res["fresh_small"] = fresh("small", files[:half])
    full, res["fresh_all"] = fresh("all", files)

    # killed once 70% of the chunks are committed, then the same command again
    out = runs / "killed"
    n_chunks = len(manifest(full)["chunks"])
    docs = out / "_stages" / "documents"

    def at_70() -> bool:
        return len(list(docs.glob("chunk-*/_STAGE.json"))) >= 0.7 * n_chunks

    killed = curate(config, files, out, kill_when=at_70)
    rerun = curate(config, files, out)
    statuses = [c["status"] for c in manifest(out)["chunks"]]
    res["killed_at_70"] = {
        "killed_after_s": killed["seconds"], "rerun_s": rerun["seconds"],
        "chunks_reused": statuses.count("reused"), "chunks_ran": statuses.count("ran"),
        "rerun_documents_pass_s": documents_seconds(out),
        "ratio_to_undisturbed_documents_pass": round(
            documents_seconds(out) / res["fresh_all"]["documents_pass_s"], 3),
        "output_identical": published(out) == published(full),
    }  # fmt: skip
    print("killed", json.dumps(res["killed_at_70"]), flush=True)

    # the crawl less its last 10% of files, then all of it
    out = runs / "incremental"
    keep = len(files) - max(1, round(len(files) * 0.1))
    curate(config, files[:keep], out)
    r = curate(config, files, out)
    statuses = [c["status"] for c in manifest(out)["chunks"]]
    res["add_10_percent"] = {
        "files_added": len(files) - keep, "seconds": r["seconds"],
        "ratio_to_fresh": round(r["seconds"] / res["fresh_all"]["seconds"], 3),
        "chunks_reused": statuses.count("reused"), "chunks_ran": statuses.count("ran"),
        "output_identical": published(out) == published(full),
    }  # fmt: skip
    print("incremental", json.dumps(res["add_10_percent"]), flush=True)
    # retune a per-document threshold on the finished run
    tuned_cfg = cfg.model_copy(deep=True)
    tuned_cfg.langid.threshold = 0.5
    tuned = WORK / "tuned.yaml"
    tuned.write_text(yaml.safe_dump(tuned_cfg.model_dump(mode="json")))
    r = curate(tuned, files, full)
    res["retune_langid_threshold"] = {
        "seconds": r["seconds"],
        "ratio_to_fresh": round(r["seconds"] / res["fresh_all"]["seconds"], 3),
        "chunks": sorted({c["status"] for c in manifest(full)["chunks"]}),
    }
    print("retune", json.dumps(res["retune_langid_threshold"]), flush=True)

    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
