"""A finished run's documents and ledger in a comparable form (sorted, paths left out), and
the folder of an output's current version."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from curate_pipeline.location import Location
from curate_pipeline.outputs.publish.versions import current, current_dir


def published(out: Path | str | Location) -> Path | Location:
    """DIR/versions/F of the newest committed version (outputs/publish/versions.py): a Path
    for a local output given as a path, a Location for one given as a Location."""
    found = current_dir(out)
    return found if isinstance(out, Location) else Path(found.uri)


def version_rows(out: Path | str | Location, sub: str, columns: list[str] | None = None
                 ) -> list[dict]:  # fmt: skip
    """The rows of the current version's `sub` (data, rejected, index): the files its commit
    lists, those an appended version took over from earlier versions among them."""
    files = current(out).files(sub)
    return [r for f in files for r in pq.read_table(f.uri, columns=columns).to_pylist()]


def run_outputs(out: Path) -> tuple[list, list]:
    data = sorted((d["id"], d["text"]) for d in version_rows(out, "data"))
    ledger = sorted(
        (r["doc_id"], r["stage"], r["reason"], r["detail"] or "")
        for r in version_rows(out, "rejected")
    )
    return data, ledger


def full_outputs(out: Path) -> tuple[list, list, dict]:
    """Documents with their url, source and lang, the ledger, and the manifest's counts."""
    import json

    data = sorted(
        (d["id"], d["text"], d["url"], d["source"], d["lang"]) for d in version_rows(out, "data")
    )
    ledger = sorted(
        (r["doc_id"], r["stage"], r["reason"], r["detail"] or "")
        for r in version_rows(out, "rejected")
    )
    return data, ledger, json.loads((published(out) / "manifest.json").read_text())["counts"]
