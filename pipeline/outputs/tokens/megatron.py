"""Token shards as Megatron-LM's indexed dataset (`megatron.core.datasets.indexed_dataset`),
so Megatron-LM and NeMo read them as they are.

A dataset `PREFIX` is `PREFIX.bin` (the token ids, one sequence after another) and
`PREFIX.idx`:
  b"MMIDIDX\\x00\\x00"             9-byte magic
  <Q version = 1
  <B dtype code                 1 uint8, 4 int32, 5 int64, 8 uint16 (Megatron's DType)
  <Q sequence count n
  <Q document count n + 1
  n x <i4 sequence lengths      in tokens
  n x <i8 sequence pointers     byte offset of each sequence in the .bin
  (n + 1) x <i8 document indices   0, 1, ..., n: one sequence per document
Our `.bin` already is that layout (each document's ids followed by the end-of-text token, so
every sequence carries its EOT as `preprocess_data.py --append-eod` writes it), so the
Megatron `.bin` is the same file (hard-linked); only the `.idx` is written. Token ids above
65,535 are stored as uint32 by us and declared int32 to Megatron (no uint32 code there): the
bytes are the same for every id below 2^31.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
CODES = {np.dtype("uint8"): 1, np.dtype("uint16"): 8, np.dtype("uint32"): 4,
         np.dtype("int32"): 4, np.dtype("int64"): 5}  # fmt: skip


def dtype_code(dtype: np.dtype) -> int:
    try:
        return CODES[np.dtype(dtype).newbyteorder("=")]
    except KeyError:
        raise ValueError(f"no Megatron dtype code for {dtype}") from None


def _link(src: Path, dst: Path) -> None:
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # another file system: a copy
        shutil.copyfile(src, dst)


def _header(fh, dtype: np.dtype, n: int) -> None:
    fh.write(MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", dtype_code(dtype)))
    fh.write(struct.pack("<Q", n) + struct.pack("<Q", n + 1))


def write_shard(native_stem: Path, out_stem: Path, dtype: np.dtype) -> int:
    """`out_stem`.bin/.idx for the native shard `native_stem`; returns its documents."""
    offsets = np.fromfile(native_stem.with_suffix(".idx"), dtype="<i8")
    n = len(offsets) - 1
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    _link(native_stem.with_suffix(".bin"), out_stem.with_suffix(".bin"))
    tmp = out_stem.with_suffix(".idx.part")
    with open(tmp, "wb") as fh:
        _header(fh, dtype, n)
        fh.write(np.diff(offsets).astype("<i4").tobytes())
        fh.write((offsets[:-1] * np.dtype(dtype).itemsize).astype("<i8").tobytes())
        fh.write(np.arange(n + 1, dtype="<i8").tobytes())
    tmp.replace(out_stem.with_suffix(".idx"))
    return n


def write_merged(native_stems: Sequence[Path], out_stem: Path, dtype: np.dtype) -> int:
    """One dataset of all shards in order, streamed shard by shard (memory: one shard's
    index at a time); returns its documents."""
    counts = [len(np.fromfile(s.with_suffix(".idx"), dtype="<i8")) - 1 for s in native_stems]
    n = sum(counts)
    item = np.dtype(dtype).itemsize
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    tmp_bin, tmp_idx = out_stem.with_suffix(".bin.part"), out_stem.with_suffix(".idx.part")
    with open(tmp_bin, "wb") as out:
        for s in native_stems:
            with open(s.with_suffix(".bin"), "rb") as src:
                shutil.copyfileobj(src, out, 8 << 20)
    with open(tmp_idx, "wb") as fh:
        _header(fh, dtype, n)
        for s in native_stems:  # lengths
            fh.write(
                np.diff(np.fromfile(s.with_suffix(".idx"), dtype="<i8")).astype("<i4").tobytes()
            )
        base = 0
        for s in native_stems:  # pointers, shard by shard after the ones before
            offsets = np.fromfile(s.with_suffix(".idx"), dtype="<i8")
            fh.write(((base + offsets[:-1]) * item).astype("<i8").tobytes())
            base += int(offsets[-1])
        step = 1 << 20
        for start in range(0, n + 1, step):  # document indices 0..n
            fh.write(np.arange(start, min(n + 1, start + step), dtype="<i8").tobytes())
    tmp_bin.replace(out_stem.with_suffix(".bin"))
    tmp_idx.replace(out_stem.with_suffix(".idx"))
    return n
