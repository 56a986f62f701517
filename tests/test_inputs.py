import gzip

import pytest

from curate_pipeline.run.inputs import InputError, expand_inputs


def test_files_dirs_globs(tmp_path):
    (tmp_path / "d").mkdir()
    for name in ("b.warc.gz", "a.warc", "notes.txt"):
        (tmp_path / "d" / name).write_bytes(b"x")
    got = expand_inputs([str(tmp_path / "d")], "")
    assert [p.rsplit("/", 1)[1] for p in got] == ["a.warc", "b.warc.gz"]
    got = expand_inputs([str(tmp_path / "d" / "*.gz")], "")
    assert [p.rsplit("/", 1)[1] for p in got] == ["b.warc.gz"]


def test_listing_with_prefix(tmp_path):
    listing = tmp_path / "warc.paths.gz"
    listing.write_bytes(gzip.compress(b"crawl-data/a.warc.gz\n\n# comment\n/abs/b.warc.gz\n"))
    got = expand_inputs([str(listing)], "https://data.commoncrawl.org/")
    assert got == ["https://data.commoncrawl.org/crawl-data/a.warc.gz", "/abs/b.warc.gz"]


def test_listing_without_prefix_is_relative_to_itself(tmp_path):
    (tmp_path / "warc.paths").write_text("x.warc.gz\n")
    assert expand_inputs([str(tmp_path / "warc.paths")], "") == [str(tmp_path / "x.warc.gz")]


def test_urls_pass_through():
    assert expand_inputs(["http://127.0.0.1:1/x.warc.gz"], "") == ["http://127.0.0.1:1/x.warc.gz"]


@pytest.mark.parametrize("arg", ["/no/such/file.warc.gz", "/no/such/*.warc.gz"])
def test_missing_inputs_name_the_path(arg):
    with pytest.raises(InputError, match=arg.replace("*", r"\*")):
        expand_inputs([arg], "")


def test_empty_directory(tmp_path):
    with pytest.raises(InputError, match="no .warc"):
        expand_inputs([str(tmp_path)], "")


def test_directories_hold_arc_files_and_links_are_never_skipped_silently(tmp_path, caplog):
    d = tmp_path / "crawl"
    (d / "sub").mkdir(parents=True)
    for name in ("a.arc.gz", "b.arc", "sub/c.warc.gz"):
        (d / name).write_bytes(b"x")
    (d / "dangling.warc.gz").symlink_to(tmp_path / "gone.warc.gz")  # broken link
    (d / "self.warc.gz").symlink_to(d / "self.warc.gz")  # a link loop
    (d / "sub" / "up").symlink_to(d)  # a folder loop: its files are read once
    (d / "notes-link").symlink_to(tmp_path / "gone.txt")
    with caplog.at_level("WARNING"):
        got = expand_inputs([str(d)], "")
    names = sorted(p.rsplit("/", 1)[1] for p in got)
    assert names == ["a.arc.gz", "b.arc", "c.warc.gz", "dangling.warc.gz", "self.warc.gz"]
    assert "already read" in caplog.text and "notes-link" in caplog.text


def test_broken_links_become_ledger_rows(tmp_path, cfg):
    from curate_pipeline.stages.read import read_file_rows

    d = tmp_path / "crawl"
    d.mkdir()
    (d / "dangling.warc.gz").symlink_to(tmp_path / "gone.warc.gz")
    (d / "self.warc.gz").symlink_to(d / "self.warc.gz")
    for path in expand_inputs([str(d)], ""):
        (row,) = read_file_rows(0, path, cfg)
        assert row["reject_reason"] == "unreadable_file" and path == row["warc_file"]
        assert "No such file" in row["reject_detail"] or "symbolic links" in row["reject_detail"]


def test_a_listing_in_a_bucket_joins_its_bucket_or_the_prefix_given(s3_here):
    """Issue 63 (7): `auto` joins a listing in a bucket to that bucket; a prefix given is
    honoured wherever the listing lies (a listing copied to another store names Common
    Crawl's HTTPS endpoint: no mirror needed)."""
    s3_here.put_object(Bucket="commoncrawl", Key="mirror/warc.paths.gz",
                       Body=gzip.compress(b"crawl-data/CC/a.warc.gz\n"))  # fmt: skip
    listing = "s3://commoncrawl/mirror/warc.paths.gz"
    assert expand_inputs([listing], "auto") == ["s3://commoncrawl/crawl-data/CC/a.warc.gz"]
    assert expand_inputs([listing], "https://data.commoncrawl.org/") == [
        "https://data.commoncrawl.org/crawl-data/CC/a.warc.gz"]  # fmt: skip


def test_a_local_listing_with_auto_names_common_crawls_endpoint(tmp_path):
    (tmp_path / "warc.paths").write_text("crawl-data/a.warc.gz\n")
    assert expand_inputs([str(tmp_path / "warc.paths")], "auto") == [
        "https://data.commoncrawl.org/crawl-data/a.warc.gz"]  # fmt: skip
