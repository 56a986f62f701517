"""The anchor side of bench/e2e_bench.py: datatrove's closest equivalent of our stage chain.

Runs in its own venv (bench/requirements-anchor.txt), never imports `pipeline`. FineWeb's
blocks, with our thresholds (which are theirs): WarcReader -> Trafilatura -> LanguageFilter
(en, 0.65) -> GopherRepetitionFilter -> GopherQualityFilter, then exact dedup (3 steps) and
MinHash dedup (4 steps, 14 x 8, 5-grams), each on LocalPipelineExecutor(tasks=2, workers=2)
but for the steps datatrove runs as one task. Every filter has an exclusion writer, so each
dropped document carries the name of the block that dropped it.

    python bench/e2e_datatrove.py --warc-dir DIR --work DIR --lid models/lid.176.ftz --out r.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import time
from pathlib import Path


def _docs(folder: Path) -> list[dict]:
    out = []
    for p in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(p, "rt") as fh:
            out.extend(json.loads(line) for line in fh)
    return out


def normalised_text(doc) -> str:
    """Our exact-dedup key: lowercased, whitespace collapsed (curate_pipeline/document/dedup)."""
    return " ".join(doc.text.lower().split())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warc-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--lid", required=True, help="local lid.176 model (no download)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0)
    args = ap.parse_args()

    t_import = time.perf_counter()
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.exact_dedup import (
        ExactDedupConfig,
        ExactDedupFilter,
        ExactDedupSignature,
        ExactFindDedups,
    )
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.writers import JsonlWriter

    import_s = time.perf_counter() - t_import

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    w = {k: str(work / k) for k in ("filtered", "exact_sigs", "exact_dups", "deduped",
                                    "mh_sigs", "mh_buckets", "mh_clusters", "final",
                                    "removed", "logs")}  # fmt: skip
    tasks, workers = args.tasks, args.workers
    exact = ExactDedupConfig(content_getter=normalised_text)
    minhash = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8)

    def removed(name: str) -> JsonlWriter:
        return JsonlWriter(f"{w['removed']}/{name}")

    lid = LanguageFilter(languages=["en"], language_threshold=0.65,
                         exclusion_writer=removed("language"))  # fmt: skip
    # The asset loader takes a local path in place of the model URL: no download. Set on the
    # instance, which travels to the worker processes pickled.
    lid.model.MODEL_URL = str(Path(args.lid).resolve())

    steps = [
        ("read+extract+filter+exact_sig", tasks, [
            WarcReader(args.warc_dir, glob_pattern="*.warc.gz"),
            Trafilatura(favour_precision=True, deduplicate=False, timeout=args.timeout),
            lid,
            GopherRepetitionFilter(exclusion_writer=removed("gopher_repetition")),
            GopherQualityFilter(exclusion_writer=removed("gopher_quality")),
            JsonlWriter(w["filtered"]),
            ExactDedupSignature(w["exact_sigs"], config=exact),
        ]),
        ("exact_find", 1, [ExactFindDedups(w["exact_sigs"], w["exact_dups"], config=exact)]),
        ("exact_filter+minhash_sig", tasks, [
            JsonlReader(w["filtered"]),
            ExactDedupFilter(w["exact_dups"], config=exact, exclusion_writer=removed("exact")),
            JsonlWriter(w["deduped"]),
            MinhashDedupSignature(w["mh_sigs"], config=minhash),
        ]),
        ("minhash_buckets", minhash.num_buckets,
         [MinhashDedupBuckets(w["mh_sigs"], w["mh_buckets"], config=minhash)]),
        ("minhash_cluster", 1,
         [MinhashDedupCluster(w["mh_buckets"], w["mh_clusters"], config=minhash)]),
        ("minhash_filter", tasks, [
            JsonlReader(w["deduped"]),
            MinhashDedupFilter(w["mh_clusters"], exclusion_writer=removed("minhash")),
            JsonlWriter(w["final"]),
        ]),
    ]  # fmt: skip
    step_seconds = {}
    t0 = time.perf_counter()
    for i, (name, n_tasks, blocks) in enumerate(steps):
        t = time.perf_counter()
        LocalPipelineExecutor(
            pipeline=blocks,
            tasks=n_tasks,
            workers=min(workers, n_tasks),
            logging_dir=f"{w['logs']}/{i}_{name}",
            skip_completed=False,
        ).run()
        step_seconds[name] = round(time.perf_counter() - t, 3)
    total = time.perf_counter() - t0

    # Per-block time inside the first step (datatrove's own stats, summed over tasks).
    stats = json.loads((Path(w["logs"]) / "0_read+extract+filter+exact_sig" / "stats.json")
                       .read_text())  # fmt: skip
    blocks = {s["name"]: round(s.get("time_stats", {}).get("total", 0.0), 3) for s in stats}
    kept = [d.get("metadata", {}).get("url") for d in _docs(Path(w["final"]))]
    why: dict[str, str] = {}
    for name in ("language", "gopher_repetition", "gopher_quality", "exact", "minhash"):
        for d in _docs(Path(w["removed"]) / name):
            meta = d.get("metadata", {})
            reason = meta.get("filter_reason")
            why[meta.get("url")] = f"{name}:{reason}" if reason else name
    from importlib.metadata import version

    Path(args.out).write_text(json.dumps({
        "versions": {p: version(p) for p in ("datatrove", "trafilatura", "spacy")},
        "import_seconds": round(import_s, 3),
        "seconds": round(total, 3),
        "step_seconds": step_seconds,
        "block_seconds": blocks,
        "kept_urls": kept,
        "removed": why,
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
