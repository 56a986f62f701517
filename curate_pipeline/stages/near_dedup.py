"""Stage `near_dedup`: MinHash-LSH near duplicates.

1. Signatures: `bands x rows` MinHash values per document and one key per band, computed in
   Python over whole documents (numpy) in the documents pass (signature_step).
2. Buckets: one row per (band, key, document).
3. Verification (on by default), pairs whose signatures agree on at least `threshold` of their
   values (estimated Jaccard, computed in the JVM), in two steps (bucket_edges): each member
   against its bucket's first member; then each member that failed it against the other
   members of its bucket (all of them up to `all_pairs` members, so a page similar to the
   third member but not the first still links: A~B, B~C, A!~C), or against ~`anchors`
   anchors in a larger bucket (bounded work). Without verification, star edges to the first
   member (every member of a bucket is a duplicate then).
4. Connected components on the verified edges (curate_pipeline/stages/dedup_components.py: on the
driver
   up to `local_max_edges` edges, distributed rounds above); in each, the
   document with the smallest crawl_pos stays, the others are `near_dup:duplicate` with the
   kept doc_id and their estimated Jaccard to it.
Kept rows carry `dup_cluster` (the kept doc_id) and `dup_cluster_size`. `per_language`: the
band keys take the document's language, so clusters never cross languages (FineWeb-2's).
"""

from __future__ import annotations

from functools import partial, reduce

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from curate_pipeline.config import Config
from curate_pipeline.document.dedup.clusters import NearSettings, near_clusters
from curate_pipeline.document.dedup.minhash import MinHasher, language_band_keys
from curate_pipeline.document.text.lang_words import assignment, split_words_in
from curate_pipeline.engine.compat import to_arrow
from curate_pipeline.stages.arrow_batches import attach
from curate_pipeline.stages.dedup_components import connected_components, cut_lineage
from curate_pipeline.stages.exact_dedup import mark_rejected
from curate_pipeline.stages.recipe_files import digest, splitter_table
from curate_pipeline.stages.step import DocumentStep, Stage, Verdict, each, transform

SIG_FIELDS = [pa.field("minhash", pa.list_(pa.int32())), pa.field("bands", pa.list_(pa.int64()))]


def hasher_of(cfg: Config) -> MinHasher:
    c = cfg.near_dedup
    return MinHasher(c.shingle_size, c.bands, c.rows, c.seed)


def signature_settings(cfg: Config) -> dict:
    """The settings the per-document half reads (the rest only change the corpus half)."""
    c = cfg.near_dedup
    return {"shingle_size": c.shingle_size, "bands": c.bands, "rows": c.rows, "seed": c.seed,
            "per_language": c.per_language, "word_splitter": c.word_splitter,
            "table": digest(cfg)[1] if c.word_splitter == "per_language" else None}  # fmt: skip


def signature_step(spark: SparkSession, cfg: Config) -> DocumentStep:  # noqa: ARG001 (no model)
    """The per-document half: each document's MinHash signature and band keys (numpy, whole
    documents; run in the extract tasks)."""
    hasher = hasher_of(cfg)
    _ = hasher.permutations  # computed here and shipped with the step: workers skip datasketch
    per_language = cfg.near_dedup.per_language
    table = splitter_table(cfg, "near_dedup")

    def sign(doc: dict) -> Verdict:
        split = None
        if table is not None:
            which = assignment(table, doc.get("lang_key"), doc.get("lang"))
            split = partial(split_words_in, splitter=which)
        sig = hasher.signature(doc["text"] or "", split)
        doc["minhash"] = sig.view("int32").tolist()
        keys = hasher.band_keys(sig)
        if per_language:
            keys = language_band_keys(keys, doc.get("lang_key") or doc.get("lang"))
        doc["bands"] = keys.tolist()
        return None  # the verdicts are the corpus half's

    return DocumentStep(SIG_FIELDS, each(sign))


def _agreement(a: str, b: str, n: int):
    """Share of equal signature values: the estimated Jaccard, computed in the JVM."""
    same = F.zip_with(a, b, lambda x, y: F.when(x == y, 1).otherwise(0))
    return F.aggregate(same, F.lit(0), lambda acc, x: acc + x) / F.lit(n)


