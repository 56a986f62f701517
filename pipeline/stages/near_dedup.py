"""Stage `near_dedup`: MinHash-LSH near duplicates.

1. Signatures: `bands x rows` MinHash values per document and one key per band, computed in
   Python over whole documents (numpy) in the documents pass (signature_step).
2. Buckets: one row per (band, key, document); every member of a bucket is joined to the
   bucket's smallest member (star edges), never all pairs of a large bucket.
3. Verification (on by default): an edge stays where the two signatures agree on at least
   `threshold` of their values (estimated Jaccard), computed in the JVM.
4. Connected components on the verified edges (pipeline/stages/dedup_components.py: on the driver
   up to `local_max_edges` edges, distributed rounds above); in each, the
   document with the smallest crawl_pos stays, the others are `near_dup:duplicate` with the
   kept doc_id and their estimated Jaccard to it.
Kept rows carry `dup_cluster` (the kept doc_id) and `dup_cluster_size`.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.config import Config
from pipeline.document.dedup.minhash import MinHasher
from pipeline.stages.dedup_components import connected_components, cut_lineage
from pipeline.stages.exact_dedup import mark_rejected
from pipeline.stages.step import DocumentStep, Stage, Verdict, each, transform

SIG_FIELDS = [pa.field("minhash", pa.list_(pa.int32())), pa.field("bands", pa.list_(pa.int64()))]


def hasher_of(cfg: Config) -> MinHasher:
    c = cfg.near_dedup
    return MinHasher(c.shingle_size, c.bands, c.rows, c.seed)


def signature_settings(cfg: Config) -> dict:
    """The settings the per-document half reads (the rest only change the corpus half)."""
    c = cfg.near_dedup
    return {"shingle_size": c.shingle_size, "bands": c.bands, "rows": c.rows, "seed": c.seed}


def signature_step(spark: SparkSession, cfg: Config) -> DocumentStep:  # noqa: ARG001 (no model)
    """The per-document half: each document's MinHash signature and band keys (numpy, whole
    documents; run in the extract tasks)."""
    hasher = hasher_of(cfg)
    _ = hasher.permutations  # computed here and shipped with the step: workers skip datasketch

    def sign(doc: dict) -> Verdict:
        sig = hasher.signature(doc["text"] or "")
        doc["minhash"] = sig.view("int32").tolist()
        doc["bands"] = hasher.band_keys(sig).tolist()
        return None  # the verdicts are the corpus half's

    return DocumentStep(SIG_FIELDS, each(sign))


def _agreement(a: str, b: str, n: int):
    """Share of equal signature values: the estimated Jaccard, computed in the JVM."""
    same = F.zip_with(a, b, lambda x, y: F.when(x == y, 1).otherwise(0))
    return F.aggregate(same, F.lit(0), lambda acc, x: acc + x) / F.lit(n)


def near_dedup(spark: SparkSession, docs: DataFrame, cfg: Config) -> DataFrame:
    """The corpus half, on `minhash` and `bands` (computed here if `docs` lacks them)."""
    c = cfg.near_dedup
    hasher = hasher_of(cfg)
    if "minhash" not in docs.columns:
        docs = cut_lineage(transform(docs, "near_dup", signature_step(spark, cfg)))
    sigs = docs.select("crawl_pos", "minhash", "bands")
    buckets = sigs.select("crawl_pos", F.posexplode("bands").alias("band", "key"))
    roots = (
        buckets.groupBy("band", "key")
        .agg(F.min("crawl_pos").alias("root"), F.count("*").alias("n"))
        .where(F.col("n") > 1)
    )
    edges = (
        buckets.join(roots, ["band", "key"])
        .where(F.col("crawl_pos") != F.col("root"))
        .select(F.col("crawl_pos").alias("u"), F.col("root").alias("v"))
        .distinct()
    )
    if c.verify:
        su = sigs.select(F.col("crawl_pos").alias("u"), F.col("minhash").alias("su"))
        sv = sigs.select(F.col("crawl_pos").alias("v"), F.col("minhash").alias("sv"))
        edges = (
            edges.join(su, "u")
            .join(sv, "v")
            .where(_agreement("su", "sv", hasher.num_perm) >= c.threshold)
            .select("u", "v")
        )
    comps = connected_components(edges, c.max_iterations, c.local_max_edges)
    # Verdicts from narrow columns: per node on an edge, its cluster's root (the smallest
    # crawl_pos), the root's id and the cluster's size (an aggregation); every join below has
    # one row per key on its right side, so a cluster of a million pages streams through in
    # bounded memory (a window over the cluster's whole rows held it in one task).
    sizes = comps.groupBy("component").agg(F.count("*").cast("int").alias("_size"))
    root = docs.select(F.col("crawl_pos").alias("component"), F.col("doc_id").alias("_root_id"),
                       F.col("minhash").alias("_rsig"))  # fmt: skip
    own = sigs.select(F.col("crawl_pos").alias("node"), F.col("minhash").alias("_sig"))
    verdicts = (
        comps.join(sizes, "component")
        .join(root, "component")
        .join(own, "node")
        .select(
            "node", "component", "_root_id", "_size",
            _agreement("_sig", "_rsig", hasher.num_perm).alias("_jaccard"),
        )
    )  # fmt: skip
    out = docs.join(verdicts, docs["crawl_pos"] == verdicts["node"], "left").withColumns(
        {
            "dup_cluster": F.coalesce("_root_id", "doc_id"),
            "dup_cluster_size": F.coalesce("_size", F.lit(1)),
        }
    )
    out = mark_rejected(
        out,
        F.col("component").isNotNull() & (F.col("crawl_pos") != F.col("component")),
        "near_dup",
        "duplicate",
        F.format_string("kept %s, estimated Jaccard %.3f", F.col("dup_cluster"), F.col("_jaccard")),
    )
    return out.drop("node", "component", "_root_id", "_size", "_jaccard")


STAGE = Stage("near_dedup", ledger="near_dup", step=signature_step, corpus=near_dedup,
              enabled=lambda c: c.near_dedup.enabled, settings=signature_settings,
              passed="no near duplicate")  # fmt: skip
