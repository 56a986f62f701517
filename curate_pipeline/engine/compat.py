"""What differs between the Spark versions the job runs on: 3.5 (EMR 7, Dataproc 2.x) to 4.x
(Databricks 17, the pyspark the lock pins).

Everything here gives the same rows in the same partitions on every version; only the means
differ. The rest of the package uses these functions instead of a 4.x-only API:

- `repartition_by_id(df, n, col)`: row i goes to partition `col` (0 <= col < n). Spark 4.1's
  `DataFrame.repartitionById` where it exists; before it, a hash repartition on a key chosen
  per target partition so that Spark's own hash (Murmur3, seed 42, what `repartition(n, c)`
  uses) sends it to that partition. The keys are found once per `n` by Spark itself (so they
  agree with the JVM's hash by construction) and checked.
- `to_arrow(df)` / `from_arrow(spark, table)`: a small DataFrame to and from a pyarrow Table
  on the driver (4.0's `toArrow` and `createDataFrame(pa.Table)`; before it, the Arrow batches
  `toPandas` collects, and a pandas frame sent with Arrow on).
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def spark_version(spark: SparkSession) -> tuple[int, int]:
    major, minor = spark.version.split(".")[:2]
    return int(major), int(minor)


def has_repartition_by_id() -> bool:
    return hasattr(DataFrame, "repartitionById")


_KEY = "__partition_key"


@lru_cache(maxsize=64)
def _keys_for(spark: SparkSession, n: int) -> tuple[int, ...]:
    """For each partition p < n, the smallest non-negative int k with
    pmod(hash(k), n) == p, as Spark's HashPartitioning computes it."""
    span = 64 * n + 4096  # coupon collector: ~n ln n draws cover every partition
    rows = (
        spark.range(span)
        .select(F.col("id").cast("int").alias("k"))
        .select("k", F.pmod(F.hash("k"), F.lit(n)).alias("p"))
        .groupBy("p")
        .agg(F.min("k").alias("k"))
        .collect()
    )
    keys = {int(r["p"]): int(r["k"]) for r in rows}
    missing = [p for p in range(n) if p not in keys]
    if missing:  # never seen for n up to 10^5 (64 n draws); stop rather than mis-partition
        raise RuntimeError(f"no hash key found for partitions {missing[:5]} of {n}")
    return tuple(keys[p] for p in range(n))


def repartition_by_id(df: DataFrame, n: int, col: str) -> DataFrame:
    """`df` with the rows whose `col` is p in partition p (0 <= p < n), on any version."""
    if has_repartition_by_id():
        return df.repartitionById(n, col)
    spark = df.sparkSession
    keys = _keys_for(spark, n)
    table = spark.createDataFrame([(p, k) for p, k in enumerate(keys)], f"{col}_p int, {_KEY} int")
    keyed = df.join(F.broadcast(table), df[col] == table[f"{col}_p"], "left").drop(f"{col}_p")
    return keyed.repartition(n, _KEY).drop(_KEY)


def to_arrow(df: DataFrame) -> pa.Table:
    """`df` collected to the driver as one Arrow table (its schema kept when empty)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()  # what 3.5's toPandas uses
    return pa.Table.from_batches(batches, schema=to_arrow_schema(df.schema))


def from_arrow(spark: SparkSession, table: pa.Table) -> DataFrame:
    """A DataFrame of `table`'s rows (driver-side data: keep it small)."""
    if spark_version(spark) >= (4, 0):
        return spark.createDataFrame(table)
    from pyspark.sql.pandas.types import from_arrow_schema

    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key, "false")
    spark.conf.set(key, "true")
    try:
        return spark.createDataFrame(table.to_pandas(), from_arrow_schema(table.schema))
    finally:
        spark.conf.set(key, before)
