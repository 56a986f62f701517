"""Every record in a file gets a row, checked against an independent count (tests/record_counter
.py shares no code with the reader), and a seeded fuzz of real files: damage never changes the
rows with the split count, and no intact record is lost."""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

import pytest
from record_counter import count_records, gzip_members, record_ids

from curate_pipeline.config import Config
from curate_pipeline.examples.broken_archives import write_broken_inputs
from curate_pipeline.stages.read import read_file_rows

DAMAGE = {"corrupt_file", "corrupt_record", "unreadable_file"}


def _rows(path: Path, nsplits: int = 1) -> list[dict]:
    cfg = Config()
    return [r for k in range(nsplits) for r in read_file_rows(0, str(path), cfg, k, nsplits)]


def _key(r: dict) -> tuple:
    return (r["crawl_pos"], r["doc_id"], r["warc_offset"], r["reject_reason"],
            r["reject_detail"], r["skipped_bytes"])  # fmt: skip


def test_rows_equal_an_independent_count_on_every_real_file(shared_data):
    files = sorted((shared_data / "warc").iterdir())
    assert len(files) >= 15
    for path in files:
        rows = _rows(path)
        assert len(rows) == count_records(path.read_bytes()), path.name
        assert not [r for r in rows if r["reject_reason"] in DAMAGE], path.name
        assert len({r["crawl_pos"] for r in rows}) == len(rows), path.name


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return {c.name: c for c in write_broken_inputs(tmp_path_factory.mktemp("b"))}


@pytest.mark.parametrize("name", ["one_stream_gzip", "cc_arc", "concatenated"])
def test_intact_generated_files_equal_the_independent_count(cases, name):
    path = Path(cases[name].path)
    rows = _rows(path)
    assert len(rows) == count_records(path.read_bytes())
    assert not [r for r in rows if r["reject_reason"] in DAMAGE]


def test_arc_records_read_as_responses(cases):
    rows = _rows(Path(cases["cc_arc"].path))
    desc, *pages = rows
    assert desc["reject_reason"] == "not_response" and desc["url"].startswith("filedesc://")
    assert len(pages) == 8 and all(r["reject_reason"] is None for r in pages)
    assert pages[0]["warc_date"] == "2008-09-05T12:00:00Z" and pages[0]["http_status"] == 200
    assert pages[2]["content_encoding"] == "gzip"  # over a body stored decoded


def test_one_stream_gzip_reads_as_the_per_record_file(cases, tmp_path):
    one = Path(cases["one_stream_gzip"].path)
    per_record = tmp_path / "per-record.warc.gz"
    members = gzip.decompress(one.read_bytes())
    parts = members.split(b"WARC/1.0\r\n")[1:]
    per_record.write_bytes(b"".join(gzip.compress(b"WARC/1.0\r\n" + p) for p in parts))
    a, b = _rows(one, 3), _rows(per_record, 3)
    assert [r["doc_id"] for r in a] == [r["doc_id"] for r in b]
    assert [r["payload"] for r in a] == [r["payload"] for r in b]


# ------------------------------------------------------------------ seeded fuzz of real files

FUZZ_FILES = (
    "dolma_wget_sample-0000.warc.gz",
    "CC-MAIN-2020-34_resiliparse-warcfile.warc.gz",
    "ukwa_BL-20140325121225068-00000-32090_opera_8443.warc.gz",
)


def _mutate(data: bytes, members, other: bytes, rng: random.Random):
    """(name, mutated bytes, ids of records that must survive, damage expected?)"""
    kind = rng.choice(["flip", "truncate", "dup_chunk", "garbage", "concat", "mixed", "head"])
    n = len(members)
    all_ids = [i for _, _, inf in members for i in record_ids(inf)]

    def ids_outside(a: int, b: int) -> list[str]:
        return [i for s, e, inf in members if e <= a or s >= b for i in record_ids(inf)]

    if kind == "flip":
        s, e, _ = members[rng.randrange(1, n)]
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(s + 10, e - 8)] ^= 1 << rng.randrange(8)
        return kind, bytes(b), ids_outside(s, e), True
    if kind == "truncate":
        p = rng.randrange(len(data) // 4, len(data) - 1)
        return kind, data[:p], ids_outside(p, len(data)), any(s < p < e for s, e, _ in members)
    if kind == "dup_chunk":
        a = rng.randrange(0, len(data) - 2000)
        chunk = data[a : a + rng.randint(500, 20000)]
        c = rng.randrange(1, len(data))
        return kind, data[:c] + chunk + data[c:], ids_outside(c, c + 1), False
    if kind == "garbage":
        s, e, _ = members[rng.randrange(1, n)]
        return kind, data[:s] + rng.randbytes(e - s) + data[e:], ids_outside(s, e), True
    if kind == "concat":
        return kind, data + other, all_ids, False
    if kind == "mixed":  # every third member stored plain
        parts = [inf if k % 3 == 1 else data[s:e] for k, (s, e, inf) in enumerate(members)]
        return kind, b"".join(parts), all_ids, False
    s, e, _ = members[rng.randrange(1, n)]  # a flipped bit in a gzip header
    b = bytearray(data)
    b[s + rng.randrange(0, 10)] ^= 1 << rng.randrange(8)
    return kind, bytes(b), ids_outside(s, e), False


def test_fuzz_same_rows_for_every_split_count_and_no_intact_record_lost(shared_data, tmp_path):
    rng = random.Random(int(os.environ.get("CURATE_FUZZ_SEED", "20261203")))
    originals = [(shared_data / "warc" / f).read_bytes() for f in FUZZ_FILES]
    kinds: dict[str, int] = {}
    for trial in range(int(os.environ.get("CURATE_FUZZ_TRIALS", "36"))):
        k = trial % len(originals)
        data = originals[k]
        name, mutated, survivors, damaged = _mutate(
            data, gzip_members(data), originals[(k + 1) % len(originals)], rng
        )
        kinds[name] = kinds.get(name, 0) + 1
        path = tmp_path / f"fuzz-{trial}-{name}.warc.gz"
        path.write_bytes(mutated)
        whole = _rows(path, 1)
        for nsplits in (2, 4):
            assert sorted(map(_key, _rows(path, nsplits)), key=str) == sorted(
                map(_key, whole), key=str
            ), (trial, name, nsplits)
        ids = {r["doc_id"] for r in whole}
        assert set(survivors) <= ids, (trial, name, set(survivors) - ids)
        if damaged and not any(r["reject_reason"] in DAMAGE for r in whole):
            # a flipped bit zlib never reads (padding after the last block) changes nothing
            assert name == "flip" and gzip.decompress(mutated) == gzip.decompress(data), trial
        assert len({r["crawl_pos"] for r in whole}) == len(whole), (trial, name)
    assert len(kinds) == 7, kinds  # every kind of mutation was tried
