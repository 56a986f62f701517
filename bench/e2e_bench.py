"""End-to-end benchmark: our pipeline against datatrove (the FineWeb pipeline), side by side
on the same WARC and the same cores, in one run.

Builds a benchmark WARC from the 181 real pages of ../shared/data/extraction/scrapinghub_aeb
plus about 15% duplicates under other URLs (half byte-identical, half with a one-word edit),
or takes the WARC files given on the command line. Then, alternating, `--rounds` times each:
  * ours: `curate run` in local[2] (conf/default.yaml without the quality classifier, which
    FineWeb's chain does not have, and with FineWeb's extraction settings, as datatrove's
    side), a fresh process each time;
  * theirs: bench/e2e_datatrove.py in the anchor venv (LocalPipelineExecutor, tasks=2,
    workers=2), a fresh process each time;
and, once a round, the physical floor: trafilatura alone over the same records in one
process, divided by the cores. Reports medians of wall time, docs/s, peak memory (RSS of the
whole process tree, sampled every 50 ms) and time per stage, the kept-set agreement by URL
with a sample of disagreements and each side's reason. Writes bench/results/e2e.json.

    make bench-e2e        # builds bench/.venv-anchor, then runs this
    python bench/e2e_bench.py [WARC ...] [--rounds 3] [--anchor-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil
import yaml

from curate_pipeline.config import load_config
from curate_pipeline.document.extract import extract_text
from curate_pipeline.document.warc.decode import decode_body, to_unicode
from curate_pipeline.document.warc.records import RecordPolicy, iter_warc_rows
from curate_pipeline.examples.corpus import (
    Page,
    folder_pages,
    small_edit,
    with_duplicates,
    write_pages_warc,
)
from curate_pipeline.outputs.publish.versions import published_path, read_rows

ROOT = Path(__file__).resolve().parents[1]
AEB = ROOT.parent / "shared" / "data" / "extraction" / "scrapinghub_aeb"
WORK = ROOT / "bench" / "work" / "e2e"
RESULTS = ROOT / "bench" / "results"
LID = ROOT / "models" / "lid.176.ftz"


def build_warc(path: Path, copy: int = 0) -> int:
    """The benchmark WARC; `copy` k > 0 is a later crawl of the same pages: new URLs and a
    one-word edit in every page, so no payload repeats an earlier copy's bytes."""
    truth = json.loads((AEB / "ground-truth.json").read_text())
    rng = random.Random(copy)
    pages = []
    for sha, item in sorted(truth.items()):
        html = (AEB / "html" / f"{sha}.html").read_bytes()
        url = item["url"]
        if copy:
            html, url = small_edit(html, rng), f"{url.rstrip('/')}/crawl-{copy}"
        pages.append(Page(url, html, "text/html"))
    return write_pages_warc(path, with_duplicates(pages, share=0.15, seed=copy), tag=f"e2e{copy}")


def _kind(p: psutil.Process) -> str:
    """jvm, python (driver, Spark's workers, datatrove's processes), or other (shell)."""
    try:
        name = os.path.basename(p.exe())
    except psutil.Error:
        return "other"
    return "jvm" if name.startswith("java") else "python" if "python" in name else "other"


def measure(cmd: list[str], env: dict | None = None) -> tuple[float, int, str, dict]:
    """(wall seconds, peak memory of the process tree, output tail, CPU seconds per kind of
    process: the last reading of each, sampled every 0.1 s) of a command. Memory is the sum
    of PSS (each shared page split between the processes sharing it): Spark's Python workers
    and datatrove's are forked and share most of their pages, which RSS would count again
    in every process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)  # fmt: skip
    ps = psutil.Process(proc.pid)
    peak = 0
    out = []
    cpu: dict[int, tuple[str, float]] = {}
    os.set_blocking(proc.stdout.fileno(), False)
    tick = 0
    while proc.poll() is None:
        # CPU every 0.1 s; PSS every second: reading a JVM's smaps is itself costly
        pss = tick % 10 == 0
        tick += 1
        rss = 0
        try:
            for p in [ps, *ps.children(recursive=True)]:
                try:
                    if pss:
                        rss += p.memory_full_info().pss
                    t = p.cpu_times()
                    cpu[p.pid] = (_kind(p), t.user + t.system)  # a shell may exec java
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        peak = max(peak, rss)
        chunk = proc.stdout.read()
        if chunk:
            out.append(chunk)
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    out.append(proc.stdout.read() or b"")
    text = b"".join(out).decode(errors="replace")
    if proc.returncode:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{text[-4000:]}")
    by_kind: dict[str, float] = {}
    for kind, seconds in cpu.values():
        by_kind[kind] = round(by_kind.get(kind, 0.0) + seconds, 2)
    return wall, peak, text[-2000:], by_kind


def floor_seconds(warcs: list[Path], cfg) -> tuple[float, int]:
    """trafilatura alone over the records' decoded HTML, one process: (seconds, records).
    Records are read and decoded one at a time, untimed (the floor is extraction only), so
    memory stays flat whatever the crawl's size (bench/scale_floor_bench.py: 23k records)."""
    policy = RecordPolicy.from_conf(cfg.read)
    spent, n = 0.0, 0
    for i, w in enumerate(warcs):
        with open(w, "rb") as fh:
            for row in iter_warc_rows(fh, i, str(w), policy):
                if row["reject_reason"] is not None:
                    continue
                body = decode_body(row["payload"], row["transfer_encoding"],
                                   row["content_encoding"], cfg.read.max_decoded_bytes)  # fmt: skip
                html = to_unicode(body, row["content_type"])[0]
                t0 = time.perf_counter()
                extract_text(html, row["url"], cfg.extract)
                spent += time.perf_counter() - t0
                n += 1
    return spent, n