def _ordered(df: DataFrame, x: str, y: str) -> DataFrame:
    return df.select(F.greatest(x, y).alias("u"), F.least(x, y).alias("v"))


def _verify(pairs: DataFrame, sigs: DataFrame, threshold: float, n_perm: int) -> DataFrame:
    """The pairs whose signatures agree on at least `threshold` of their values."""
    su = sigs.select(F.col("crawl_pos").alias("u"), F.col("minhash").alias("su"))
    sv = sigs.select(F.col("crawl_pos").alias("v"), F.col("minhash").alias("sv"))
    return (
        pairs.join(su, "u")
        .join(sv, "v")
        .where(_agreement("su", "sv", n_perm) >= threshold)
        .select("u", "v")
    )


def bucket_edges(sigs: DataFrame, c, n_perm: int) -> tuple[DataFrame, DataFrame]:
    """(verified edges, the pairs that were checked), u > v, from the LSH buckets.

    1. Each member of a bucket against the bucket's first member (its smallest crawl_pos).
    2. Each member that failed its first member, against the other members of its bucket:
       all of them in a bucket of up to `all_pairs` members (a pair of two members that
       both passed is joined through the first member already: so the clusters are those of
       every pair verified); in a larger bucket, against its anchors (about `anchors` members
       picked by a hash of crawl_pos, the same documents in every band), and each anchor that
       failed against every member, so work stays ~2 x anchors x n pairs, never n^2/2.
    Without verification (or all_pairs 0): step 1 only. No window and no list of a bucket's
    members is built: a bucket of a million pages streams through joins on narrow rows."""
    buckets = sigs.select("crawl_pos", F.posexplode("bands").alias("band", "key"))
    stats = (
        buckets.groupBy("band", "key")
        .agg(F.min("crawl_pos").alias("root"), F.count("*").alias("n"))
        .where(F.col("n") > 1)
    )
    members = buckets.join(stats, ["band", "key"]).where(F.col("crawl_pos") != F.col("root"))
    star = members.select(F.col("crawl_pos").alias("u"), F.col("root").alias("v")).distinct()
    if not c.verify:
        return star, star
    first = _verify(star, sigs, c.threshold, n_perm)
    if c.all_pairs <= 0:
        return first, star
    # members that failed their bucket's first member, per bucket
    failed = members.join(
        first.select(F.col("u").alias("crawl_pos"), F.col("v").alias("root")),
        ["crawl_pos", "root"], "left_anti",
    )  # fmt: skip
    small = F.col("n") <= c.all_pairs
    others = members.where(small).select("band", "key", F.col("crawl_pos").alias("o"))
    pairs_small = failed.where(small).join(others, ["band", "key"])
    picked = is_anchor(F.col("crawl_pos"), F.col("n"), c.anchors)
    anchors = members.where(~small & picked).select("band", "key", F.col("crawl_pos").alias("o"))
    pairs_large = failed.where(~small).join(anchors, ["band", "key"])
    failed_anchors = failed.where(~small & picked).select("band", "key", "crawl_pos")
    pairs_anchor = failed_anchors.join(
        members.where(~small).select("band", "key", F.col("crawl_pos").alias("o")),
        ["band", "key"],
    )
    second = (
        reduce(DataFrame.unionByName, [_ordered(p.where(F.col("crawl_pos") != F.col("o")),
                                                "crawl_pos", "o")
                                       for p in (pairs_small, pairs_large, pairs_anchor)])
        .distinct()
    )  # fmt: skip
    edges = first.unionByName(_verify(second, sigs, c.threshold, n_perm))
    return edges, star.unionByName(second)


def is_anchor(pos: Column, n: Column, anchors: int) -> Column:
    """Whether the document at crawl position `pos` is one of the ~`anchors` members of a
    bucket of `n` drawn by hash: the same documents in every band and every run."""
    h = F.pmod(F.xxhash64(pos), F.lit(1 << 31))
    return h < F.lit(float(1 << 31)) * F.lit(anchors) / n


