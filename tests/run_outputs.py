"""A finished run's documents and ledger in a comparable form (sorted, paths left out), and
the folder of an output's current version."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from pipeline.location import Location
from pipeline.versions import current_dir


def published(out: Path | str | Location) -> Path | Location:
    """DIR/versions/N of the newest committed version (pipeline/versions.py): a Path for a
    local output given as a path, a Location for one given as a Location."""
    found = current_dir(out)
    return found if isinstance(out, Location) else Path(found.uri)


def run_outputs(out: Path) -> tuple[list, list]:
    v = published(out)
    data = sorted((d["id"], d["text"]) for d in pq.read_table(v / "data").to_pylist())
    ledger = sorted(
        (r["doc_id"], r["stage"], r["reason"], r["detail"] or "")
        for r in pq.read_table(v / "rejected").to_pylist()
    )
    return data, ledger
