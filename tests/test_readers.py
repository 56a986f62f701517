"""data/ and rejected/ open as they are in the readers the README names: pyarrow, DuckDB,
pandas, Polars and Hugging Face `datasets` (no _SUCCESS, no .crc, nothing but Parquet); the
output folder opens with `load_dataset(DIR)` by its dataset card."""

from __future__ import annotations

import pytest
from run_outputs import published


def _read_everywhere(folder, cache) -> dict[str, int]:
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow.parquet as pq
    from datasets import load_dataset

    return {
        "pyarrow": pq.read_table(folder).num_rows,
        "duckdb": duckdb.sql(
            f"select count(*) from read_parquet('{folder}/**/*.parquet', hive_partitioning=true)"
        ).fetchall()[0][0],
        "pandas": len(pd.read_parquet(folder)),
        "polars": pl.scan_parquet(folder, hive_partitioning=True).select(pl.len()).collect().item(),
        "datasets": load_dataset(
            "parquet", data_dir=str(folder), split="train", cache_dir=str(cache)
        ).num_rows,
    }


@pytest.mark.spark
@pytest.mark.parametrize("routed", [False, True])
def test_outputs_open_in_five_readers(spark, cfg, sample_warc, tmp_path, routed):
    from pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.langid.route_by_language = routed  # data/lang=xx/ folders
    c.langid.keep_languages = ["all"]
    out = tmp_path / "out"
    m = run(c, [str(sample_warc)], out, spark)
    version = published(out)
    for sub, n in (("data", m["counts"]["kept"]),
                   ("rejected", sum(m["counts"]["rejected"].values()))):  # fmt: skip
        names = {p.name for p in (version / sub).rglob("*") if p.is_file()}
        assert names and all(n.endswith(".parquet") for n in names), names
        assert not any(p.name.startswith((".", "_")) for p in (version / sub).rglob("*"))
        assert _read_everywhere(version / sub, tmp_path / "hf") == dict.fromkeys(
            ("pyarrow", "duckdb", "pandas", "polars", "datasets"), n
        )
    # the output folder itself, by its dataset card (README.md): data/, or the ledger
    from datasets import load_dataset

    kept = load_dataset(str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert kept.num_rows == m["counts"]["kept"] and "text" in kept.column_names
    ledger = load_dataset(str(out), "rejected", split="train", cache_dir=str(tmp_path / "hf"))
    assert ledger.num_rows == sum(m["counts"]["rejected"].values())
    assert "reason" in ledger.column_names
