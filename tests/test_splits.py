"""Byte-range splits: k tasks sharing a file see every record exactly once, no Spark."""

import gzip
import io

import pytest

from curate_pipeline.config import Config
from curate_pipeline.document.warc.splits import find_member_start, is_record_member
from curate_pipeline.stages.read import read_file_rows


def _key(r):
    return (r["doc_id"], r["crawl_pos"], r["reject_reason"], r["payload"])


def _all_splits(path, k, cfg=None):
    cfg = cfg or Config()
    rows = []
    for split in range(k):
        rows.extend(read_file_rows(0, str(path), cfg, split, k))
    return rows


@pytest.mark.parametrize("k", [2, 3, 7, 40])
def test_splits_partition_the_sample(sample_warc, k):
    whole = list(read_file_rows(0, str(sample_warc), Config()))
    parts = _all_splits(sample_warc, k)
    assert sorted(map(_key, parts), key=str) == sorted(map(_key, whole), key=str)


@pytest.mark.parametrize(
    "name",
    [
        "CC-MAIN-2020-34_resiliparse-warcfile.warc.gz",
        "ukwa_BL-20140325122341434-00000-32090_opera_8443.warc.gz",
        "CC-MAIN-2014-35_npm-warc-fixture.warc",  # not gzip: split 0 reads it whole
    ],
)
def test_splits_partition_real_files(shared_data, name):
    path = shared_data / "warc" / name
    whole = list(read_file_rows(0, str(path), Config()))
    parts = _all_splits(path, 5)
    assert sorted(map(_key, parts), key=str) == sorted(map(_key, whole), key=str)


def test_single_member_gzip_is_read_by_split_zero(sample_warc, tmp_path):
    # A whole WARC gzipped as one member has no later member starts: splits 1.. are empty,
    # and split 0 streams every record of it (warcio stops after the first).
    one = tmp_path / "one.warc.gz"
    one.write_bytes(gzip.compress(gzip.decompress(sample_warc.read_bytes())))
    whole = list(read_file_rows(0, str(one), Config()))
    assert sorted(map(_key, _all_splits(one, 4)), key=str) == sorted(map(_key, whole), key=str)
    per_record = list(read_file_rows(0, str(sample_warc), Config()))
    assert [r["doc_id"] for r in whole] == [r["doc_id"] for r in per_record]
    assert [r["reject_reason"] for r in whole] == [r["reject_reason"] for r in per_record]
    assert [r["crawl_pos"] for r in whole] == list(range(len(whole)))  # member 0, record k


def test_damaged_split_is_ledgered_once_per_damage(sample_warc, tmp_path):
    data = sample_warc.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: int(len(data) * 0.67)])
    whole = list(read_file_rows(0, str(cut), Config()))
    parts = _all_splits(cut, 3)
    assert sum(r["reject_reason"] == "corrupt_file" for r in parts) == 1
    assert len(parts) == len(whole)


def test_member_detection():
    member = gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n")
    assert is_record_member(member)
    assert not is_record_member(gzip.compress(b"<html>not a warc</html>"))
    assert not is_record_member(b"\x1f\x8b\x08garbage")
    noise = b"\x1f\x8b\x08\x00junk" + b"x" * 100_000
    stream = io.BytesIO(noise + member)
    assert find_member_start(stream, 1000, 10**9) == len(noise) + 1000
    assert find_member_start(io.BytesIO(noise + member), 0, len(noise)) is None


def test_small_files_are_packed_into_shared_tasks_in_crawl_order():
    from curate_pipeline.stages.read import plan_tasks

    files = [f"/in/{i}.warc.gz" for i in range(6)]
    sizes = {f: 1000 for f in files} | {files[3]: 10_000}  # one large file in the middle
    tasks = plan_tasks(files, 2, 10, sizes, pack_bytes=2500)
    assert tasks == [
        [(10, files[0], 0, 1), (11, files[1], 0, 1), (12, files[2], 0, 1)],  # 3,000 >= 2,500
        [(13, files[3], 0, 2)],
        [(13, files[3], 1, 2)],  # its byte ranges, a task each
        [(14, files[4], 0, 1), (15, files[5], 0, 1)],
    ]
    unknown = plan_tasks(files, 2, 0, {}, pack_bytes=2500)  # sizes unknown (URLs): split
    assert len(unknown) == 12 and all(len(t) == 1 for t in unknown)
    assert plan_tasks(files, 1, 0, sizes) == [[(i, f, 0, 1)] for i, f in enumerate(files)]
