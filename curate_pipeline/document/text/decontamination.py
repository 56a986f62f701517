"""Benchmark decontamination: n-grams of evaluation items looked up in documents.

Evaluation sets are files the user names in `decontamination.sets` (JSONL with the fields
that make an item, a Parquet file with columns, or plain lines; `.gz` allowed). Each item's
text is cut into normalised words (NFKC, case-folded runs of letters, digits and combining
marks: punctuation and spacing never matter, as in datatrove's and NeMo's normalisation) and
every n consecutive words (13: GPT-3's and NeMo Curator's choice) is hashed into the index;
an item with fewer than n words has no n-gram and is counted as too short, not indexed.

A document matches where one of its word n-grams is in the index. Policy `drop` rejects it
(`decont:<set>`, the detail naming the item and the n-gram); policy `remove` cuts each
matching span plus `margin_chars` each side (NeMo's 200), keeps the pieces of at least
`min_piece_chars`, and rejects the document if it fell into more than `max_pieces` pieces or
nothing is left (NeMo Curator's TaskDecontamination semantics, pieces kept in one document).

N-gram hashes are 64-bit: a blake2b hash per word combined polynomially over the n words
(numpy, one pass per document), looked up in one sorted array; an n-gram shared by several
items belongs to the first (sets in config order, items in file order). Same input, same
index, same verdicts on every machine.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import regex

_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd: the polynomial's base, mod 2**64
_CACHE_MAX = 500_000  # words whose hashes a worker keeps (words repeat: Zipf)
_word_hashes: dict[str, int] = {}


class EvalSetError(ValueError):
    """An evaluation set file that cannot be read as configured."""


def _word_hash(word: str) -> int:
    h = _word_hashes.get(word)
    if h is None:
        norm = unicodedata.normalize("NFKC", word).casefold()
        h = int.from_bytes(hashlib.blake2b(norm.encode(), digest_size=8).digest(), "little")
        if len(_word_hashes) >= _CACHE_MAX:
            _word_hashes.clear()
        _word_hashes[word] = h
    return h


def words(text: str) -> list[regex.Match]:
    """The word matches of `text` (their spans locate removals)."""
    return list(_WORD.finditer(text))


def ngram_hashes(word_list: list[str], n: int) -> np.ndarray:
    """The hash of every n consecutive words (len(words) - n + 1 of them, or none)."""
    m = len(word_list) - n + 1
    if m <= 0:
        return np.zeros(0, dtype=np.uint64)
    wh = np.fromiter((_word_hash(w) for w in word_list), dtype=np.uint64, count=len(word_list))
    h = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            h = h * _MULT + wh[k : k + m]
    return h


# ---------------------------------------------------------------------------------- items


def _open_text(path: Path) -> io.TextIOBase:
    raw = path.open("rb")
    if path.suffix == ".gz" or raw.peek(2)[:2] == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", errors="replace")
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(_as_text(v) for v in value)
    if isinstance(value, dict):
        return " ".join(_as_text(v) for v in value.values())
    return str(value)


def eval_format(path: str | Path, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    name = str(path).lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    return "lines"


def read_items(
    path: str | Path, fmt: str, fields: list[str], id_field: str | None = None
) -> Iterator[tuple[str, str]]:
    """(item id, item text) of an evaluation set file. JSONL and Parquet: the `fields` of a
    record joined by spaces (a list value: its elements; e.g. a question and its choices);
    the id is `id_field`'s value, else `line N` / `row N` (1-based). Lines: one item a line."""
    p = Path(path)
    fmt = eval_format(p, fmt)
    if fmt == "lines":
        with _open_text(p) as fh:
            for i, line in enumerate(fh, 1):
                if line.strip():
                    yield f"line {i}", line
        return
    if not fields:
        raise EvalSetError(f"{p}: a {fmt} evaluation set needs `fields` (the item's text)")
    if fmt == "jsonl":
        with _open_text(p) as fh:
            for i, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise EvalSetError(f"{p}, line {i}: not JSON ({e}); one object a line") from e
                if not isinstance(rec, dict):
                    raise EvalSetError(f"{p}, line {i}: not a JSON object")
                missing = [f for f in fields if f not in rec]
                if len(missing) == len(fields):
                    raise EvalSetError(
                        f"{p}, line {i}: none of the fields {fields} (it has {sorted(rec)[:10]});"
                        " set `fields` of this evaluation set"
                    )
                ident = str(rec.get(id_field)) if id_field and id_field in rec else f"line {i}"
                yield ident, " ".join(_as_text(rec.get(f)) for f in fields)
        return
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(p)
        names = set(pf.schema_arrow.names)
        wanted = [f for f in fields if f in names]
        if not wanted:
            raise EvalSetError(
                f"{p}: none of the columns {fields} (it has {sorted(names)[:10]}); set `fields`"
            )
        cols = wanted + ([id_field] if id_field and id_field in names else [])
        row = 0
        for batch in pf.iter_batches(columns=cols, batch_size=4096):
            for rec in batch.to_pylist():
                row += 1
                ident = str(rec[id_field]) if id_field and id_field in rec else f"row {row}"
                yield ident, " ".join(_as_text(rec.get(f)) for f in wanted)
        return
    raise EvalSetError(f"{p}: unknown format {fmt!r} (jsonl, parquet, lines or auto)")


