"""MinHash signatures and LSH bands, vectorised with numpy over a whole document.

Shingles are word k-grams of `simplify(text)`. A shingle's 32-bit hash combines CRC-32 word
ids with a rolling polynomial (so only words, not shingles, cost a Python call). Signatures
use datasketch's "legacy" scheme, the textbook (a*x + b) mod p with p = 2**61 - 1 (not
`1 << 61 - 1`, which Python parses as 2**60), with datasketch's own permutation parameters for
the seed, so a signature here equals `datasketch.MinHash(num_perm, seed, scheme="legacy",
hashfunc=shingle_hash)` updated with the same shingles (a test proves it).
"""

from __future__ import annotations

import zlib
from functools import cached_property

import numpy as np

from pipeline.dedup.normalize import simplify

MERSENNE_PRIME = (1 << 61) - 1
_P = np.uint64(MERSENNE_PRIME)
_MAX32 = np.uint64((1 << 32) - 1)
_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the rolling shingle hash
_BAND_MUL = np.uint64(0xC2B2AE3D27D4EB4F)
_CHUNK = 4096  # shingles per block of the (shingles x permutations) product: bounds memory


def _word_ids(words: list[str]) -> np.ndarray:
    return np.fromiter(
        (zlib.crc32(w.encode("utf-8")) for w in words), dtype=np.uint64, count=len(words)
    )


def _fold(h: np.ndarray) -> np.ndarray:
    return (h >> np.uint64(32)) ^ (h & _MAX32)


def shingle_hashes(words: list[str], k: int) -> np.ndarray:
    """Distinct 32-bit hashes (as uint64) of the word k-shingles; a text shorter than k words
    is one shingle; an empty text has none."""
    if not words:
        return np.zeros(0, dtype=np.uint64)
    ids = _word_ids(words)
    n = max(1, len(ids) - k + 1)
    width = min(k, len(ids))
    h = ids[:n].copy()
    for j in range(1, width):
        h = h * _MUL + ids[j : j + n]
    return np.unique(_fold(h))


def shingle_hash(shingle: bytes | str) -> int:
    """The hash of one shingle given as its space-joined words (for datasketch's hashfunc)."""
    if isinstance(shingle, bytes):
        shingle = shingle.decode("utf-8")
    words = shingle.split(" ")
    return int(shingle_hashes(words, len(words))[0])


def shingles(text: str, k: int) -> list[str]:
    """The distinct k-shingles of a text as strings (for tests and exact Jaccard)."""
    words = simplify(text).split()
    if len(words) <= k:
        return [" ".join(words)] if words else []
    return sorted({" ".join(words[i : i + k]) for i in range(len(words) - k + 1)})


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def candidate_probability(s: float, bands: int, rows: int) -> float:
    """P(two documents with Jaccard s share at least one band) = 1 - (1 - s^r)^b."""
    return 1.0 - (1.0 - s**rows) ** bands


class MinHasher:
    def __init__(self, k: int, bands: int, rows: int, seed: int = 1):
        self.k, self.bands, self.rows, self.seed = k, bands, rows, seed
        self.num_perm = bands * rows

    @cached_property
    def permutations(self) -> tuple[np.ndarray, np.ndarray]:
        """datasketch's (a, b) for this seed and size, legacy scheme."""
        from datasketch import MinHash

        a, b = MinHash(num_perm=self.num_perm, seed=self.seed, scheme="legacy").permutations
        return np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)

    def signature_of_hashes(self, hv: np.ndarray) -> np.ndarray:
        """min over shingles of ((a*x + b) mod p) & 0xFFFFFFFF, as datasketch computes it
        (uint64 products wrap, as in datasketch)."""
        a, b = self.permutations
        sig = np.full(self.num_perm, (1 << 32) - 1, dtype=np.uint64)
        for i in range(0, len(hv), _CHUNK):
            block = hv[i : i + _CHUNK, None]
            phv = ((block * a + b) % _P) & _MAX32
            np.minimum(sig, phv.min(axis=0), out=sig)
        return sig.astype(np.uint32)

    def signature(self, text: str) -> np.ndarray:
        return self.signature_of_hashes(shingle_hashes(simplify(text).split(), self.k))

    def band_keys(self, sig: np.ndarray) -> np.ndarray:
        """One signed 64-bit key per band: a rolling hash of the band's rows."""
        m = sig.astype(np.uint64).reshape(self.bands, self.rows)
        h = np.zeros(self.bands, dtype=np.uint64)
        for j in range(self.rows):
            h = h * _BAND_MUL + m[:, j] + np.uint64(1)
        return h.view(np.int64)


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    return float(np.mean(sig_a == sig_b))
