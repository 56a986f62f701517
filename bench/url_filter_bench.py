"""The URL filter at list sizes like UT1's: load time and memory per million blocked domains,
and verdicts per second on real URLs (the WCXB dev and scrapinghub pages' URLs, each also
with a subdomain and a path added so that domain walks are realistic).

    python bench/url_filter_bench.py [--millions 1 2]

Writes bench/results/url_filter.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import UrlFilterConf  # noqa: E402
from curate_pipeline.document.url_filter import load_url_filter  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "extraction"
WORK = ROOT / "bench" / "work" / "url_filter"


def real_urls() -> list[str]:
    urls = [json.loads(p.read_text()).get("url") for p in
            sorted((DATA / "wcxb_dev" / "ground-truth").glob("*.json"))]  # fmt: skip
    aeb = json.loads((DATA / "scrapinghub_aeb" / "ground-truth.json").read_text())
    urls += [v["url"] for v in aeb.values()]
    return [u for u in urls if u]


def domains(n: int, rng: random.Random) -> list[str]:
    tlds = ["com", "net", "org", "de", "ru", "info", "xyz", "co.uk", "fr", "io"]
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    return ["".join(rng.choices(letters, k=rng.randint(5, 14))) + "." + rng.choice(tlds)
            for _ in range(n)]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--millions", type=float, nargs="+", default=[1, 2])
    args = ap.parse_args()
    rng = random.Random(0)
    WORK.mkdir(parents=True, exist_ok=True)
    urls = real_urls()
    probe = urls + [u.replace("://", "://www.sub.", 1) + "/a/b?c=d" for u in urls]
    proc = psutil.Process(os.getpid())
    results = {"urls_probed": len(probe), "sizes": {}}
    for m in args.millions:
        n = int(m * 1_000_000)
        listed = domains(n, rng) + [u.split("/")[2] for u in urls[:50]]  # 50 real hits
        path = WORK / f"domains-{n}.txt.gz"
        path.write_bytes(gzip.compress("\n".join(listed).encode()))
        before = proc.memory_info().rss
        t0 = time.perf_counter()
        f = load_url_filter(UrlFilterConf(enabled=True, blocked_domains=[str(path)]))
        load_s = time.perf_counter() - t0
        mem = (proc.memory_info().rss - before) / 2**20
        rounds = []
        for _ in range(5):
            t0 = time.perf_counter()
            hits = sum(f.verdict(u) is not None for u in probe)
            rounds.append(len(probe) / (time.perf_counter() - t0))
        results["sizes"][str(n)] = {
            "load_s": round(load_s, 2), "rss_mib": round(mem), "rss_mib_per_million":
            round(mem / m), "verdicts_per_s": round(statistics.median(rounds)), "hits": hits,
        }  # fmt: skip
        print(n, results["sizes"][str(n)], flush=True)
        del f
    dest = ROOT / "bench" / "results" / "url_filter.json"
    dest.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