# ---------------------------------------------------------------------------------- index


@dataclass
class SetSummary:
    name: str
    items: int = 0  # items read
    too_short: int = 0  # items with fewer than n words: no n-gram, not indexed
    ngrams: int = 0  # distinct n-grams indexed for this set (shared ones: the first set's)


@dataclass
class Index:
    n: int
    hashes: np.ndarray  # sorted, unique uint64
    owner: np.ndarray  # int32: the item (row of `items`) an n-gram belongs to
    item_set: np.ndarray  # int16: the set of each item
    item_ids: list[str]  # each item's id
    set_names: list[str]
    summaries: list[SetSummary] = field(default_factory=list)

    def nbytes(self) -> int:
        return self.hashes.nbytes + self.owner.nbytes + self.item_set.nbytes

    def lookup(self, h: np.ndarray) -> np.ndarray:
        """For each hash in `h`, the owning item's row, or -1."""
        if not len(h) or not len(self.hashes):
            return np.full(len(h), -1, dtype=np.int64)
        pos = np.searchsorted(self.hashes, h)
        pos[pos == len(self.hashes)] = 0
        hit = self.hashes[pos] == h
        return np.where(hit, self.owner[pos], -1)


def build_index(sets: list[tuple[str, list[tuple[str, str]]]], n: int) -> Index:
    """`sets`: (name, iterable of (item id, text)) in config order."""
    parts_h: list[np.ndarray] = []
    parts_o: list[np.ndarray] = []
    item_set: list[int] = []
    item_ids: list[str] = []
    summaries = []
    for s, (name, items) in enumerate(sets):
        summary = SetSummary(name)
        for ident, text in items:
            summary.items += 1
            h = ngram_hashes([m.group() for m in _WORD.finditer(text)], n)
            if not len(h):
                summary.too_short += 1
                continue
            parts_h.append(h)
            parts_o.append(np.full(len(h), len(item_ids), dtype=np.int32))
            item_ids.append(ident)
            item_set.append(s)
        summaries.append(summary)
    if parts_h:
        all_h = np.concatenate(parts_h)
        all_o = np.concatenate(parts_o)
        # first occurrence wins: a stable sort keeps items in config and file order
        order = np.argsort(all_h, kind="stable")
        all_h, all_o = all_h[order], all_o[order]
        first = np.ones(len(all_h), dtype=bool)
        first[1:] = all_h[1:] != all_h[:-1]
        hashes, owner = all_h[first], all_o[first]
    else:
        hashes, owner = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int32)
    sets_arr = np.asarray(item_set, dtype=np.int16)
    if len(owner):
        counts = np.bincount(sets_arr[owner], minlength=len(summaries))
        for summary, c in zip(summaries, counts, strict=True):
            summary.ngrams = int(c)
    return Index(n, hashes, owner, sets_arr, item_ids, [s.name for s in summaries], summaries)


# -------------------------------------------------------------------------------- verdicts


@dataclass
class Verdict:
    text: str  # the document's text after removal (unchanged under `drop`)
    set_name: str | None = None  # the set of the first match; None: clean
    rejected: bool = False
    detail: str = ""
    removed_chars: int = 0
    matches: int = 0  # n-grams of the document found in the index


def check(
    text: str,
    index: Index,
    policy: str = "drop",
    margin: int = 200,
    max_pieces: int = 10,
    min_piece_chars: int = 200,
) -> Verdict:
    ms = words(text)
    h = ngram_hashes([m.group() for m in ms], index.n)
    owners = index.lookup(h)
    at = np.flatnonzero(owners >= 0)
    if not len(at):
        return Verdict(text)
    first = int(at[0])
    item = int(owners[first])
    set_name = index.set_names[int(index.item_set[item])]
    gram = text[ms[first].start() : ms[first + index.n - 1].end()]
    what = f"item {index.item_ids[item]}: {' '.join(gram.split())[:300]!r}"
    more = f" (+{len(at) - 1} more matching n-grams)" if len(at) > 1 else ""
    if policy == "drop":
        return Verdict(text, set_name, True, what + more, 0, len(at))
    # remove: the matched spans widened by the margin, merged, cut out
    spans: list[list[int]] = []
    for i in at:
        a = max(0, ms[i].start() - margin)
        b = min(len(text), ms[i + index.n - 1].end() + margin)
        if spans and a <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], b)
        else:
            spans.append([a, b])
    pieces, pos = [], 0
    for a, b in spans:
        pieces.append(text[pos:a])
        pos = b
    pieces.append(text[pos:])
    pieces = [p.strip() for p in pieces if p.strip()]
    kept = [p for p in pieces if len(p) >= min_piece_chars]
    new_text = "\n\n".join(kept)
    removed = len(text) - sum(len(p) for p in kept)
    if len(pieces) > max_pieces:
        why = f"split into {len(pieces)} pieces > max_pieces {max_pieces}; "
        return Verdict(text, set_name, True, why + what + more, removed, len(at))
    if not kept:
        why = f"nothing of >= {min_piece_chars} chars left after removal; "
        return Verdict(text, set_name, True, why + what + more, removed, len(at))
    return Verdict(new_text, set_name, False, what + more, removed, len(at))