def _column(table: pa.Table, name: str, n: int) -> np.ndarray:
    """A list column of equal-length lists as an (n, width) array (no copy)."""
    values = table.column(name).combine_chunks().flatten().to_numpy()
    return values.reshape(n, -1) if n else values.reshape(0, 0)


LINK = "struct<node:bigint,_via:string,_via_detail:string>"


def verdicts_on_driver(every: DataFrame, c, n_perm: int) -> pa.Table:
    """near_dedup's per-node verdicts (node, component, _root_id, _size, _jaccard, _link)
    from one collect of the narrow rows (crawl_pos, doc_id, minhash, bands, reject_detail,
    _is_link), solved in numpy (document/dedup/clusters.py: the distributed joins' rules,
    decision for decision). `_link`: the smallest link in the node's cluster, if any."""
    table = to_arrow(every.select(
        "crawl_pos", "doc_id", "minhash", "bands", "reject_detail", "_is_link",
        F.pmod(F.xxhash64("crawl_pos"), F.lit(1 << 31)).alias("anchor_hash")))  # fmt: skip
    n = table.num_rows
    pos = table.column("crawl_pos").to_numpy()
    found = near_clusters(pos, _column(table, "minhash", n), _column(table, "bands", n),
                          table.column("anchor_hash").to_numpy(),
                          NearSettings(c.threshold, c.verify, c.all_pairs, c.anchors))  # fmt: skip
    order = np.argsort(pos)
    row_of = lambda p: order[np.searchsorted(pos, p, sorter=order)]  # noqa: E731
    ids = table.column("doc_id").combine_chunks()
    details = table.column("reject_detail").combine_chunks()
    nodes = row_of(found.node)
    # each cluster's smallest link node, where it holds one
    is_link = table.column("_is_link").to_numpy(zero_copy_only=False)[nodes]
    links = np.flatnonzero(is_link)
    first: dict[int, int] = {}
    for i in links[np.argsort(found.node[links], kind="stable")]:
        first.setdefault(int(found.component[i]), int(i))
    via = np.fromiter((first.get(int(k), -1) for k in found.component), np.int64,
                      len(found.component))  # fmt: skip
    at = pa.array(nodes[np.maximum(via, 0)] if len(via) else np.zeros(0, np.int64))
    link = pa.StructArray.from_arrays(
        [pa.array(found.node[np.maximum(via, 0)] if len(via) else via, pa.int64()),
         ids.take(at), details.take(at)],
        names=["node", "_via", "_via_detail"], mask=pa.array(via < 0))  # fmt: skip
    return pa.table({
        "node": pa.array(found.node, pa.int64()),
        "component": pa.array(found.component, pa.int64()),
        "_root_id": ids.take(pa.array(row_of(found.component))) if n else pa.nulls(0, pa.string()),
        "_size": pa.array(found.size, pa.int32()),
        "_jaccard": pa.array(found.jaccard, pa.float64()),
        "_link": link,
    })  # fmt: skip


def _joined(docs: DataFrame, comps: DataFrame, verdicts: DataFrame,
            linked: DataFrame | None) -> DataFrame:  # fmt: skip
    """`docs` with their verdicts (and clusters' links) by joins: the cluster's path."""
    if linked is not None:  # a cluster holding a link: each of its documents goes, naming it
        via = (comps.join(linked.select(F.col("crawl_pos").alias("node"),
                                        F.col("doc_id").alias("_via"),
                                        F.col("reject_detail").alias("_via_detail")), "node")
               .groupBy("component").agg(F.min(F.struct("node", "_via", "_via_detail"))
                                         .alias("_link")))  # fmt: skip
        verdicts = verdicts.join(via, "component", "left")
    else:
        verdicts = verdicts.withColumn("_link", F.lit(None).cast(LINK))
    return docs.join(verdicts, docs["crawl_pos"] == verdicts["node"], "left")


