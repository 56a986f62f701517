"""A finished run's documents and ledger in a comparable form (sorted, paths left out)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq


def run_outputs(out: Path) -> tuple[list, list]:
    data = sorted((d["id"], d["text"]) for d in pq.read_table(out / "data").to_pylist())
    ledger = sorted(
        (r["doc_id"], r["stage"], r["reason"], r["detail"] or "")
        for r in pq.read_table(out / "rejected").to_pylist()
    )
    return data, ledger
