"""Every reader sees exactly the current version, without the project's code: the Delta tables
at DIR/data and DIR/rejected (deltalake's pyarrow dataset and pandas, Polars read_delta and
scan_delta, DuckDB over the Delta table's Arrow dataset), `datasets.load_dataset(DIR)` by the
dataset card, and `curate export`'s folder (`load_dataset(DEST)`, pyarrow, DuckDB, pandas,
Polars and Spark on its files). Checked after a first run, an append, a whole new version
after a retune, with a crashed writer's orphan files beside them; routed by language too.
What each reader should see comes from the version's commit (its listed files and counts)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate_pipeline.outputs.publish import versions

pytestmark = pytest.mark.spark


def _expected(out: Path, sub: str) -> tuple[list[str], list[str]]:
    """The ids (sorted) and columns of the current version's `sub`, from its commit."""
    v = versions.current(out)
    key = "id" if sub == "data" else "doc_id"
    files = v.files(sub)
    ids = sorted(i for f in files for i in pq.read_table(f.uri, columns=[key])[key].to_pylist())
    counts = v.record["counts"]
    assert len(ids) == (counts["kept"] if sub == "data" else sum(counts["rejected"].values()))
    return ids, sorted(pq.read_schema(files[0].uri).names)


def _seen(rows, key: str) -> tuple[list[str], list[str]]:
    """(sorted ids, sorted columns) of an Arrow table, a pandas or a Polars frame."""
    import pyarrow as pa

    if isinstance(rows, pa.Table):
        return sorted(rows.column(key).to_pylist()), sorted(rows.column_names)
    return sorted(rows[key].to_list()), sorted(str(c) for c in rows.columns)


def _delta_readers(root: Path, key: str) -> dict[str, tuple]:
    import duckdb
    import polars as pl
    from deltalake import DeltaTable

    table = DeltaTable(str(root))
    dataset = table.to_pyarrow_dataset()  # noqa: F841 (DuckDB reads it by name)
    return {
        "deltalake pyarrow": _seen(table.to_pyarrow_table(), key),
        "deltalake pandas": _seen(table.to_pandas(), key),
        "polars read_delta": _seen(pl.read_delta(str(root)), key),
        "polars scan_delta": _seen(pl.scan_delta(str(root)).collect(), key),
        "duckdb": _seen(duckdb.sql("select * from dataset").to_arrow_table(), key),
    }


def _check_every_reader(spark, out: Path, dest: Path, cache: Path) -> None:
    from datasets import load_dataset

    from curate_pipeline.cli import main

    for sub, key, config in (("data", "id", "default"), ("rejected", "doc_id", "rejected")):
        want = _expected(out, sub)
        got = _delta_readers(out / sub, key)
        card = load_dataset(str(out), config, split="train", cache_dir=str(cache))
        got["load_dataset(DIR)"] = _seen(card.to_pandas(), key)
        for reader, seen in got.items():
            assert seen == want, (sub, reader)
    # the export: the version alone, a plain folder
    assert main(["export", str(out), str(dest), "--with", "rejected,shards,tokens"]) == 0
    import duckdb
    import pandas as pd
    import polars as pl

    for sub, key, config in (("data", "id", "default"), ("rejected", "doc_id", "rejected")):
        want = _expected(out, sub)
        files = sorted(str(p) for p in (dest / sub).rglob("*.parquet"))
        got = {
            "load_dataset(DEST)": _seen(load_dataset(str(dest), config, split="train",
                                                     cache_dir=str(cache)).to_pandas(), key),
            "pyarrow": _seen(pq.read_table(dest / sub), key),
            "duckdb": _seen(duckdb.sql(f"select * from read_parquet({files})").to_arrow_table(),
                            key),
            "pandas": _seen(pd.read_parquet(dest / sub), key),
            "polars": _seen(pl.read_parquet(f"{dest / sub}/**/*.parquet"), key),
            "spark": _seen(spark.read.option("recursiveFileLookup", "true")
                           .parquet(str(dest / sub)).toPandas(), key),
        }  # fmt: skip
        for reader, seen in got.items():
            assert seen == want, (sub, reader)
    assert sorted(p.name for p in dest.iterdir()) == [
        "README.md", "data", "rejected", "shards", "tokens"]  # fmt: skip


def _orphan(out: Path) -> None:
    """A crashed (or still running) writer's files beside the versions: a newer folder no
    commit lists, holding a copy of a data file."""
    v = versions.current(out)
    f = Path(v.files("data")[0].uri)
    for sub in ("data", "rejected"):
        orphan = out / sub / "000000009999"
        orphan.mkdir(parents=True, exist_ok=True)
        (orphan / "part-00000-orphan.parquet").write_bytes(f.read_bytes())


