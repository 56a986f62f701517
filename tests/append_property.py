"""The append property (issue 61): a corpus cut at random into a first run plus appends
decides each added file's documents as one run over all the files decides them, but for the
documented exception (docs/outputs.md, appending): a new document near only an earlier
*dropped* one (the index holds kept documents) is kept by the append where one run drops it
as near_dup. Shared by tests/test_append_property.py and bench/append_property_bench.py."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow.parquet as pq

from curate_pipeline.outputs.publish import versions


def decisions(out: Path) -> dict[tuple[str, str], str]:
    """(input file name, doc_id) -> "kept" or "stage:reason", from the current version (every
    file its commit lists)."""
    v = versions.current(out)
    got = {}
    for f in v.files("data"):
        t = pq.read_table(f.uri, columns=["id", "metadata"]).to_pylist()
        for r in t:
            got[(Path(r["metadata"]["warc_file"]).name, r["id"])] = "kept"
    for f in v.files("rejected"):
        for r in pq.read_table(
            f.uri, columns=["doc_id", "warc_file", "stage", "reason"]
        ).to_pylist():
            got[(Path(r["warc_file"] or "").name, r["doc_id"])] = f"{r['stage']}:{r['reason']}"
    return got


def random_cuts(n_files: int, rng: random.Random) -> list[int]:
    """Where a split ends each run but the last: 1 to 3 appends after a first run."""
    k = rng.randint(1, min(3, n_files - 1))
    return sorted(rng.sample(range(1, n_files), k))


def split_differences(run, files: list[str], cuts: list[int], out: Path,
                      whole: dict) -> tuple[int, list[str], list[str]]:  # fmt: skip
    """Runs `run(inputs, out)` for files[:c] at each cut, then all files (appending), and
    compares the added files' documents with `whole` (one run's decisions). Returns
    (documents compared, documented differences, other differences)."""
    for c in [*cuts, len(files)]:
        run(files[:c], out)
    got = decisions(out)
    added = {Path(f).name for f in files[cuts[0] :]}
    compared, allowed, other = 0, [], []
    for key, want in sorted(whole.items()):
        if key[0] not in added:
            continue
        compared += 1
        have = got.get(key)
        if (have == "kept") == (want == "kept"):
            continue
        line = f"{key[1]} in {key[0]}: append {have}, one run {want}"
        (allowed if have == "kept" and want == "near_dup:duplicate" else other).append(line)
    return compared, allowed, other
