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
Megatron `.bin` is the same file (hard-linked on a local disk, else copied); only the `.idx`
is written. Token ids above
65,535 are stored as uint32 by us and declared int32 to Megatron (no uint32 code there): the
bytes are the same for every id below 2^31.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence

import numpy as np

from curate_pipeline.location import Location

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
CODES = {np.dtype("uint8"): 1, np.dtype("uint16"): 8, np.dtype("uint32"): 4,
         np.dtype("int32"): 4, np.dtype("int64"): 5}  # fmt: skip


def dtype_code(dtype: np.dtype) -> int:
    try:
        return CODES[np.dtype(dtype).newbyteorder("=")]
    except KeyError:
        raise ValueError(f"no Megatron dtype code for {dtype}") from None


def _same_bin(src: Location, dst: Location) -> None:
    """The Megatron `.bin` is ours: a hard link on a local disk where it can be, else a copy
    (server-side on an object store)."""
    dst.delete()
    if src.is_local and dst.is_local:
        dst.parent.mkdir()
        try:
            os.link(src.uri, dst.uri)
            return
        except OSError:  # another file system, or none with links
            pass
    src.copy(dst)


def _offsets(stem: Location) -> np.ndarray:
    return np.frombuffer(_with(stem, ".idx").read_bytes(), dtype="<i8")


def _with(stem: Location, ext: str) -> Location:
    return Location(stem.uri + ext)


def _header(dtype: np.dtype, n: int) -> bytes:
    return (MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", dtype_code(dtype))
            + struct.pack("<Q", n) + struct.pack("<Q", n + 1))  # fmt: skip


def write_shard(native_stem: Location, out_stem: Location, dtype: np.dtype) -> int:
    """`out_stem`.bin/.idx for the native shard `native_stem`; returns its documents."""
    offsets = _offsets(native_stem)
    n = len(offsets) - 1
    _same_bin(_with(native_stem, ".bin"), _with(out_stem, ".bin"))
    _with(out_stem, ".idx").write_bytes(  # one write: readers see all of it or nothing
        _header(dtype, n)
        + np.diff(offsets).astype("<i4").tobytes()
        + (offsets[:-1] * np.dtype(dtype).itemsize).astype("<i8").tobytes()
        + np.arange(n + 1, dtype="<i8").tobytes()
    )
    return n


def write_merged(native_stems: Sequence[Location], out_stem: Location, dtype: np.dtype) -> int:
    """One dataset of all shards in order, streamed shard by shard (memory: one shard's
    index at a time); returns its documents. The `.idx` is written last, so a reader that
    finds it finds the whole `.bin` (on a store, each file appears only once closed)."""
    counts = [len(_offsets(s)) - 1 for s in native_stems]
    n = sum(counts)
    item = np.dtype(dtype).itemsize
    with _with(out_stem, ".bin").open_output() as out:
        for s in native_stems:
            with _with(s, ".bin").open_input() as src:
                while chunk := src.read(8 << 20):
                    out.write(chunk)
    with _with(out_stem, ".idx").open_output() as fh:
        fh.write(_header(dtype, n))
        for s in native_stems:  # lengths
            fh.write(np.diff(_offsets(s)).astype("<i4").tobytes())
        base = 0
        for s in native_stems:  # pointers, shard by shard after the ones before
            offsets = _offsets(s)
            fh.write(((base + offsets[:-1]) * item).astype("<i8").tobytes())
            base += int(offsets[-1])
        step = 1 << 20
        for start in range(0, n + 1, step):  # document indices 0..n
            fh.write(np.arange(start, min(n + 1, start + step), dtype="<i8").tobytes())
    return n