def test_every_reader_sees_the_current_version(spark, cfg, sample_warc, tmp_path):
    from curate_pipeline.examples.corpus import synthetic_pages, write_pages_warc
    from curate_pipeline.outputs.publish import delta
    from curate_pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.output.keep_hours = 0
    c.tokens.merged = False  # appendable
    extra = tmp_path / "extra.warc.gz"
    write_pages_warc(extra, synthetic_pages(30, seed=3), tag="extra")
    out = tmp_path / "out"
    first = run(c, [str(sample_warc)], out, spark)
    _check_every_reader(spark, out, tmp_path / "export-1", tmp_path / "hf")
    second = run(c, [str(sample_warc), str(extra)], out, spark)
    assert second["increment"]["base_version"] == first["version"]  # appended
    _orphan(out)
    _check_every_reader(spark, out, tmp_path / "export-2", tmp_path / "hf")
    # Delta versions map to output versions both ways: the txn action and versions/F/delta.json
    from deltalake import DeltaTable

    table = DeltaTable(str(out / "data"))
    assert table.transaction_version(delta.APP) == second["version"]
    assert delta.sync(out) == {"data": table.version(), "rejected": 1}  # a no-op: synced
    # a retune: a whole new version; Delta removes the earlier files, adds the new ones
    c.langid.threshold = 0.5
    third = run(c, [str(sample_warc), str(extra)], out, spark)
    assert "increment" not in third
    _check_every_reader(spark, out, tmp_path / "export-3", tmp_path / "hf")
    assert DeltaTable(str(out / "data")).transaction_version(delta.APP) == third["version"]
    # the protocol stays minimal (what DuckDB and Trino read): no table features
    p = DeltaTable(str(out / "data")).protocol()
    assert (p.min_reader_version, p.min_writer_version) == (1, 2)
    assert not p.reader_features and not p.writer_features


def test_a_crash_between_commit_and_delta_is_caught_up(spark, cfg, sample_warc, tmp_path,
                                                       monkeypatch):  # fmt: skip
    """The Delta log is written after the commit: a run that dies between them leaves the
    tables one version behind (never ahead), and `curate versions DIR --sync` catches up."""
    from deltalake import DeltaTable

    from curate_pipeline.cli import main
    from curate_pipeline.outputs.publish import delta
    from curate_pipeline.run.orchestrate import run

    out = tmp_path / "out"
    first = run(cfg, [str(sample_warc)], out, spark)

    def dies(*a, **k):
        raise SystemExit("killed between the commit and the Delta log")

    monkeypatch.setattr(delta, "sync", dies)
    c = cfg.model_copy(deep=True)
    c.langid.threshold = 0.5
    with pytest.raises(SystemExit):
        run(c, [str(sample_warc)], out, spark)
    monkeypatch.undo()
    assert versions.newest(out) == first["version"] + 1  # committed
    assert DeltaTable(str(out / "data")).transaction_version(delta.APP) == first["version"]
    assert main(["versions", str(out), "--sync"]) == 0
    for sub in ("data", "rejected"):
        table = DeltaTable(str(out / sub))
        assert table.transaction_version(delta.APP) == versions.newest(out)
        key = "id" if sub == "data" else "doc_id"
        assert _seen(table.to_pyarrow_table(), key) == _expected(out, sub)


def test_routed_data_keeps_its_language_column_in_every_reader(spark, cfg, sample_warc,
                                                               tmp_path):  # fmt: skip
    from huggingface_hub import DatasetCard

    from curate_pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.langid.route_by_language = True  # data/F/xx/ folders
    c.langid.keep_languages = ["all"]
    out = tmp_path / "out"
    run(c, [str(sample_warc)], out, spark)
    _check_every_reader(spark, out, tmp_path / "export", tmp_path / "hf")
    assert "lang" in _expected(out, "data")[1]
    assert sorted(p.name for p in (tmp_path / "export" / "data").iterdir()) == ["en", "ru", "zh"]
    card = DatasetCard.load(out / "README.md")
    configs = {c["config_name"]: c for c in card.data.configs}
    assert {"default", "lang_en", "lang_ru", "lang_zh", "rejected"} == set(configs)
    assert card.data.language == ["en", "ru", "zh"]
    from datasets import load_dataset

    ru = load_dataset(str(out), "lang_ru", split="train", cache_dir=str(tmp_path / "hf"))
    assert set(ru["lang"]) == {"ru"} and ru.num_rows >= 1
