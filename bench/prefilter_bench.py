"""The language pre-filter: how many extractions it saves and what it costs in kept pages.

On a folder of pages (default: bench/work/multilingual, built by bench/multilingual_pages.py
when missing):
  1. per page, without Spark: lid.176 on trafilatura's text (what langid decides today) and
     on each cheap view (resiliparse main content, all visible text) at several thresholds:
     pages the pre-filter would drop, and kept pages it would lose; the views' and
     trafilatura's milliseconds per page;
  2. `curate run` on a WARC of the pages (+10% copies), with and without the pre-filter,
     alternating `--rounds` times: wall time and the kept sets (same ids?).

    python bench/prefilter_bench.py [DIR] [--rounds 2]

Writes bench/results/prefilter.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.document.extract import extract_text  # noqa: E402
from curate_pipeline.document.langid import cheap_view, load_fasttext, predict_languages  # noqa: E402
from curate_pipeline.examples.corpus import folder_pages, with_duplicates, write_pages_warc  # noqa: E402
from curate_pipeline.outputs.publish.versions import published_path, read_rows  # noqa: E402

WORK = ROOT / "bench" / "work" / "prefilter"
THRESHOLDS = (0.5, 0.65, 0.8, 0.9, 0.95)


def per_page(pages, cfg) -> dict:
    model = load_fasttext(str(ROOT / cfg.langid.model))
    htmls = [p.html.decode("utf-8", "replace") for p in pages]
    t0 = time.perf_counter()
    texts = [extract_text(h, p.url, cfg.extract) or "" for h, p in zip(htmls, pages, strict=True)]
    ms_extract = 1000 * (time.perf_counter() - t0) / len(pages)
    full = predict_languages(model, texts)
    kept = [t.strip() != "" and cfg.langid.keeps(lang) and s >= cfg.langid.threshold
            for t, (lang, s) in zip(texts, full, strict=True)]  # fmt: skip
    out = {"pages": len(pages), "kept_by_langid": sum(kept),
           "trafilatura_ms_per_page": round(ms_extract, 2), "views": {}}  # fmt: skip
    for view in ("main", "page"):
        t0 = time.perf_counter()
        views = [cheap_view(h, view, cfg.langid.prefilter_chars) for h in htmls]
        ms_view = 1000 * (time.perf_counter() - t0) / len(pages)
        t0 = time.perf_counter()
        labels = predict_languages(model, views)
        ms_lid = 1000 * (time.perf_counter() - t0) / len(pages)
        rows = {}
        for th in THRESHOLDS:
            drop = [v.strip() != "" and s >= th and not cfg.langid.keeps(lang)
                    for v, (lang, s) in zip(views, labels, strict=True)]  # fmt: skip
            lost = sum(d and k for d, k in zip(drop, kept, strict=True))
            pct = round(100 * lost / max(1, sum(kept)), 3)
            rows[str(th)] = {"dropped_before_extraction": sum(drop), "kept_pages_lost": lost,
                             "kept_pages_lost_pct": pct}  # fmt: skip
        out["views"][view] = {"view_ms_per_page": round(ms_view, 2),
                              "lid_ms_per_page": round(ms_lid, 3), "thresholds": rows}  # fmt: skip
    return out


def runs(pages, cfg, rounds: int) -> dict:
    warc = WORK / "pages.warc.gz"
    crawl = with_duplicates(pages, share=0.10, seed=0)
    write_pages_warc(warc, crawl, tag="prefilter")
    bin_dir = Path(sys.executable).parent
    walls: dict[str, list[float]] = {"on": [], "off": []}
    kept: dict[str, set] = {}
    counts: dict[str, dict] = {}
    for r in range(rounds):
        for side in ("on", "off") if r % 2 == 0 else ("off", "on"):
            c = cfg.model_copy(deep=True)
            c.langid.prefilter = side == "on"
            conf = WORK / f"{side}.yaml"
            conf.write_text(yaml.safe_dump(c.model_dump(mode="json")))
            out = WORK / f"out-{side}"
            cmd = [str(bin_dir / "curate"), "run", "--config", str(conf), "--master", "local[2]",
                   "--input", str(warc), "--output", str(out), "--force"]  # fmt: skip
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
            walls[side].append(time.perf_counter() - t0)
            kept[side] = {d["id"] for d in read_rows(out, "data", ["id"])}
            counts[side] = json.loads((published_path(out) / "manifest.json").read_text())["counts"]
            print(f"round {r + 1} prefilter {side:3}: {walls[side][-1]:.1f} s, "
                  f"{len(kept[side])} kept", flush=True)  # fmt: skip
    same = kept["on"] & kept["off"]
    return {
        "records": counts["on"]["read"],
        "wall_seconds": {k: [round(x, 2) for x in v] for k, v in walls.items()},
        "median_wall_off_over_on": round(
            statistics.median(o / n for o, n in zip(walls["off"], walls["on"], strict=True)), 3),
        "kept_on": len(kept["on"]), "kept_off": len(kept["off"]),
        "kept_identical_share": round(len(same) / max(1, len(kept["on"] | kept["off"])), 5),
        "only_with_prefilter": len(kept["on"] - kept["off"]),
        "only_without_prefilter": len(kept["off"] - kept["on"]),
        "rejected_on": counts["on"]["rejected"], "rejected_off": counts["off"]["rejected"],
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default=str(ROOT / "bench" / "work" / "multilingual"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs-only", action="store_true", help="skip the per-page analysis")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "prefilter.json"))
    args = ap.parse_args()
    folder = Path(args.folder)
    if not (folder / "urls.tsv").is_file():
        subprocess.run([sys.executable, str(ROOT / "bench" / "multilingual_pages.py"),
                        str(folder)], check=True)  # fmt: skip
    WORK.mkdir(parents=True, exist_ok=True)
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.quality.enabled = False
    pages = folder_pages(folder)
    result: dict = {"folder": str(folder)}
    if not args.runs_only:
        result["per_page"] = per_page(pages, cfg)
        print(json.dumps(result["per_page"], indent=1), flush=True)
    result["runs"] = runs(pages, cfg, args.rounds)
    print(json.dumps(result["runs"], indent=1))
    dest = Path(args.out)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
