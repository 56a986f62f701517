"""Are two run outputs the same? Every file under data/, rejected/, shards/, tokens/ and
budget.json, paired by name (Spark's per-job UUIDs in part-file names normalised):

- byte for byte, or
- for Parquet files Spark wrote: the same length, every differing byte inside the footer, and
  equal tables, schemas and key-value metadata. parquet-mr writes each column chunk's
  encodings from a HashSet of enums, whose order changes from one JVM to the next: two runs
  of the same code on the same input differ there and nowhere else.

    python bench/same_outputs.py OUT_A OUT_B     # exit 0 when the same
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyarrow.parquet as pq

from curate_pipeline.outputs.publish.versions import published_path

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def outputs(root: Path) -> dict[str, Path]:
    """The published files of an output's current version, by name within it."""
    top, root = root, published_path(root)
    out = {}
    for sub in ("data", "rejected", "shards", "tokens"):  # tables in DIR/<sub>/<writer>/
        folder = top / sub / root.name if sub in ("data", "rejected") else root / sub
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not p.name.startswith((".", "_")):
                out[UUID.sub("UUID", f"{sub}/{p.relative_to(folder)}")] = p
    if (root / "budget.json").is_file():
        out["budget.json"] = root / "budget.json"
    return out


def footer_only(a: Path, b: Path) -> bool:
    x, y = a.read_bytes(), b.read_bytes()
    if len(x) != len(y) or x[-4:] != b"PAR1":
        return False
    footer = len(x) - int.from_bytes(x[-8:-4], "little") - 8
    if x[:footer] != y[:footer]:
        return False
    ta, tb = pq.read_table(a), pq.read_table(b)
    return ta.equals(tb) and pq.read_metadata(a).metadata == pq.read_metadata(b).metadata


def main() -> int:
    a, b = outputs(Path(sys.argv[1])), outputs(Path(sys.argv[2]))
    if sorted(a) != sorted(b):
        print("different files:", sorted(set(a) ^ set(b)))
        return 1
    identical = footers = 0
    for name in sorted(a):
        if a[name].read_bytes() == b[name].read_bytes():
            identical += 1
        elif name.endswith(".parquet") and footer_only(a[name], b[name]):
            footers += 1
        else:
            print("differs:", name)
            return 1
    print(f"same: {identical} files byte for byte, {footers} Parquet files equal but for the "
          "order of the encodings in their footers")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