def ours_outcome(out: Path) -> tuple[list[str], dict[str, str]]:
    kept = [r["url"] for r in read_rows(out, "data", ["url"])]
    why = {r["url"]: f"{r['stage']}:{r['reason']}"
           for r in read_rows(out, "rejected")}  # fmt: skip
    return kept, why


def _median(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warcs", nargs="*", help="WARC files (default: build the benchmark WARC)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--copies", type=int, default=1,
                    help="benchmark WARCs to build: later copies are edited re-crawls")  # fmt: skip
    ap.add_argument(
        "--pages",
        nargs="+",
        default=[],
        metavar="DIR",
        help="build the WARC from these folders of HTML pages (urls.tsv: URLs)",
    )
    ap.add_argument(
        "--dup-share",
        type=float,
        default=0.10,
        help="--pages: share of extra copies under mirror URLs (half edited)",
    )
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--anchor-python", default=str(ROOT / "bench" / ".venv-anchor" / "bin" /
                                                    "python"))  # fmt: skip
    ap.add_argument("--out", default=str(RESULTS / "e2e.json"))
    args = ap.parse_args()

    shutil.rmtree(WORK, ignore_errors=True)
    warc_dir = WORK / "warc"
    warc_dir.mkdir(parents=True)
    if args.pages:
        pages = [p for d in args.pages for p in folder_pages(d)]
        crawl = with_duplicates(pages, share=args.dup_share, seed=0)
        n_files = max(2, args.cores)  # one file a task for datatrove, which reads files whole
        warcs = [warc_dir / f"pages-{k}.warc.gz" for k in range(n_files)]
        for k, w in enumerate(warcs):
            write_pages_warc(w, crawl[k::n_files], tag=f"pages{k}")
        print(f"{len(crawl)} records ({len(pages)} pages + copies) in {n_files} WARCs",
              flush=True)  # fmt: skip
    elif args.warcs:
        warcs = []
        for i, w in enumerate(args.warcs):
            link = warc_dir / f"{i:04d}-{Path(w).name}"
            link.symlink_to(Path(w).resolve())
            warcs.append(link)
    else:
        warcs = [warc_dir / f"aeb-with-duplicates-{k}.warc.gz" for k in range(args.copies)]
        for k, w in enumerate(warcs):
            build_warc(w, k)
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.quality.enabled = False
    # the same extraction as datatrove's FineWeb chain (ours defaults to trafilatura's own)
    cfg.extract.favor_precision = True
    cfg.extract.include_comments = False
    conf = WORK / "ours.yaml"
    conf.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))

    bin_dir = Path(sys.executable).parent
    ours_cmd = [str(bin_dir / "curate"), "run", "--config", str(conf), "--master",
                f"local[{args.cores}]", "--input", *map(str, warcs), "--output",
                str(WORK / "ours"), "--force"]  # fmt: skip
    theirs_cmd = [args.anchor_python, str(ROOT / "bench" / "e2e_datatrove.py"),
                  "--warc-dir", str(warc_dir), "--work", str(WORK / "theirs"),
                  "--lid", str(LID), "--out", str(WORK / "theirs.json"),
                  "--tasks", str(args.cores), "--workers", str(args.cores)]  # fmt: skip
    ours, theirs, floors = [], [], []
    for r in range(args.rounds):
        order = ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")
        for side in order:
            if side == "ours":
                wall, peak, _, cpu = measure(ours_cmd)
                m = json.loads((published_path(WORK / "ours") / "manifest.json").read_text())
                ours.append({"wall": wall, "peak": peak, "pipeline": m["seconds"], "cpu": cpu,
                             "stages": {s["name"]: s["seconds"] for s in m["stages"]},
                             "task_seconds": m.get("documents_pass_task_seconds", {}),
                             "read": m["counts"]["read"], "kept": m["counts"]["kept"]})  # fmt: skip
            else:
                wall, peak, _, cpu = measure(theirs_cmd)
                t = json.loads((WORK / "theirs.json").read_text())
                theirs.append({"wall": wall, "peak": peak, "pipeline": t["seconds"], "cpu": cpu,
                               "stages": t["step_seconds"], "blocks": t["block_seconds"],
                               "kept": len(t["kept_urls"])})  # fmt: skip
            print(f"round {r + 1} {side:6} wall {wall:6.1f} s  peak {peak / 2**20:6.0f} MiB",
                  flush=True)  # fmt: skip
        f, n_pages = floor_seconds(warcs, cfg)
        floors.append(f)
        print(f"round {r + 1} floor  trafilatura alone {f:6.1f} s over {n_pages} pages "
              f"-> {f / args.cores:.1f} s on {args.cores} cores", flush=True)  # fmt: skip

    # A long-lived driver: run 1 is cold, the later ones what each further input costs.
    warm_cmd = [sys.executable, str(ROOT / "bench" / "e2e_ours_warm.py"), str(conf),
                str(WORK / "ours-warm"), str(args.rounds + 1), *map(str, warcs)]  # fmt: skip
    warm_out = subprocess.run(warm_cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    warm = json.loads(warm_out.stdout.strip().splitlines()[-1])["runs"][1:]
    print("warm session: " + ", ".join(f"{w['seconds']:.1f} s" for w in warm), flush=True)

    records = ours[0]["read"]
    our_kept, our_why = ours_outcome(WORK / "ours")
    t = json.loads((WORK / "theirs.json").read_text())
    their_kept, their_why = set(t["kept_urls"]), t["removed"]
    a, b = set(our_kept), their_kept
    their_read = b | set(their_why)  # what datatrove read (it skips what it cannot parse)
    both = a & b
    only_ours = sorted(a - b)
    only_theirs = sorted(b - a)
    floor = _median(floors) / args.cores
    med = {
        "ours": {k: _median([x[k] for x in ours]) for k in ("wall", "pipeline")},
        "theirs": {k: _median([x[k] for x in theirs]) for k in ("wall", "pipeline")},
    }
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores_used": args.cores,
            "cores_total": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(),
        },  # fmt: skip
        "input": {
            "warcs": [str(w.resolve()) for w in warcs],
            "records": records,
            "megabytes": round(sum(w.stat().st_size for w in warcs) / 1e6, 2),
        },
        "versions": {"ours": _our_versions(), "theirs": t["versions"]},
        "rounds": args.rounds,
        "ours": {
            **_side_figures(ours, records, len(a)),
            "median_startup_seconds": round(med["ours"]["wall"] - med["ours"]["pipeline"], 3),
            "docs_per_s_warm": round(records / med["ours"]["pipeline"], 2),
            # inside the documents pass, per step, summed over tasks
            "documents_pass_task_seconds": _median_stages([x["task_seconds"] for x in ours]),
        },
        "ours_warm_session": {
            "pipeline_seconds": [w["seconds"] for w in warm],
            "median_pipeline_seconds": _median([w["seconds"] for w in warm]),
            "docs_per_s": round(records / _median([w["seconds"] for w in warm]), 2),
            "stage_seconds": _median_stages([w["stages"] for w in warm]),
        },
        "theirs": {
            **_side_figures(theirs, records, len(b)),
            "block_seconds_summed_over_tasks": _median_stages([x["blocks"] for x in theirs]),
        },
        "floor": {
            "trafilatura_one_process_seconds": [round(f, 3) for f in floors],
            "seconds_on_cores": round(floor, 3),
        },
        "ratios": {
            # each round's pair measured side by side, then the median (the machine is noisy)
            "docs_per_s_ours_over_theirs_median_of_rounds": _median(
                [t["wall"] / o["wall"] for o, t in zip(ours, theirs, strict=True)]
            ),
            "docs_per_s_ours_over_theirs": round(med["theirs"]["wall"] / med["ours"]["wall"], 3),
            "docs_per_s_after_startup_ours_over_theirs": round(
                med["theirs"]["wall"] / med["ours"]["pipeline"], 3
            ),
            "docs_per_s_warm_session_ours_over_theirs_pipeline": round(
                med["theirs"]["pipeline"] / _median([w["seconds"] for w in warm]), 3
            ),
            "ours_wall_over_floor": round(med["ours"]["wall"] / floor, 3),
            "ours_warm_session_over_floor": round(_median([w["seconds"] for w in warm]) / floor, 3),
            "ours_after_startup_over_floor": round(med["ours"]["pipeline"] / floor, 3),
        },  # fmt: skip
        "agreement": {
            "kept_by_both": len(both),
            "share_of_union": round(len(both) / max(1, len(a | b)), 4),
            # restricted to the records datatrove read: its silent skips left aside
            "share_of_union_over_records_datatrove_read": round(
                len(both) / max(1, len((a & their_read) | b)), 4
            ),
            "records_datatrove_read": len(their_read),
            "only_ours": len(only_ours),
            "only_theirs": len(only_theirs),
            "sample_only_ours": [
                {"url": u, "theirs": their_why.get(u, "not read")} for u in only_ours[:10]
            ],
            "sample_only_theirs": [
                {"url": u, "ours": our_why.get(u, "not read")} for u in only_theirs[:10]
            ],
            "their_reasons_for_our_extras": _tally(their_why.get(u, "not read") for u in only_ours),
            "our_reasons_for_their_extras": _tally(our_why.get(u, "not read") for u in only_theirs),
        },  # fmt: skip
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    _print(result)
    return 0


