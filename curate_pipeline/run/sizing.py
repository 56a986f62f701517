"""How many output files, chunks and tasks a run makes, sized by bytes and cores and never by
how the work happened to be split; and the rates `curate plan` estimates a snapshot with.

The run uses `data_files` and `ledger_files`; `curate plan` (run/plan.py) uses the rest. The
per-byte figures of our own outputs are measured by bench/sizing_bench.py on the real
archives in ../shared/data (its results: bench/results/sizing.json); the shares of a Common
Crawl snapshot kept are FineWeb's published figures, since no sample here is a snapshot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# -- our outputs, measured (bench/sizing_bench.py: 2,261 records, 1,257 kept) ---------------
DATA_BYTES_PER_TEXT_BYTE = 0.37  # a data/ row (zstd Parquet with metadata) per byte of text
LEDGER_ROW_BYTES = 44  # a ledger row in rejected/ (zstd Parquet)
STORE_BYTES_PER_RECORD = 2900  # the documents store (zstd Parquet) per record read
# -- rows moved through shuffles, uncompressed (Spark's UnsafeRow sizes of the columns) ------
ID_ROW_BYTES = 70  # doc_id (a WARC-Record-ID: 47 characters) and crawl_pos
NARROW_ROW_BYTES = 320  # id, crawl_pos, URL, input file, 40-hex key
# crawl_pos, copies, cluster id and size: 10.9 bytes a kept document as Spark's shuffle metrics
# count it (lz4), bench/append_bench.py at 1M documents; 16 to stay above it
LOOKUP_ROW_BYTES = 16
LEDGER_ROW_RAW_BYTES = 300  # id, URL, stage, reason, detail, crawl_pos, file
# an appending run's scan of the output's dedup index per earlier kept document: exact key
# (40 hex), crawl_pos, doc_id and 14 band keys, read where they lie (never shuffled)
INDEX_SCAN_ROW_BYTES = 210
SHARD_BYTES_PER_TEXT_BYTE = 2.2  # text, ids and its tokens (4 bytes a token, ~4 bytes a token)
# -- time, measured on this machine: bench/per_record_bench.py, `curate run` (default.yaml,
# local[2]) over a Common-Crawl-like crawl (bench/cc_like.py: RATES_MEASURED_ON), CPU of
# the whole process tree (driver, JVM, Python workers), split where the documents pass ended;
# the median and the range of the rounds (bench/results/per_record.json) -----------------
CORE_SECONDS_PER_RECORD = 0.0422  # documents pass, per record read
CORE_SECONDS_PER_RECORD_RANGE = (0.0417, 0.0428)
CORPUS_CORE_SECONDS = 0.0029  # corpus half, per document reaching it
CORPUS_CORE_SECONDS_RANGE = (0.0027, 0.0031)
RATES_MEASURED_ON = (
    "24,058 records of a Common-Crawl-like crawl (real pages, a real crawl's 53 languages, "
    "3.1% non-HTML, median page 118 KB; 7,691 reached dedup), default.yaml, 2 cores, "
    "2 rounds, 2026-12-07"
)
# -- a Common Crawl snapshot -----------------------------------------------------------------
RECORDS_PER_BYTE = 3e9 / 100e12  # ~3 billion pages in ~100 TB of WARC files
REACH_SHARE = 0.20  # pages past extraction, language and quality filters (FineWeb: ~3x kept)
KEPT_SHARE = 0.08  # kept after dedup (FineWeb: 22.7B documents from 96 snapshots of ~3B)
TEXT_BYTES_PER_KEPT = 3000  # FineWeb: 15T tokens / 22.7B documents, ~4.4 bytes a token
# -- the driver ------------------------------------------------------------------------------
DRIVER_BASE_BYTES = 1_500_000_000  # JVM heap in use and the Python process, measured idle
BYTES_PER_LISTED_FILE = 1200  # a path in Python, and Spark's file index entry for it


@dataclass(frozen=True)
class Estimate:
    records: int
    reach: int
    kept: int
    kept_text_bytes: int
    rejected: int


def estimate(input_bytes: int) -> Estimate:
    records = int(input_bytes * RECORDS_PER_BYTE)
    kept = int(records * KEPT_SHARE)
    return Estimate(records, int(records * REACH_SHARE), kept, kept * TEXT_BYTES_PER_KEPT,
                    records - kept)  # fmt: skip


def signature_bytes(bands: int, perm: int) -> int:
    """A document's MinHash signature and band keys, which its narrow row carries from the
    documents pass to near dedup (so exact dedup's join moves them too)."""
    return perm * 4 + bands * 8


def near_bytes(bands: int, perm: int) -> int:
    """Per document reaching near dedup: a bucket row per band (band, key, crawl_pos), its
    signature on each side of the verification joins, and its narrow row (signature
    included) meeting its cluster's verdict."""
    return bands * 24 + 2 * perm * 4 + 64 + NARROW_ROW_BYTES + signature_bytes(bands, perm)


def exchange_bytes(bands: int, perm: int, reach: int, near_reach: int, kept: int,
                   kept_text: int) -> dict[str, float]:  # fmt: skip
    """What the corpus half's exchanges move (`curate plan`; bench/append_bench.py sets them
    beside Spark's metrics): per document reaching each step."""
    return {
        "exact_dedup": reach * (NARROW_ROW_BYTES + signature_bytes(bands, perm)),
        "near_dedup": near_reach * near_bytes(bands, perm),
        "kept": kept * LOOKUP_ROW_BYTES,
        "mixture": kept_text * SHARD_BYTES_PER_TEXT_BYTE,
    }


def driver_bytes(inputs: int, store_files: int, groups: int, local_max_edges: int) -> int:
    """The driver's peak: a base, the inputs' and the documents store's file lists, the lookup
    folders, and the near-dedup edges it may solve itself (at most local_max_edges, 16 bytes
    each, a few copies)."""
    return int(DRIVER_BASE_BYTES + (inputs + store_files) * BYTES_PER_LISTED_FILE
               + groups * 200 + local_max_edges * 16 * 4)  # fmt: skip


def data_files(text_bytes: int, file_bytes: int) -> int:
    """data/ files for `text_bytes` of kept text, each about `file_bytes` of Parquet."""
    return max(1, math.ceil(text_bytes * DATA_BYTES_PER_TEXT_BYTE / file_bytes))


def ledger_files(rows: int, file_bytes: int, cores: int = 1, least: int = 32 << 20) -> int:
    """rejected/ files for `rows` ledger rows: about `file_bytes` of Parquet each, or one per
    core where that leaves files of `least` (output.ledger_min_file_bytes) or more (so the
    write, which reads the whole documents store's reject columns, uses every core: a
    snapshot's ~120 GB ledger was ~230 tasks on 1,600 cores)."""
    size = rows * LEDGER_ROW_BYTES
    by_size = max(1, math.ceil(size / file_bytes))
    return max(by_size, min(cores, math.ceil(size / least)))
