"""An output is a versioned dataset (curate_pipeline/outputs/publish/versions.py): each run
publishes a
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

from curate_pipeline.location import Location
from curate_pipeline.outputs.publish import versions
from curate_pipeline.run.output_lock import OutputBusy


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    """An output location on a local disk and on the moto S3 server."""
    if request.param == "local":
        return Location.of(tmp_path / "out")
    client = request.getfixturevalue("s3_here")
    bucket = "versions-test"
    client.create_bucket(Bucket=bucket)
    return Location.of(f"s3://{bucket}/out-{request.node.name.split('[')[0][-20:]}")


def _publish(root: Location, writer: int, rows: int, number: int | None = None) -> int:
    """Writer `writer` publishes one past the newest version (or `number`): its files in its
    own folder, then its commit record."""
    number = versions.newest(root) + 1 if number is None else number
    (versions.folder(root, writer) / "data" / "part-0.parquet").write_bytes(b"x" * rows)
    (versions.folder(root, writer) / "manifest.json").write_text(json.dumps(
        {"output": root.uri, "inputs": ["a"], "finished": "now", "config_hash": "h",
         "version": number, "counts": {"read": rows, "kept": rows, "rejected": {}}}))  # fmt: skip
    versions.commit(root, number, {"counts": {"kept": rows}}, writer=writer)
    return number


def test_the_newest_commit_is_current_and_a_number_commits_once(root):
    with pytest.raises(versions.NoVersion, match="no published version"):
        versions.current(root)
    assert _publish(root, 3, 10) == 1  # numbered by its place in the log, not its writer
    assert versions.current(root).number == 1
    assert versions.current_dir(root).uri == (root / "versions" / "000000000003").uri
    with pytest.raises(versions.VersionConflict, match="version 1 was published by another"):
        _publish(root, 4, 99, number=1)  # a second writer from the same base
    assert versions.current(root).record["counts"] == {"kept": 10}  # the first one's stands
    assert _publish(root, 5, 20) == 2
    assert versions.current(root).number == 2
    assert versions.read(root, 1).record["counts"] == {"kept": 10}  # the old one is still there


def test_the_store_refuses_a_writer_whose_base_is_stale(root):
    """The sequence of issue 61 (1): A starts from version 1, passes its fence and is paused;
    B publishes 2; A's record of 2 is refused by the store (no client check helps it: A's
    fence passed before B existed). A writer whose base fell into a gap left by pruning
    creates its record, sees a newer one and withdraws it: never current."""
    _publish(root, 1, 10)
    base_a = versions.newest(root)

    def b_publishes_meanwhile() -> None:  # A's fence passes; B goes while A is paused
        _publish(root, 2, 20)

    (versions.folder(root, 1 + 5) / "data" / "part-0.parquet").write_bytes(b"a's")
    with pytest.raises(versions.VersionConflict, match="version 2 was published by another"):
        versions.commit(root, base_a + 1, {"counts": {"kept": 5}}, guard=b_publishes_meanwhile,
                        writer=6)  # fmt: skip
    assert versions.current(root).record["counts"] == {"kept": 20}
    for w in (7, 8):
        _publish(root, w, w)
    assert versions.prune(root, 2, 4) == [1, 2]  # the log: 3, 4; numbers 1, 2 free again
    with pytest.raises(versions.VersionConflict, match="version 4 was published"):
        versions.commit(root, 1, {"counts": {"kept": 1}}, writer=9)  # a base from long ago
    assert versions.committed(root) == [3, 4] and versions.current(root).number == 4


def test_a_writer_whose_fence_fails_publishes_nothing(root):
    _publish(root, 1, 10)

    def lost() -> None:
        raise OutputBusy("this run lost its lock")

    (versions.folder(root, 2) / "data" / "part-0.parquet").write_bytes(b"partial")
    with pytest.raises(OutputBusy):
        versions.commit(root, 2, {}, guard=lost, writer=2)
    assert versions.committed(root) == [1] and versions.current(root).number == 1


def test_an_undecodable_newest_record_is_skipped_by_readers_and_prune(root):
    """A store that showed a record before its bytes (or a crash on one that does): readers
    take the version before it, prune and the next writer go on."""
    for w in (1, 2):
        _publish(root, w, w)
    (root / "_versions" / f"{versions.name(3)}.json").write_bytes(b"")
    assert versions.current(root).number == 2
    assert versions.newest(root) == 3  # a writer starts past it: number 3 is taken
    assert versions.prune(root, 2, 2) == []
    assert _publish(root, 4, 4) == 4 and versions.current(root).number == 4


def test_prune_keeps_the_newest_the_young_the_cards_and_drops_leftovers(root):
    for w in (1, 3, 5):
        _publish(root, w, w)
    (versions.folder(root, 4) / "data" / "part-0.parquet").write_bytes(b"a crashed writer's")
    (versions.folder(root, 7) / "data" / "part-0.parquet").write_bytes(b"a newer writer's")
    mine = _publish(root, 6, 6)
    assert versions.prune(root, 2, mine, keep_seconds=3600) == []  # all younger than an hour
    assert versions.prune(root, 2, mine, pinned=[versions.name(1)]) == [2]  # the card's stays
    assert versions.committed(root) == [1, 3, 4]
    assert versions.prune(root, 2, mine) == [1]
    assert versions.committed(root) == [3, 4]
    assert (root / "versions").names() == [versions.name(n) for n in (5, 6, 7)]  # 7: not ours


def test_atomic_create_shows_a_whole_record_or_none(tmp_path):
    """Racing creates of one record: one wins, its bytes whole; nothing half-written is ever
    read, no temporary file stays."""
    target = Location.of(tmp_path / "_versions" / "000000000001.json")
    bodies = [json.dumps({"writer": i, "pad": "x" * 200_000}).encode() for i in range(8)]
    won: list[int] = []
    seen: list[bytes] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                seen.append(target.read_bytes())
            except FileNotFoundError:
                pass

    def writer(i: int) -> None:
        if target.create_exclusive(bodies[i]):
            won.append(i)

    r = threading.Thread(target=reader)
    r.start()
    ts = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stop.set()
    r.join()
    assert len(won) == 1 and target.read_bytes() == bodies[won[0]]
    assert all(b == bodies[won[0]] for b in seen)
    assert [p.name for p in (tmp_path / "_versions").iterdir()] == ["000000000001.json"]


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
    assert versions.writer_folder(new, 0) == 3 and versions.writer_folder(new, 9) == 9
    assert versions.writer_folder(new, 1) == 3  # a lock reset by hand: past every folder


def _card_rows(out: Path) -> tuple[int, list[str], int]:
    """What `load_dataset(DIR)` reads, as the card says: the version and its data files'
    ids; and the kept count its manifest states."""
    card = (out / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    globs = header["configs"][0]["data_files"][0]["path"]
    globs = [globs] if isinstance(globs, str) else globs  # an appended version: a folder each
    folder = out / "versions" / globs[0].split("/")[1]  # data/F/**: writer F's folder
    ids = [
        i
        for glob in globs
        for f in sorted(out.glob(glob))
        for i in pq.read_table(f, columns=["id"])["id"].to_pylist()
    ]
    manifest = json.loads((folder / "manifest.json").read_text())
    return manifest["version"], ids, manifest["counts"]["kept"]


@pytest.mark.spark
def test_readers_see_whole_versions_while_a_rerun_adds_inputs(spark, cfg, sample_warc, tmp_path):
    """A reader polls the output through its dataset card and through the files the current
    version's commit lists while a second run adds an input (appending): every observation
    is one complete version (its rows equal its manifest's kept count, no id twice). The
    first version's files stay while a kept version lists them; then they go. The card,
    report and explorer follow the newest."""
    from curate_pipeline.examples.corpus import synthetic_pages, write_pages_warc
    from curate_pipeline.run.orchestrate import run

    cfg = cfg.model_copy(deep=True)
    cfg.output.keep_hours = 0  # retention by count alone, seen below
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
    assert versions.current(out).record["holds"] == [Path(first["path"]).name]  # appended
    third = run(cfg, [str(sample_warc), str(extra)], out, spark)  # the same inputs: whole
    assert versions.committed(out) == [second_version, third["version"]]
    # the first version's commit is pruned (two are kept); its files stay while the second,
    # which lists them, is kept
    assert (out / first["path"]).exists()
    fourth = run(cfg, [str(sample_warc), str(extra)], out, spark)
    assert versions.committed(out) == [third["version"], fourth["version"]]
    assert not (out / first["path"]).exists()
    gone = Path(first["path"]).name  # its tables' folders went with it
    assert not any((out / t / gone).exists() for t in ("data", "rejected", "index"))
    assert _card_rows(out)[0] == fourth["version"]
    assert sorted(p.name for p in out.iterdir()) == [
        ".curate.lock", "README.md", "_stages", "_versions", "data", "index", "rejected",
        "versions"]  # fmt: skip


def test_a_store_that_ignores_conditional_writes_is_refused_unless_single_writer(
    s3_here, s3_ignoring_conditions, monkeypatch, cfg
):
    """Issue 61 (9): the moto server honours If-None-Match; the same bucket behind a proxy
    that drops the header (what MinIO before 2024 and some gateways do) accepts a second
    create of one key. The probe tells them apart; a run there is refused, naming the store,
    unless output.single_writer, when it goes on unlocked and commits without the check."""
    from curate_pipeline import location
    from curate_pipeline.location import NoExclusiveCreate, check_conditional_create
    from curate_pipeline.run import output_lock
    from curate_pipeline.run.orchestrate import lock_files_for

    s3_here.create_bucket(Bucket="probed")
    out = Location.of("s3://probed/out")
    check_conditional_create(out / ".curate.lock")  # the real store: refuses the second create
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_ignoring_conditions)
    for key in [k for k in location._fs_cache if k[0] in ("s3", "boto3-s3")]:
        location._fs_cache.pop(key)
    with pytest.raises(NoExclusiveCreate, match="accepted a second create of one key"):
        check_conditional_create(out / ".curate.lock")
    assert not [o for o in s3_here.list_objects_v2(Bucket="probed").get("Contents", [])
                if "_probe-" in o["Key"]]  # fmt: skip
    from curate_pipeline.config import ConfigError

    with pytest.raises(ConfigError, match="ignores conditional writes.*single_writer"):
        lock_files_for(None, cfg, out)  # refused before any Spark call
    single = cfg.model_copy(deep=True)
    single.output.single_writer = True
    files = lock_files_for(None, single, out)
    assert isinstance(files, output_lock.Unlocked)
    # the rest through the server itself (pyarrow's uploads are not for this small proxy);
    # the probe's verdict stays, as for the rest of a run
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_here.meta.endpoint_url)
    for key in [k for k in location._fs_cache if k[0] in ("s3", "boto3-s3")]:
        location._fs_cache.pop(key)
    with output_lock.hold(out, 30, files) as lease:
        assert isinstance(lease, output_lock.NoLock)
    (versions.folder(out, 1) / "data" / "part-0.parquet").write_bytes(b"x")
    versions.commit(out, 1, {"counts": {"kept": 1}}, create=files.create, writer=1)
    assert versions.current(out).number == 1


def test_the_card_follows_the_log_whoever_writes_it_last(tmp_path):
    """Issue 61 (2): A publishes version 1 and pauses before its card; B and C publish, C's
    retention removes version 1; A wakes and writes the card: it names the newest version
    (C's), whose folders all exist, not A's removed one."""
    from curate_pipeline.outputs.publish.card import card_folders, publish_card

    out = Location.of(tmp_path / "out")
    a = _publish(out, 1, 1)
    for w in (2, 3):
        _publish(out, w, w)
        assert publish_card(out) == versions.newest(out)
    assert versions.prune(out, 2, 3) == [a]
    assert publish_card(out) == 3  # A's late card write
    card = (out / "README.md").read_text()
    folders = card_folders(card)
    assert folders == [versions.name(3)] and all((out / "versions" / f).is_dir() for f in folders)


def test_a_lock_lost_inside_the_block_is_said_when_it_ends(tmp_path):
    """Issue 61 (2): a run whose lock was taken over while it ran (paused past its lease)
    is told so when it lets go, not released quietly: the CLI exits non-zero."""
    from curate_pipeline.run.output_lock import LOCK_NAME, Lease, hold

    out = Location.of(tmp_path / "out")
    with pytest.raises(OutputBusy, match="lost its lock"):
        with hold(out, 30) as mine:
            gen = out / LOCK_NAME / f"{mine.generation:012d}.json"
            held = json.loads(gen.read_text())
            gen.write_text(json.dumps(held | {"expires": 0, "pid": None}))  # lapsed
            Lease(out, 30).acquire()  # another run takes it over


@pytest.mark.spark
def test_overwrite_publishes_a_whole_version_and_deletes_no_published_one(
    spark, cfg, sample_warc, tmp_path
):
    """Issue 61 (3): --overwrite clears the working state and publishes a new whole version;
    the versions before it stay until retention removes them (never one bulk delete)."""
    from curate_pipeline.run.orchestrate import run

    out = tmp_path / "out"
    first = run(cfg, [str(sample_warc)], out, spark)
    second = run(cfg, [str(sample_warc)], out, spark, overwrite=True)
    assert versions.committed(out) == [first["version"], second["version"]]
    assert second["version"] == first["version"] + 1
    assert (out / first["path"]).is_dir() and not versions.current(out).record["holds"]
    assert [c["status"] for c in second["chunks"]] == ["ran"]  # the stages ran again
    assert second["counts"] == first["counts"]