def _side_figures(runs: list[dict], records: int, kept: int) -> dict:
    """The figures both sides report: medians over their rounds."""
    wall = _median([x["wall"] for x in runs])
    return {
        "wall_seconds": [round(x["wall"], 3) for x in runs],
        "median_wall_seconds": wall,
        "median_pipeline_seconds": _median([x["pipeline"] for x in runs]),  # after start-up
        "docs_per_s": round(records / wall, 2),
        "median_peak_mib": round(statistics.median(x["peak"] for x in runs) / 2**20),
        "median_cpu_seconds": _median_stages([x["cpu"] for x in runs]),
        "stage_seconds": _median_stages([x["stages"] for x in runs]),
        "kept": kept,
    }


def _our_versions() -> dict[str, str]:
    from importlib import metadata

    return {p: metadata.version(p) for p in ("curate-pipeline", "pyspark", "trafilatura")}


def _median_stages(runs: list[dict[str, float]]) -> dict[str, float]:
    keys = dict.fromkeys(k for r in runs for k in r)
    return {k: _median([r.get(k, 0.0) for r in runs]) for k in keys}


def _tally(reasons) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in reasons:
        out[r] = out.get(r, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _print(r: dict) -> None:
    o, t, f = r["ours"], r["theirs"], r["floor"]
    print(f"\n{r['input']['records']} records, {r['machine']['cores_used']} cores, "
          f"medians of {r['rounds']} alternating runs")  # fmt: skip
    print(f"{'':24}{'ours':>12}{'datatrove':>12}")
    print(f"{'wall s':24}{o['median_wall_seconds']:>12}{t['median_wall_seconds']:>12}")
    print(f"{'docs/s':24}{o['docs_per_s']:>12}{t['docs_per_s']:>12}")
    print(f"{'wall s after start-up':24}{o['median_pipeline_seconds']:>12}"
          f"{t['median_pipeline_seconds']:>12}")  # fmt: skip
    w = r["ours_warm_session"]
    print(f"{'warm session s':24}{w['median_pipeline_seconds']:>12}")
    print(f"{'peak MiB':24}{o['median_peak_mib']:>12}{t['median_peak_mib']:>12}")
    print(f"{'kept':24}{o['kept']:>12}{t['kept']:>12}")
    for kind in sorted(set(o["median_cpu_seconds"]) | set(t["median_cpu_seconds"])):
        print(f"{'cpu s ' + kind:24}{o['median_cpu_seconds'].get(kind, 0):>12}"
              f"{t['median_cpu_seconds'].get(kind, 0):>12}")  # fmt: skip
    print(f"floor (trafilatura alone / cores): {f['seconds_on_cores']} s")
    print(f"ratios: {r['ratios']}")
    brief = {k: v for k, v in r["agreement"].items() if "sample" not in k}
    print(f"agreement: {json.dumps(brief)}")


if __name__ == "__main__":
    sys.exit(main())
