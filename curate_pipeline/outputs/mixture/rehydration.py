"""Rehydration (FineWeb-2): a kept document counts as several, by the size of its MinHash
cluster and its language's table.

FineWeb-2 deduplicates each language, then repeats each kept document by how many
duplicates it had: its tables (conf/fineweb2/rehydration/up_to_{05,10}_reps.json,
`{language: {cluster size: repeats}}`) give the most repeats to the cluster sizes whose
documents its filters removed least. A size not listed takes the weight of the nearest smaller
listed size (sizes below the first: 1), as the Rehydrater in FineWeb-2's README expands them.
A document without a recipe key or of a language without a table counts once.
"""

from __future__ import annotations

import bisect
import json


class Rehydration:
    """{language key: {cluster size: repeats}} as sorted lookups."""

    def __init__(self, table: dict[str, dict[str, int]], where: str = "rehydration table"):
        self.sizes: dict[str, list[int]] = {}
        self.weights: dict[str, list[int]] = {}
        for key, rows in table.items():
            try:
                pairs = sorted((int(size), int(w)) for size, w in rows.items())
            except (AttributeError, TypeError, ValueError):
                raise ValueError(f"{where}: {key}: expected {{cluster size: repeats}}, "
                                 f"got {rows!r}") from None  # fmt: skip
            if any(w < 1 for _, w in pairs):
                raise ValueError(f"{where}: {key}: repeats must be at least 1")
            self.sizes[key] = [s for s, _ in pairs]
            self.weights[key] = [w for _, w in pairs]

    @classmethod
    def from_json(cls, text: str, where: str) -> Rehydration:
        try:
            table = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not JSON ({e})") from None
        if not isinstance(table, dict):
            raise ValueError(f"{where}: expected {{language: {{cluster size: repeats}}}}")
        return cls(table, where)

    @classmethod
    def load(cls, path: str) -> Rehydration:
        """The table at `path` (mixture.rehydration: a local path or a URI)."""
        from curate_pipeline.location import conf_location

        loc = conf_location(path, "mixture.rehydration table", "set mixture.rehydration to "
                            "conf/fineweb2/rehydration/up_to_05_reps.json, or null")  # fmt: skip
        return cls.from_json(loc.read_text(), str(loc))

    def repeats(self, key: str | None, cluster_size: int | None) -> int:
        sizes = self.sizes.get(key or "")
        if not sizes:
            return 1
        i = bisect.bisect_right(sizes, cluster_size or 1) - 1
        return self.weights[key][i] if i >= 0 else 1  # type: ignore[index]
