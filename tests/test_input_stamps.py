"""An input's stamp (size, mtime) on a disk and in a store (curate_pipeline/run/inputs.py): a
replaced object changes its chunk's fingerprint, and `curate serve` takes an object only once
its stamp held for a cycle."""

from __future__ import annotations

import os
import time

from curate_pipeline.config import Config
from curate_pipeline.run.chunks import Chunk, extraction_fingerprint
from curate_pipeline.run.inputs import input_stamps
from curate_pipeline.run.serve import Server

BUCKET = "stamps-test"


def test_stamps_of_local_files_and_objects_and_urls(s3_here, tmp_path):
    s3_here.create_bucket(Bucket=BUCKET)
    s3_here.put_object(Bucket=BUCKET, Key="in/a.warc.gz", Body=b"a" * 10)
    s3_here.put_object(Bucket=BUCKET, Key="in/b.warc.gz", Body=b"b" * 20)
    local = tmp_path / "c.warc.gz"
    local.write_bytes(b"c" * 30)
    files = [
        f"s3://{BUCKET}/in/a.warc.gz",
        f"s3://{BUCKET}/in/b.warc.gz",
        str(local),
        f"s3://{BUCKET}/in/missing.warc.gz",
        "https://data.commoncrawl.org/x.warc.gz",
    ]
    st = input_stamps(files)
    assert [st[f][0] if st[f] else None for f in files] == [10, 20, 30, None, None]
    assert st[files[0]][1] and st[str(local)][1] == os.stat(local).st_mtime_ns
    cfg = Config()
    chunk = Chunk(0, 0, tuple(files[:2]))
    before = extraction_fingerprint(chunk, cfg, "v")
    assert extraction_fingerprint(chunk, cfg, "v") == before  # the same objects: reused
    s3_here.put_object(Bucket=BUCKET, Key="in/b.warc.gz", Body=b"B" * 21)  # replaced
    assert extraction_fingerprint(chunk, cfg, "v") != before  # the chunk runs again


def test_serve_takes_an_object_once_its_stamp_held_for_a_cycle(s3_here, tmp_path):
    s3_here.create_bucket(Bucket=BUCKET)
    prefix = f"s3://{BUCKET}/incoming/"
    s3_here.put_object(Bucket=BUCKET, Key="incoming/one.warc.gz", Body=b"x" * 100)
    server = Server(Config(), [prefix], str(tmp_path / "out"), spark=None)
    assert server.ready_files() == [] and server.status.waiting == [prefix + "one.warc.gz"]
    assert server.ready_files() == [prefix + "one.warc.gz"]  # held still for a cycle
    time.sleep(1.1)  # S3's LastModified has a resolution of a second
    s3_here.put_object(Bucket=BUCKET, Key="incoming/one.warc.gz", Body=b"x" * 150)  # rewritten
    s3_here.put_object(Bucket=BUCKET, Key="incoming/two.warc.gz", Body=b"y" * 10)
    assert server.ready_files() == []  # both changed since the last look
    assert server.ready_files() == [prefix + "one.warc.gz", prefix + "two.warc.gz"]
