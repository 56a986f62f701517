"""An output is a versioned dataset (pipeline/versions.py): each run publishes a
version in its own folder and switches readers with one atomic create of its commit record;
readers (the dataset card, the files the current version's commit lists) never see a partial
one."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from pipeline import versions
from pipeline.location import Location
from pipeline.run.output_lock import OutputBusy


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    """An output location on a local disk and on the moto S3 server."""
    if request.param == "local":
        return Location.of(tmp_path / "out")
    client = request.getfixturevalue("s3_here")
    bucket = "versions-test"
    client.create_bucket(Bucket=bucket)
    return Location.of(f"s3://{bucket}/out-{request.node.name.split('[')[0][-20:]}")


def _publish(root: Location, n: int, rows: int) -> None:
    (versions.folder(root, n) / "data" / "part-0.parquet").write_bytes(b"x" * rows)
    versions.commit(root, n, {"counts": {"kept": rows}})


def test_the_newest_commit_is_current_and_a_number_commits_once(root):
    with pytest.raises(versions.NoVersion, match="no published version"):
        versions.current(root)
    _publish(root, 3, 10)
    assert versions.current(root).number == 3
    assert versions.current_dir(root).uri == (root / "versions" / "000000000003").uri
    with pytest.raises(versions.VersionConflict, match="version 3 was committed"):
        versions.commit(root, 3, {"counts": {"kept": 99}})  # a second writer of number 3
    assert versions.current(root).record["counts"] == {"kept": 10}  # the first one's stands
    _publish(root, 5, 20)
    assert versions.current(root).number == 5
    assert versions.read(root, 3).record["counts"] == {"kept": 10}  # the old one is still there


def test_a_writer_whose_fence_fails_publishes_nothing(root):
    _publish(root, 1, 10)

    def lost() -> None:
        raise OutputBusy("this run lost its lock")

    (versions.folder(root, 2) / "data" / "part-0.parquet").write_bytes(b"partial")
    with pytest.raises(OutputBusy):
        versions.commit(root, 2, {}, guard=lost)
    assert versions.committed(root) == [1] and versions.current(root).number == 1


def test_prune_keeps_the_current_and_the_one_before_and_drops_leftovers(root):
    for n in (1, 3, 5):
        _publish(root, n, n)
    (versions.folder(root, 4) / "data" / "part-0.parquet").write_bytes(b"a crashed writer's")
    (versions.folder(root, 7) / "data" / "part-0.parquet").write_bytes(b"a newer writer's")
    _publish(root, 6, 6)
    assert versions.prune(root, 2, 6) == [1, 3, 4]
    assert versions.committed(root) == [5, 6]
    assert (root / "versions").names() == [versions.name(n) for n in (5, 6, 7)]  # 7: not ours


def test_published_dir_reads_the_current_version_or_an_old_layout(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "manifest.json").write_text("{}")
    assert versions.published_dir(old).uri == str(old)  # written before versions
    with pytest.raises(versions.NoVersion, match="not a finished run"):
        versions.published_dir(tmp_path / "empty")
    new = Location.of(tmp_path / "new")
    _publish(new, 2, 1)
    assert versions.published_dir(new) == versions.folder(new, 2)
    assert versions.next_number(new, 0) == 3 and versions.next_number(new, 9) == 9


def _card_rows(out: Path) -> tuple[int, list[str], int]:
    """What `load_dataset(DIR)` reads, as the card says: the version and its data files'
    ids; and the kept count its manifest states."""
    card = (out / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    globs = header["configs"][0]["data_files"][0]["path"]
    globs = [globs] if isinstance(globs, str) else globs  # an appended version: a folder each
    folder = out / globs[0].split("/data/")[0]
    ids = [
        i
        for glob in globs
        for f in sorted(out.glob(glob))
        for i in pq.read_table(f, columns=["id"])["id"].to_pylist()
    ]
    kept = json.loads((folder / "manifest.json").read_text())["counts"]["kept"]
    return int(folder.name), ids, kept


@pytest.mark.spark
def test_readers_see_whole_versions_while_a_rerun_adds_inputs(spark, cfg, sample_warc, tmp_path):
    """A reader polls the output through its dataset card and through the files the current
    version's commit lists while a second run adds an input (appending): every observation
    is one complete version (its rows equal its manifest's kept count, no id twice). The
    first version's files stay while a kept version lists them; then they go. The card,
    report and explorer follow the newest."""
    from pipeline.examples.corpus import synthetic_pages, write_pages_warc
    from pipeline.run.orchestrate import run

    extra = tmp_path / "extra.warc.gz"
    write_pages_warc(extra, synthetic_pages(40, seed=7))
    out = tmp_path / "out"
    first = run(cfg, [str(sample_warc)], out, spark)
    seen: dict[str, list[int]] = {}
    failures: list[BaseException] = []
    done = threading.Event()

    def second() -> None:
        try:
            run(cfg, [str(sample_warc), str(extra)], out, spark)
        except BaseException as e:  # noqa: BLE001 (reported below)
            failures.append(e)
        finally:
            done.set()

    def observe() -> None:
        number, ids, kept = _card_rows(out)  # the card reader
        assert len(ids) == len(set(ids)) == kept, (number, len(ids), kept)
        seen.setdefault("card", []).append(number)
        # the commit reader: the files the current version's commit lists (an appended
        # version's include the earlier version's, in its folder)
        now = versions.current(out)
        files = [f.uri for f in now.files("data")]
        ids = [i for f in files for i in pq.read_table(f, columns=["id"])["id"].to_pylist()]
        manifest = json.loads((now.dir / "manifest.json").read_text())
        assert len(ids) == len(set(ids)) == manifest["counts"]["kept"], now.dir
        seen.setdefault("commit", []).append(now.number)

    threading.Thread(target=second, daemon=True).start()
    while not done.is_set():
        observe()
        time.sleep(0.05)
    observe()  # after the switch
    assert not failures, failures
    second_version = versions.current(out).number
    assert second_version > first["version"]
    for reader in ("card", "commit"):  # the old version until the switch, then the new one
        got = seen[reader]
        assert got == sorted(got) and set(got) == {first["version"], second_version}, got
    assert versions.current(out).record["references"] == [first["version"]]  # it appended
    third = run(cfg, [str(sample_warc), str(extra)], out, spark)  # the same inputs: whole
    assert versions.committed(out) == [second_version, third["version"]]
    # the first version's commit is pruned (two are kept); its files stay while the second,
    # which lists them, is kept
    assert versions.folder(out, first["version"]).exists()
    fourth = run(cfg, [str(sample_warc), str(extra)], out, spark)
    assert versions.committed(out) == [third["version"], fourth["version"]]
    assert not versions.folder(out, first["version"]).exists()
    assert _card_rows(out)[0] == fourth["version"]
    assert sorted(p.name for p in out.iterdir()) == [
        ".curate.lock", "README.md", "_stages", "_versions", "versions"]  # fmt: skip
