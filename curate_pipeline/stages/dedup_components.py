"""Connected components of the near-duplicate graph.

Up to `local_max_edges` edges (most crawls: an edge per near-duplicate document), the edges
are collected in one job and solved on the driver with scipy's connected_components, as
datatrove's one-process union-find does; the answer is the same, the many small jobs of the
distributed rounds are not run. Above it the rounds below run on the cluster.

Distributed: alternating large-star / small-star (Kiveris et al., "Connected Components in
MapReduce and Beyond", SoCC 2014).

Nodes are longs (crawl_pos), so every component's label is its smallest node: the document
that "keep the first" keeps. Each round is a few joins and aggregations; the edge set shrinks
to one star per component in O(log n) rounds. Nothing is collected to the driver: the
convergence test is an aggregation. Each round's edges are
checkpointed (reliably when a checkpoint directory is set, locally otherwise) to cut the
lineage. The loop ends when the edges form stars, each hung on its component's minimum
(one aggregation decides it); the LSH star edges often are stars already, so real corpora
mostly need zero or one round. The result is the same whatever the partitioning: only
minima are taken.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from curate_pipeline.document.dedup.clusters import components_of
from curate_pipeline.engine.compat import from_arrow, to_arrow

COMPONENTS_SCHEMA = "node long, component long"


class ComponentsDidNotConverge(RuntimeError):
    pass


def _undirected(edges: DataFrame) -> DataFrame:
    """Edges as (u > v), self loops and repeats removed."""
    return (
        edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v"))
        .where(F.col("u") != F.col("v"))
        .distinct()
    )


def large_star(edges: DataFrame) -> DataFrame:
    """Link every neighbour larger than x to the smallest node of x's neighbourhood."""
    both = edges.select(F.col("u").alias("x"), F.col("v").alias("y")).unionByName(
        edges.select(F.col("v").alias("x"), F.col("u").alias("y"))
    )
    mins = both.groupBy("x").agg(F.least(F.col("x"), F.min("y")).alias("m"))
    out = both.join(mins, "x").where(F.col("y") > F.col("x"))
    return _undirected(out.select(F.col("y").alias("u"), F.col("m").alias("v")))


def small_star(edges: DataFrame) -> DataFrame:
    """Link every node and its smaller neighbours to the smallest of them."""
    down = edges.select(F.col("u").alias("x"), F.col("v").alias("y"))  # u > v: y is smaller
    mins = down.groupBy("x").agg(F.min("y").alias("m"))
    out = down.join(mins, "x").select(F.col("y").alias("u"), F.col("m").alias("v"))
    out = out.unionByName(mins.select(F.col("x").alias("u"), F.col("m").alias("v")))
    return _undirected(out)


def is_star_forest(edges: DataFrame) -> bool:
    """True when every edge (u > v) hangs a leaf u on a centre v: each u on one edge, and no
    centre is also a leaf. Then every centre is its component's minimum: converged."""
    roles = edges.select(F.col("u").alias("n"), F.lit(1).alias("leaf"), F.lit(0).alias("hub"))
    roles = roles.unionByName(
        edges.select(F.col("v").alias("n"), F.lit(0).alias("leaf"), F.lit(1).alias("hub"))
    )
    per_node = roles.groupBy("n").agg(F.sum("leaf").alias("leaf"), F.max("hub").alias("hub"))
    return per_node.where(
        (F.col("leaf") > 1) | ((F.col("leaf") > 0) & (F.col("hub") > 0))
    ).isEmpty()


def cut_lineage(df: DataFrame) -> DataFrame:
    """Materialise `df` and forget how it was made (reliable checkpoint if a directory is set)."""
    sc = df.sparkSession.sparkContext
    return df.checkpoint(eager=True) if sc.getCheckpointDir() else df.localCheckpoint(eager=True)


def components_on_driver(undirected: DataFrame, max_edges: int) -> DataFrame | None:
    """connected_components' answer computed on the driver, or None when there are more than
    `max_edges` edges. `undirected` (materialised by the caller) is counted on the executors
    first (no single task ever holds the edges), and collected only when they fit."""
    spark = undirected.sparkSession
    if undirected.count() > max_edges:
        return None
    table = to_arrow(undirected)
    if table.num_rows == 0:
        return spark.createDataFrame([], COMPONENTS_SCHEMA)
    nodes, component = components_of(table.column("u").to_numpy(), table.column("v").to_numpy())
    return from_arrow(spark, pa.table({"node": nodes, "component": component}))


def connected_components(
    edges: DataFrame, max_iterations: int = 64, local_max_edges: int = 0
) -> DataFrame:
    """(node, component) for every node on an edge (`u`, `v` long columns); component = the
    smallest node of its connected component. Nodes on no edge are their own component.
    Up to `local_max_edges` edges the driver solves it (components_on_driver)."""
    # the edges are built once (the band join): the driver's count and collect, or the rounds,
    # start from this materialised copy
    e = cut_lineage(_undirected(edges))
    if local_max_edges > 0:
        local = components_on_driver(e, local_max_edges)
        if local is not None:
            return local
    rounds = 0
    while not is_star_forest(e):  # an empty edge set is a star forest too
        if rounds == max_iterations:
            raise ComponentsDidNotConverge(
                f"connected components did not converge in {max_iterations} rounds "
                "(raise near_dedup.max_iterations)"
            )
        e = cut_lineage(small_star(large_star(e)))
        rounds += 1
    # converged: stars, every non-root node u points to its root v
    roots = e.select(F.col("v").alias("node")).distinct().withColumn("component", F.col("node"))
    leaves = e.select(F.col("u").alias("node"), F.col("v").alias("component"))
    return leaves.unionByName(roots)
