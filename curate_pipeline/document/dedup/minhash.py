"""MinHash signatures and LSH bands, vectorised with numpy over a whole document.

Shingles are word k-grams of `simplify(text)`. Word ids are polynomial hashes of their bytes,
computed for all words of a document at once; a shingle's 32-bit hash folds a rolling
polynomial of its word ids. No Python call per word or per shingle. Signatures
use datasketch's "legacy" scheme, the textbook (a*x + b) mod p with p = 2**61 - 1 (not
`1 << 61 - 1`, which Python parses as 2**60), with datasketch's own permutation parameters for
the seed, so a signature here equals `datasketch.MinHash(num_perm, seed, scheme="legacy",
hashfunc=shingle_hash)` updated with the same shingles (a test proves it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cached_property

import numpy as np

from curate_pipeline.document.dedup.normalize import simplify

MERSENNE_PRIME = (1 << 61) - 1
_P = np.uint64(MERSENNE_PRIME)
_MAX32 = np.uint64((1 << 32) - 1)
_SHIFT = np.uint64(61)
_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the rolling shingle hash
_BAND_MUL = np.uint64(0xC2B2AE3D27D4EB4F)
_CHUNK = 4096  # shingles per block of the (shingles x permutations) product: bounds memory


_POWERS: dict[int, np.ndarray] = {}


def _powers(base: np.uint64, n: int) -> np.ndarray:
    """base**0 .. base**(n-1) modulo 2**64 (cached, grown by doubling)."""
    have = _POWERS.get(int(base))
    if have is None or len(have) < n:
        size = max(n, 2 * len(have) if have is not None else 1 << 16)
        out = np.full(size, base, dtype=np.uint64)
        out[0] = 1
        have = _POWERS[int(base)] = np.cumprod(out, dtype=np.uint64)
    return have[:n]


_WORD_MUL = np.uint64(0x100000001B3)  # odd: invertible modulo 2**64
_WORD_INV = np.uint64(pow(int(_WORD_MUL), -1, 1 << 64))


def word_hash(word: str) -> int:
    """sum(byte_j + 1) * M**(len-1-j) mod 2**64 over the UTF-8 bytes: what `_word_ids`
    computes for every word of a text at once."""
    h = 0
    for byte in word.encode("utf-8"):
        h = (h * int(_WORD_MUL) + byte + 1) & ((1 << 64) - 1)
    return h


def _word_ids(text: str) -> np.ndarray:
    """`word_hash` of every space-separated word of `text`, vectorised over its bytes: with
    C[k] = sum_{j<k} (b_j + 1) * M**-j, a word [s, e) hashes to M**(e-1) * (C[e] - C[s])."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if not len(data):
        return np.zeros(0, dtype=np.uint64)
    spaces = np.flatnonzero(data == 32)
    starts = np.concatenate(([0], spaces + 1))
    ends = np.concatenate((spaces, [len(data)]))
    vals = data.astype(np.uint64) + np.uint64(1)
    c = np.concatenate(
        (np.zeros(1, np.uint64), np.cumsum(vals * _powers(_WORD_INV, len(data)), dtype=np.uint64))
    )
    return _powers(_WORD_MUL, len(data))[ends - 1] * (c[ends] - c[starts])


def _fold(h: np.ndarray) -> np.ndarray:
    return (h >> np.uint64(32)) ^ (h & _MAX32)


def shingle_hashes(text: str, k: int) -> np.ndarray:
    """32-bit hashes (as uint64) of the word k-shingles of `text` (words separated by single
    spaces, as `simplify` leaves them), repeats included (they cannot change a minimum);
    fewer than k words make one shingle; an empty text has none."""
    ids = _word_ids(text)
    if not len(ids):
        return np.zeros(0, dtype=np.uint64)
    n = max(1, len(ids) - k + 1)
    width = min(k, len(ids))
    h = ids[:n].copy()
    for j in range(1, width):
        h = h * _MUL + ids[j : j + n]
    return _fold(h)


def shingle_hash(shingle: bytes | str) -> int:
    """The hash of one shingle given as its space-joined words (for datasketch's hashfunc)."""
    if isinstance(shingle, bytes):
        shingle = shingle.decode("utf-8")
    ids = [word_hash(w) for w in shingle.split(" ")]
    h = 0
    for i in ids:  # the rolling polynomial of shingle_hashes, in Python integers
        h = (h * int(_MUL) + i) & ((1 << 64) - 1)
    return (h >> 32) ^ (h & 0xFFFFFFFF)


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
            y = np.multiply.outer(hv[i : i + _CHUNK], a)  # wraps mod 2**64, as datasketch's
            y += b
            # y mod (2**61 - 1) without division: fold the top 3 bits down, subtract p once
            top = y >> _SHIFT
            y &= _P
            y += top
            np.subtract(y, _P, out=y, where=y >= _P)
            y &= _MAX32
            np.minimum(sig, y.min(axis=0), out=sig)
        return sig.astype(np.uint32)

    def signature(self, text: str, split: Callable[[str], list[str]] | None = None) -> np.ndarray:
        """`split`: the words of the simplified text (a language's splitter, as datatrove's
        MinhashDedupSignature(language=...) for FineWeb-2), else its space-separated words.
        A word with spaces inside (pyvi's "sinh viên") stays one word."""
        simple = simplify(text)
        if split is not None:
            simple = " ".join(w.replace(" ", "\xa0") for w in split(simple))
        return self.signature_of_hashes(shingle_hashes(simple, self.k))

    def band_keys(self, sig: np.ndarray) -> np.ndarray:
        """One signed 64-bit key per band: a rolling hash of the band's rows."""
        m = sig.astype(np.uint64).reshape(self.bands, self.rows)
        h = np.zeros(self.bands, dtype=np.uint64)
        for j in range(self.rows):
            h = h * _BAND_MUL + m[:, j] + np.uint64(1)
        return h.view(np.int64)


def language_band_keys(keys: np.ndarray, language: str | None) -> np.ndarray:
    """Band keys of one language's own buckets: each key mixed with a stable 64-bit hash of
    the language (not Python's hash(), which differs between processes)."""
    salt = int.from_bytes(hashlib.blake2b((language or "").encode(), digest_size=8).digest(),
                          "little")  # fmt: skip
    return (keys.view(np.uint64) * _BAND_MUL + np.uint64(salt)).view(np.int64)


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    return float(np.mean(sig_a == sig_b))
