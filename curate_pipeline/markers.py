"""A piece of work's completion marker, `_STAGE.json` (curate_pipeline/run/stage_store.py writes
it):
read without Spark, by the run and by readers of a finished output (`curate explore`)."""

from __future__ import annotations

import json

from curate_pipeline.location import Location

MARKER = "_STAGE.json"


def read_marker(path: Location) -> dict | None:
    """A committed marker (one that lists its files), or None."""
    try:
        marker = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker.get("files"), list) else None


def listed_files(path: Location, marker: dict) -> list[Location]:
    return [path / f["file"] for f in marker["files"]]
