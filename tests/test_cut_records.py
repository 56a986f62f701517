"""A record whose gzip member is cut keeps its row (issue 35): real files cut at seeded random
offsets inside their last member and inside a middle member. The rows are counted against an
independent header count (zlib on the intact members' bounds, tests/record_counter.py), and
the cut record's row names the cut and the bytes present, which zlib alone also gives."""

from __future__ import annotations

import random
import re
import zlib

import pytest
from record_counter import count_records, gzip_members

from curate_pipeline.config import Config
from curate_pipeline.document.extract import process_record
from curate_pipeline.stages.read import read_file_rows

FILES = (
    "CC-MAIN-2024-22_whirlwind.warc.gz",
    "CC-MAIN-2020-34_resiliparse-warcfile.warc.gz",
    "dolma_wget_sample-0000.warc.gz",
    "ukwa_BL-20140325121225068-00000-32090_opera_8443.warc.gz",
)
STRETCH = {"corrupt_file", "unreadable_file"}
_LENGTH = re.compile(rb"^content-length:[ \t]*(\d+)", re.I | re.M)


def _prefix(member: bytes) -> bytes:
    """What zlib inflates from the first bytes of a gzip member."""
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(member)


def _whole_headers(inflated: bytes) -> list[tuple[int, int]]:
    """(block bytes present, Content-Length) of each record whose header block is complete."""
    out = []
    for m in re.finditer(rb"WARC/1\.\d\r\n", inflated):
        end = inflated.find(b"\r\n\r\n", m.start())
        if end < 0:
            continue
        length = int(_LENGTH.search(inflated, m.start(), end + 2).group(1))
        out.append((min(len(inflated) - end - 4, length), length))
    return out


def _cuts(data: bytes, rng: random.Random, where: str) -> list[tuple[bytes, list, int]]:
    """(cut file, intact members kept, header facts of the cut member) for a cut inside a
    member chosen `where`: the last one holding a response, or one in the middle."""
    members = gzip_members(data)
    responses = [k for k, (_, _, inf) in enumerate(members) if b"WARC-Type: response" in inf]
    k = responses[-1] if where == "last" else responses[len(responses) // 2]
    s, e, _ = members[k]
    p = rng.randrange(s + (e - s) // 3, e - 8)  # past the headers, before the end
    heads = _whole_headers(_prefix(data[s:p]))
    if where == "last":  # the file ends inside it (members after it, if any, are cut off)
        return [(data[:p], members[:k], heads)]
    return [(data[:p] + data[e:], members[:k] + members[k + 1 :], heads)]


@pytest.mark.parametrize("where", ["last", "middle"])
def test_cut_records_keep_their_rows(shared_data, tmp_path, where):
    rng = random.Random(35)
    for name in FILES:
        data = (shared_data / "warc" / name).read_bytes()
        for trial in range(3):
            for cut, intact, heads in _cuts(data, rng, where):
                path = tmp_path / f"{trial}-{name}"
                path.write_bytes(cut)
                rows = list(read_file_rows(0, str(path), Config()))
                records = [r for r in rows if r["reject_reason"] not in STRETCH]
                expected = sum(count_records(inf) for _, _, inf in intact) + len(heads)
                assert len(records) == expected, (name, trial, where)
                truncated = [r for r in records if r["reject_reason"] == "truncated"]
                assert len(truncated) == 1, (name, trial, where)
                (row,) = truncated
                present, length = heads[-1]
                assert f"{present:,} of {length:,} block bytes present" in row["reject_detail"]
                assert row["url"].startswith("http") and row["doc_id"].startswith("urn:uuid:")
                # the damaged bytes are a stretch of their own, never a whole unreadable file
                assert [r["reject_reason"] for r in rows if r["reject_reason"] in STRETCH] == [
                    "corrupt_file"
                ]
                # 1, 2 and 3 byte-range splits give the same rows
                for n in (2, 3):
                    split = [r for k in range(n) for r in read_file_rows(0, str(path), Config(),
                                                                         k, n)]  # fmt: skip
                    assert sorted(r["doc_id"] for r in split) == sorted(r["doc_id"] for r in rows)


def test_a_kept_cut_record_goes_through_extraction(shared_data, tmp_path):
    """With read.reject_truncated off (as for WARC-Truncated pages), the bytes present are
    the page: decoded and extracted."""
    data = (shared_data / "warc" / "CC-MAIN-2024-22_whirlwind.warc.gz").read_bytes()
    ((cut, _, heads),) = _cuts(data, random.Random(7), "last")
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(cut)
    cfg = Config()
    cfg.read.reject_truncated = False
    rows = list(read_file_rows(0, str(path), cfg))
    (page,) = [r for r in rows if r["payload"] is not None]
    assert len(page["payload"]) < heads[-1][1]
    doc = process_record(page, cfg.extract, cfg.read)
    assert doc["reject_reason"] is None and len(doc["text"]) > 200


def test_a_member_failing_its_check_gives_its_records_corrupt_rows(shared_data, tmp_path):
    """Bytes zlib rejects are not trusted, but the record whose header was read is a row."""
    data = (shared_data / "warc" / "dolma_wget_sample-0000.warc.gz").read_bytes()
    s, e, inf = gzip_members(data)[5]
    bad = bytearray(data)
    bad[e - 6] ^= 0xFF  # the member's CRC
    path = tmp_path / "crc.warc.gz"
    path.write_bytes(bytes(bad))
    rows = list(read_file_rows(0, str(path), Config()))
    records = [r for r in rows if r["reject_reason"] not in STRETCH]
    assert len(records) == sum(count_records(i) for _, _, i in gzip_members(data))
    (corrupt,) = [r for r in records if r["reject_reason"] == "corrupt_record"]
    assert "incorrect data check" in corrupt["reject_detail"] and corrupt["payload"] is None
    assert corrupt["warc_offset"] == s and inf.count(b"WARC/1.") == 1
