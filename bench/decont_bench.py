"""Decontamination at benchmark sizes: index build time and memory for ~1M n-grams, and the
per-document check beside extraction on real pages.

Evaluation items are real paragraphs (so that their words are realistic): the Common Crawl
documents of ../shared/data/text, the scrapinghub article bodies and the second half of the
WCXB dev ground truth, one item per paragraph of >= 13 words, until the index holds the
requested n-grams. Documents checked: the first `--pages` WCXB dev pages, extracted with our
trafilatura settings; extraction and the check are timed on the same pages, side by side, in
alternating rounds (medians).

    python bench/decont_bench.py [--ngrams 1000000] [--pages 400] [--rounds 3]

Writes bench/results/decont.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import DecontaminationConf, EvalSet, ExtractConf  # noqa: E402
from curate_pipeline.document.extract import extract_text  # noqa: E402
from curate_pipeline.document.text.decontamination import check  # noqa: E402
from curate_pipeline.stages.decontamination import load_index  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
WCXB = DATA / "extraction" / "wcxb_dev"
WORK = ROOT / "bench" / "work" / "decont"


def paragraphs() -> list[str]:
    texts = []
    for f in sorted((DATA / "text").glob("dolma_*.jsonl")):
        texts += [json.loads(x)["text"] for x in f.read_text().split("\n") if x.strip()]
    aeb = json.loads((DATA / "extraction" / "scrapinghub_aeb" / "ground-truth.json").read_text())
    texts += [v.get("articleBody") or "" for _, v in sorted(aeb.items())]
    gts = sorted((WCXB / "ground-truth").glob("*.json"))
    for p in gts[len(gts) // 2 :]:
        gt = json.loads(p.read_text())["ground_truth"]
        texts.append(gt.get("main_content") or "")
    return [p for t in texts for p in t.split("\n") if len(p.split()) >= 13]


def write_items(n_target: int, n: int) -> tuple[Path, int]:
    """A JSONL set of real paragraphs holding about `n_target` n-grams; beyond what the data
    holds, paragraphs come again with their words rotated (new n-grams, the same words)."""
    paras = paragraphs()
    path = WORK / "items.jsonl.gz"
    total, k = 0, 0
    with gzip.open(path, "wt") as fh:
        while total < n_target:
            p = paras[k % len(paras)]
            words = p.split()
            r = (k // len(paras)) % len(words)
            text = " ".join(words[r:] + words[:r])
            fh.write(json.dumps({"id": f"p{k}", "question": text}) + "\n")
            total += max(0, len(words) - n + 1)
            k += 1
    return path, k


def pages(count: int) -> list[tuple[str, str]]:
    out = []
    for p in sorted((WCXB / "html").glob("*.html.gz"))[:count]:
        gt = json.loads((WCXB / "ground-truth" / p.name.replace(".html.gz", ".json")).read_text())
        out.append((gzip.decompress(p.read_bytes()).decode("utf-8", "replace"), gt.get("url")))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ngrams", type=int, default=1_000_000)
    ap.add_argument("--pages", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    conf = DecontaminationConf(enabled=True)
    path, n_items = write_items(args.ngrams, conf.ngram)
    conf.sets = [EvalSet(name="bench", path=str(path), fields=["question"], id_field="id")]
    proc = psutil.Process(os.getpid())
    before = proc.memory_info().rss
    t0 = time.perf_counter()
    index = load_index(conf)
    build_s = time.perf_counter() - t0
    rss = (proc.memory_info().rss - before) / 2**20
    mib = index.nbytes() / 2**20
    print(f"index: {n_items:,} items, {len(index.hashes):,} distinct n-grams, built in "
          f"{build_s:.1f} s; arrays {mib:.1f} MiB, process +{rss:.0f} MiB")  # fmt: skip

    ex = ExtractConf()
    html = pages(args.pages)
    texts = [extract_text(h, u, ex) or "" for h, u in html]  # warm trafilatura, and the texts
    ext_rounds, chk_rounds = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for h, u in html:
            extract_text(h, u, ex)
        ext_rounds.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        verdicts = [check(t, index) for t in texts]
        chk_rounds.append(time.perf_counter() - t0)
    ext, chk = statistics.median(ext_rounds), statistics.median(chk_rounds)
    words = sum(len(t.split()) for t in texts)
    matched = sum(v.set_name is not None for v in verdicts)
    results = {
        "items": n_items,
        "index_ngrams": int(len(index.hashes)),
        "index_build_s": round(build_s, 2),
        "index_arrays_mib": round(index.nbytes() / 2**20, 1),
        "index_process_rss_mib": round(rss),
        "pages": len(html),
        "words_checked": words,
        "extract_docs_per_s": round(len(html) / ext, 1),
        "check_docs_per_s": round(len(texts) / chk, 1),
        "check_words_per_s": round(words / chk),
        "check_time_vs_extraction": round(chk / ext, 4),
        "pages_matched": matched,
        "rounds": args.rounds,
    }
    print(f"extraction {results['extract_docs_per_s']} docs/s; check "
          f"{results['check_docs_per_s']} docs/s ({results['check_words_per_s']:,} words/s): "
          f"{100 * chk / ext:.1f}% of extraction time; {matched} pages matched")  # fmt: skip
    dest = ROOT / "bench" / "results" / "decont.json"
    dest.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
