"""The Python API: run a pipeline from a script and read what it published.

    from curate_pipeline.api import Drop, read, run

    def drop_short_recipes(doc):
        if "recipe" in (doc["url"] or "") and len(doc["text"]) < 500:
            return Drop("short_recipe", f"{len(doc['text'])} characters")

    manifest = run("fineweb", inputs=["crawl/"], output="out/run1",
                   steps=[drop_short_recipes], set={"langid.threshold": 0.7})
    kept = read("out/run1").to_pandas()

`run` does what `curate run` does (the same checks before Spark, the same job, the same
versioned output) and returns the manifest; `read` gives the output's current version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate_pipeline.config import Config, load_config
from curate_pipeline.document.verdict import Drop

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Drop", "config", "read", "run"]


def _overrides(values: Mapping[str, Any] | Iterable[str] | None) -> list[str]:
    """`set` as `--set` items: {"langid.threshold": 0.7} or ["langid.threshold=0.7"]."""
    import json

    if values is None:
        return []
    if isinstance(values, Mapping):
        return [f"{k}={json.dumps(v)}" for k, v in values.items()]  # JSON is YAML
    return list(values)


def config(preset: str | Path | Config | None = None,
           set: Mapping[str, Any] | Iterable[str] | None = None) -> Config:  # noqa: A002  # fmt: skip
    """A config: a preset's name (`fineweb2`), a file, or a Config built in code; `set`
    overrides settings by their dotted names."""
    if isinstance(preset, Config):
        if not set:
            return preset
        from curate_pipeline.config import merged, parse_overrides

        data = merged(preset.model_dump(mode="json"), parse_overrides(_overrides(set)))
        return Config.model_validate(data)
    return load_config(preset, _overrides(set))


def run(
    preset: str | Path | Config | None = None,
    inputs: Iterable[str | Path] = (),
    output: str | Path = "out/run",
    *,
    steps: Iterable[Callable | str] = (),
    after: str | None = None,
    set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002
    spark: SparkSession | None = None,
    master: str | None = None,
) -> dict:
    """Curate `inputs` into a new version of `output`; returns its manifest.

    `steps`: functions of your own (a document in, None or a Drop out) or "module:function"
    names, run after the stage `after` (default steps.after: regex_filter), each a ledger
    stage of its name. `spark`: a session of yours (a cluster's, a notebook's); else one in
    local mode (`master`, default the config's spark.master)."""
    from curate_pipeline.run.orchestrate import run as orchestrate
    from curate_pipeline.run.preflight import before_spark
    from curate_pipeline.stages.custom import register

    cfg = config(preset, set)
    if steps:
        given = [s if isinstance(s, str) else register(s) for s in steps]
        entries = [*cfg.steps.custom, *({"function": g, **({"after": after} if after else {})}
                                        for g in given)]  # fmt: skip
        cfg = cfg.model_copy(update={"steps": cfg.steps.model_validate(
            {**cfg.steps.model_dump(), "custom": entries})})  # fmt: skip
    paths = [str(p) for p in inputs] or cfg.input.paths
    before_spark(cfg, paths, str(output))  # what `curate run` checks, the same way
    if spark is None:
        from curate_pipeline.engine.spark import get_spark

        spark = get_spark(cfg, master)
    return orchestrate(cfg, paths, str(output), spark)


def read(output: str | Path, table: str = "data", *, as_: str = "arrow",
         spark: SparkSession | None = None) -> pa.Table | Any | DataFrame:  # fmt: skip
    """The current version's `table` (data, rejected) as an Arrow table, a pandas DataFrame
    (`as_="pandas"`) or a Spark DataFrame (`as_="spark"`, with `spark`): exactly the files
    its commit lists, never a half-written run's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate_pipeline.location import Location
    from curate_pipeline.outputs.publish.versions import current

    files = current(Location.of(str(output))).files(table)
    if as_ == "spark":
        if spark is None:
            raise ValueError("read(..., as_='spark') needs spark=SESSION")
        return spark.read.parquet(*(f.uri for f in files))
    parts = [pq.read_table(f.open_input()) for f in files]  # patient on a store
    arrow = pa.concat_tables(parts, promote_options="default") if parts else pa.table({})
    if as_ == "pandas":
        return arrow.to_pandas()
    if as_ != "arrow":
        raise ValueError(f"read(..., as_={as_!r}): arrow, pandas or spark")
    return arrow
