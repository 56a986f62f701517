"""Token shards: the format a trainer memory-maps, its writer and a small reader.

A shard `shard-NNNNN` is two files:
- `shard-NNNNN.bin`: the token ids of its documents, one after another, each followed by the
  end-of-text token, as little-endian unsigned integers of the width in `index.json`
  (uint16 when the vocabulary fits in 65,536 ids, else uint32);
- `shard-NNNNN.idx`: little-endian int64 offsets (in tokens) of each document's start, plus
  the end: document i is bin[idx[i] : idx[i+1] - 1] (the last token of the span is the EOT).
`index.json` beside them names the tokenizer, dtype, EOT token and every shard's documents
and tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from curate_pipeline.location import Location
from curate_pipeline.outputs.publish.versions import locate


def write_token_shard(
    path_stem: Path, docs: Sequence[Sequence[int]], eot: int, dtype: np.dtype
) -> int:
    """Write one shard; returns its token count (EOT tokens included)."""
    lengths = np.fromiter((len(d) + 1 for d in docs), dtype=np.int64, count=len(docs))
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype("<i8")
    flat = np.empty(int(offsets[-1]), dtype=dtype)
    for i, d in enumerate(docs):
        flat[offsets[i] : offsets[i + 1] - 1] = d
        flat[offsets[i + 1] - 1] = eot
    tmp_bin, tmp_idx = path_stem.with_suffix(".bin.part"), path_stem.with_suffix(".idx.part")
    flat.tofile(tmp_bin)
    offsets.tofile(tmp_idx)
    tmp_bin.replace(path_stem.with_suffix(".bin"))
    tmp_idx.replace(path_stem.with_suffix(".idx"))
    return int(offsets[-1])


class _RangedTokens:
    """A shard's `.bin` in an object store: each slice is one ranged read."""

    def __init__(self, loc: Location, dtype: np.dtype):
        self.file, self.dtype = loc.open_input(), dtype

    def __getitem__(self, span: slice) -> np.ndarray:
        item = self.dtype.itemsize
        data = self.file.read_at((span.stop - span.start) * item, span.start * item)
        return np.frombuffer(data, dtype=self.dtype)


class TokenShards:
    """Token shards, local (memory-mapped) or in a store (ranged reads): `len()`, `[i]` (a
    document's ids), iteration."""

    def __init__(self, directory: str | Path | Location):
        self.dir = Location.of(directory)
        self.index = json.loads((self.dir / "index.json").read_text())
        self.dtype = np.dtype(self.index["dtype"])
        self.eot = self.index["eot_token"]
        self._shards = []
        for sh in self.index["shards"]:
            # a shard an appended version took over lies in its own version's tokens/
            stem = (
                self.dir / sh["name"]
                if "version" not in sh
                else locate(self.dir.parent, "tokens", {"file": sh["name"]} | sh)
            )
            bin_, idx = Location(stem.uri + ".bin"), Location(stem.uri + ".idx")
            tokens = (np.memmap(bin_.uri, dtype=self.dtype, mode="r") if bin_.is_local
                      else _RangedTokens(bin_, self.dtype))  # fmt: skip
            offsets = np.frombuffer(idx.read_bytes(), dtype="<i8")
            self._shards.append((tokens, offsets))
        self._starts = np.cumsum([0] + [len(o) - 1 for _, o in self._shards])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self):
            raise IndexError(i)
        s = int(np.searchsorted(self._starts, i, side="right") - 1)
        tokens, offsets = self._shards[s]
        j = i - int(self._starts[s])
        return tokens[offsets[j] : offsets[j + 1] - 1]

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(len(self)):
            yield self[i]