def near_dedup(spark: SparkSession, docs: DataFrame, cfg: Config,
               links: DataFrame | None = None, rows: int | None = None) -> DataFrame:  # fmt: skip
    """The corpus half, on `minhash` and `bands` (computed here if `docs` lacks them).
    `links`: documents an earlier stage dropped as near copies of published ones (an append's
    prior_dup:near): they join the clusters as links that are never kept, so a chain
    N2 ~ N1 ~ E drops N2 as one run over everything drops it (E the published one).
    `rows`: at most this many documents are given (the documents pass counted them): up to
    `local_max_documents` the clusters are solved on the driver from one collect."""
    c = cfg.near_dedup
    hasher = hasher_of(cfg)
    if "minhash" not in docs.columns:
        docs = cut_lineage(transform(docs, "near_dup", signature_step(spark, cfg)))
    sigs = docs.select("crawl_pos", "minhash", "bands")
    nodes = docs.select("crawl_pos", "doc_id", "minhash")
    if links is not None:
        linked = links.select("crawl_pos", "minhash", "bands", "doc_id", "reject_detail")
        sigs = sigs.unionByName(linked.select("crawl_pos", "minhash", "bands"))
        nodes = nodes.unionByName(linked.select("crawl_pos", "doc_id", "minhash"))
    if rows is not None and rows <= c.local_max_documents:
        cols = ["crawl_pos", "doc_id", "minhash", "bands"]
        every = docs.select(*cols, F.lit(None).cast("string").alias("reject_detail"),
                            F.lit(False).alias("_is_link"))  # fmt: skip
        if links is not None:
            every = every.unionByName(linked.select(*cols, "reject_detail",
                                                    F.lit(True).alias("_is_link")))  # fmt: skip
        # the verdicts ship with the tasks: no join, so no broadcast job
        out = attach(docs, verdicts_on_driver(every, c, hasher.num_perm), "crawl_pos", "node")
    else:
        edges, _ = bucket_edges(sigs, c, hasher.num_perm)
        comps = connected_components(edges, c.max_iterations, c.local_max_edges)
        # Verdicts from narrow columns: per node on an edge, its cluster's root (the smallest
        # crawl_pos), the root's id and the cluster's size (an aggregation); every join below
        # has one row per key on its right side, so a cluster of a million pages streams
        # through in bounded memory (a window over the cluster's whole rows held it in one
        # task).
        sizes = comps.groupBy("component").agg(F.count("*").cast("int").alias("_size"))
        root = nodes.select(
            F.col("crawl_pos").alias("component"),
            F.col("doc_id").alias("_root_id"),
            F.col("minhash").alias("_rsig"),
        )
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
        out = _joined(docs, comps, verdicts, linked if links is not None else None)
    out = out.withColumns(
        {
            "dup_cluster": F.coalesce("_root_id", "doc_id"),
            "dup_cluster_size": F.coalesce("_size", F.lit(1)),
        }
    )
    out = mark_rejected(
        out, F.col("_link").isNotNull(), "near_dup", "duplicate",
        F.format_string("near %s, dropped as a near copy of a published document (%s): "
                        "linked to it through a chain of near duplicates",
                        F.col("_link._via"), F.col("_link._via_detail")),
    )  # fmt: skip
    out = mark_rejected(
        out,
        F.col("component").isNotNull() & (F.col("crawl_pos") != F.col("component")),
        "near_dup",
        "duplicate",
        F.concat(
            F.format_string("kept %s, estimated Jaccard %.3f", F.col("dup_cluster"),
                            F.col("_jaccard")),
            # below the threshold to the kept page: linked to it through other near duplicates
            F.when(F.col("_jaccard") < F.lit(c.threshold) if c.verify else F.lit(False),
                   F.lit(" (through a chain of near duplicates)")).otherwise(F.lit("")),
        ),
    )  # fmt: skip
    return out.drop("node", "component", "_root_id", "_size", "_jaccard", "_link")


STAGE = Stage("near_dedup", ledger="near_dup", step=signature_step, corpus=near_dedup,
              enabled=lambda c: c.near_dedup.enabled, settings=signature_settings,
              passed="no near duplicate", links=("prior_dup",), sized=True)  # fmt: skip
