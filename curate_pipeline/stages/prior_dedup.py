"""Stage `prior_dedup`: drop what earlier outputs already hold (`dedup.against`).

Each run publishes a dedup index with its version (`versions/N/index/`, written by
`index_frame` below): per kept document its id, crawl position, exact key, MinHash signature
and LSH band keys. A run with `dedup.against: [OUTPUT, ...]` reads those outputs' current
indexes and, before its own dedup:
- drops a document whose exact key an indexed document has: `prior_dup:exact`, naming the
  output and the document;
- drops a near duplicate of an indexed document: they share an LSH bucket (band, key) and
  their signatures agree on at least `near_dedup.threshold` of their values (the estimated
  Jaccard): `prior_dup:near`, or `prior_dup:near_links` when it is near two or more indexed
  documents (it would have joined their clusters; both stay published). Each bucket is
  represented by its first indexed document (the smallest crawl position): the indexed
  documents were deduplicated among themselves, so a bucket's members are rarely near
  duplicates of each other, and the work stays one comparison per band and document,
  however large a template's bucket.
Documents already published in the earlier outputs are never touched.

Only the index rows sharing a key with a given document are grouped and compared: the
given documents' keys are broadcast to the scan of the index when they are few (an append:
`dedup.broadcast_keys`), so the index, every earlier document, is read where it lies and
never shuffled; the signatures read are the matched representatives' only. The index is not
partitioned by key: a lookup scans every indexed document's keys (~210 bytes each).
"""

from __future__ import annotations

from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from curate_pipeline.config import Config, ConfigError
from curate_pipeline.document.dedup.clusters import NearSettings
from curate_pipeline.document.dedup.prior import Given, Indexed, exact_matches, near_matches
from curate_pipeline.engine.compat import to_arrow
from curate_pipeline.engine.storage import read_parquet
from curate_pipeline.outputs.publish import versions
from curate_pipeline.stages.arrow_batches import attach
from curate_pipeline.stages.dedup_components import cut_lineage
from curate_pipeline.stages.exact_dedup import mark_rejected
from curate_pipeline.stages.near_dedup import _agreement, is_anchor, signature_settings
from curate_pipeline.stages.step import Stage

INDEX = "index"  # versions/N/index/*.parquet
INDEX_SCHEMA = StructType([
    StructField("doc_id", StringType()),
    StructField("crawl_pos", LongType()),
    StructField("exact_key", StringType()),
    StructField("minhash", ArrayType(IntegerType())),
    StructField("bands", ArrayType(LongType())),
])  # fmt: skip


def index_settings(cfg: Config) -> dict:
    """What makes two indexes comparable: the near-dedup signature settings (band keys and
    signatures of other settings never match), and whether exact keys are there."""
    return {"exact": cfg.exact_dedup.enabled,
            "near": signature_settings(cfg) if cfg.near_dedup.enabled else None}  # fmt: skip


def index_frame(rows: DataFrame) -> DataFrame:
    """The index of kept narrow rows: the columns of INDEX_SCHEMA, nulls where a dedup stage
    was off."""
    cols = [F.col(f.name) if f.name in rows.columns else F.lit(None).cast(f.dataType).alias(f.name)
            for f in INDEX_SCHEMA.fields]  # fmt: skip
    return rows.select(*cols)


def _earlier(cfg: Config) -> list[tuple[str, versions.Version]]:
    """Each earlier output's current version, checked against this run's settings."""
    out = []
    mine = index_settings(cfg)
    for given in cfg.dedup.against:
        try:
            v = versions.current(given)
        except versions.NoVersion as e:
            raise ConfigError(f"dedup.against: {e}") from None
        theirs = v.record.get("dedup_index")
        if theirs is None:
            raise ConfigError(
                f"dedup.against: {given} version {v.number} has no dedup index (dedup.index "
                "was off, or it predates indexes): rerun it"
            )
        if mine["near"] is not None and theirs.get("near") != mine["near"]:
            raise ConfigError(
                f"dedup.against: {given} was signed with other near-dedup settings "
                f"({theirs.get('near')}; this run: {mine['near']}): their band keys never "
                "match; use the same near_dedup shingle_size, bands, rows, seed, "
                "per_language and word_splitter"
            )
        out.append((given, v))
    return out


def earlier_versions(cfg: Config) -> object:
    """What the corpus half reads besides its rows: the outputs and the version of each (a
    newer version of one reruns the stage)."""
    return [(given, v.number) for given, v in _earlier(cfg)]


def read_indexes(spark: SparkSession, cfg: Config) -> DataFrame:
    """Every earlier output's index rows, with `_output` (its name as given)."""
    frames = []
    for given, v in _earlier(cfg):
        rows = read_parquet(spark, v.files(INDEX), INDEX_SCHEMA, cfg.output.spark_io)
        frames.append(rows.withColumn("_output", F.lit(given)))
    return reduce(DataFrame.unionByName, frames)


def _semi(rows: DataFrame, keys: DataFrame, on: list[str], small: bool) -> DataFrame:
    """`rows` whose `on` columns are among `keys`'. Small `keys` (this run's, an append's)
    are broadcast: each task of the index scan filters its own rows, and the index (every
    earlier document) is never shuffled; else both sides are shuffled by key."""
    return rows.join(F.broadcast(keys) if small else keys, on, "left_semi")


def index_rows(cfg: Config) -> int | None:
    """The rows of the earlier outputs' indexes, as their commits list them (None: a file
    listed without its rows)."""
    total = 0
    for _, v in _earlier(cfg):
        for entry in v.record.get("files", {}).get(INDEX, []):
            if "rows" not in entry:
                return None
            total += int(entry["rows"])
    return total


PRIOR = "struct<_output:string,crawl_pos:bigint,doc_id:string>"
NEAR = "struct<j:double,o:string,id:string>"


def _matrix(table: pa.Table, name: str, width: int) -> tuple[np.ndarray, np.ndarray]:
    """A list column as an (n, width) array (rows without a list: zeros) and its mask."""
    col = table.column(name).combine_chunks()
    has = col.is_valid().to_numpy(zero_copy_only=False)
    values = col.filter(pa.array(has)).flatten().to_numpy()  # int32 signatures stay int32
    out = np.zeros((len(col), width), dtype=values.dtype)
    if has.any():
        out[has] = values.reshape(-1, width)
    return out, has


def matches_on_driver(spark: SparkSession, docs: DataFrame, cfg: Config) -> pa.Table:
    """prior_dedup's matches (crawl_pos, _prior, _near, _links) from one collect of the
    given rows and the earlier outputs' indexes, solved in numpy (document/dedup/prior.py:
    the joins' rules, decision for decision)."""
    c = cfg.near_dedup
    near = "minhash" in docs.columns and c.enabled
    width, n_bands = c.bands * c.rows, c.bands

    def cols(df: DataFrame, given: bool) -> list:
        none = {"string": F.lit(None).cast("string"), "sig": F.lit(None).cast("array<int>"),
                "bands": F.lit(None).cast("array<bigint>")}  # fmt: skip
        have = df.columns
        return [
            (F.lit(None).cast("string") if given else F.col("_output")).alias("_output"),
            "crawl_pos",
            (F.lit(None).cast("string") if given else F.col("doc_id")).alias("doc_id"),
            (F.col("exact_key") if "exact_key" in have else none["string"]).alias("exact_key"),
            (F.col("minhash") if near and "minhash" in have else none["sig"]).alias("minhash"),
            (F.col("bands") if near and "bands" in have else none["bands"]).alias("bands"),
            F.lit(given).alias("_given"),
            F.pmod(F.xxhash64("crawl_pos"), F.lit(1 << 31)).alias("anchor_hash"),
        ]

    index = read_indexes(spark, cfg)
    both = docs.select(*cols(docs, True)).unionByName(index.select(*cols(index, False)))
    table = to_arrow(both)
    given = table.filter(table.column("_given"))
    indexed = table.filter(pc.invert(table.column("_given")))
    sigs_g, has_g = _matrix(given, "minhash", width)
    bands_g, _ = _matrix(given, "bands", n_bands)
    sigs_i, has_i = _matrix(indexed, "minhash", width)
    bands_i, _ = _matrix(indexed, "bands", n_bands)
    g = Given(given.column("crawl_pos").to_numpy(), given.column("exact_key").to_pylist(),
              sigs_g, bands_g, has_g)  # fmt: skip
    i = Indexed(indexed.column("_output").to_pylist(), indexed.column("crawl_pos").to_numpy(),
                indexed.column("doc_id").to_pylist(), indexed.column("exact_key").to_pylist(),
                sigs_i, bands_i, has_i, indexed.column("anchor_hash").to_numpy())  # fmt: skip
    exact = exact_matches(g, i) if "exact_key" in docs.columns else {}
    rest = np.array([r for r in range(len(g.pos)) if r not in exact], dtype=np.int64)
    settings = NearSettings(c.threshold, c.verify, c.all_pairs, c.anchors)
    found = near_matches(g, i, rest, settings) if near else {}
    rows = sorted(set(exact) | set(found))
    prior = [exact.get(r) for r in rows]
    best = [found.get(r) for r in rows]
    return pa.table({
        "crawl_pos": pa.array(g.pos[rows] if rows else [], pa.int64()),
        "_prior": pa.array([None if p is None else {"_output": p[0], "crawl_pos": p[1],
                                                    "doc_id": p[2]} for p in prior],
                           pa.struct([("_output", pa.string()), ("crawl_pos", pa.int64()),
                                      ("doc_id", pa.string())])),
        "_near": pa.array([None if b is None else {"j": b[0][0], "o": b[0][1], "id": b[0][2]}
                           for b in best],
                          pa.struct([("j", pa.float64()), ("o", pa.string()),
                                     ("id", pa.string())])),
        "_links": pa.array([None if b is None else b[1] for b in best], pa.int64()),
    })  # fmt: skip


def _marked(out: DataFrame, cfg: Config, exact: bool, near: bool) -> DataFrame:
    """The drops, from `_prior` (exact) and `_near`, `_links` (near)."""
    if exact:
        out = mark_rejected(out, F.col("_prior").isNotNull(), "prior_dup", "exact",
                            F.format_string("in %s as %s", F.col("_prior._output"),
                                            F.col("_prior.doc_id"))).drop("_prior")  # fmt: skip
    if near:
        named = F.format_string("in %s as %s, estimated Jaccard %.3f", F.col("_near.o"),
                                F.col("_near.id"), F.col("_near.j"))  # fmt: skip
        out = mark_rejected(out, F.col("_links") == 1, "prior_dup", "near", named)
        # near two or more earlier kept documents, which were not near each other: a run over
        # everything at once would have joined their clusters; here both stay published
        out = mark_rejected(out, F.col("_links") > 1, "prior_dup", "near_links",
                            F.concat(named, F.format_string(
                                "; links %d earlier documents' clusters (none retracted)",
                                F.col("_links")))).drop("_near", "_links")  # fmt: skip
    return out


def prior_dedup(spark: SparkSession, docs: DataFrame, cfg: Config,
                rows: int | None = None) -> DataFrame:  # fmt: skip
    """The corpus half: every row given, those held by an earlier output marked. Only the
    index rows sharing a key with a given document are grouped, joined and compared.
    `rows`: at most this many documents are given (the documents pass counted them); with
    them up to `near_dedup.local_max_documents` and the indexes' rows up to
    `dedup.local_max_index_rows`, matched on the driver from one collect."""
    exact = "exact_key" in docs.columns
    near = "minhash" in docs.columns and cfg.near_dedup.enabled
    cap = cfg.near_dedup.local_max_documents
    held = index_rows(cfg) if rows is not None and rows <= cap else None
    if held is not None and held <= cfg.dedup.local_max_index_rows:
        # the matches ship with the tasks (no join): the columns in the joins' order
        order = list(docs.columns)
        if exact:
            order = ["exact_key", *(c for c in order if c != "exact_key")]
        if near:
            order = ["crawl_pos", *(c for c in order if c != "crawl_pos")]
        found = attach(docs, matches_on_driver(spark, docs, cfg), "crawl_pos")
        return _marked(found, cfg, exact, near).select(*order)
    index = read_indexes(spark, cfg)
    # the given documents' keys broadcast to the index scan when they are few (an append);
    # then their rows are made once, not again for each lookup and join below
    n = rows if rows is not None else docs.count()
    small = n * max(1, cfg.near_dedup.bands) <= cfg.dedup.broadcast_keys
    if small:
        docs = cut_lineage(docs)
    out = docs
    if "exact_key" in docs.columns:
        wanted = docs.select("exact_key").where(F.col("exact_key").isNotNull()).distinct()
        earliest = F.min(F.struct("_output", "crawl_pos", "doc_id")).alias("_prior")
        first = _semi(index, wanted, ["exact_key"], small).groupBy("exact_key").agg(earliest)
        out = _marked(out.join(first, "exact_key", "left"), cfg, True, False)
    if "minhash" in docs.columns and cfg.near_dedup.enabled:
        c = cfg.near_dedup
        n = c.bands * c.rows
        if small and "exact_key" in docs.columns:  # read three times below: made once
            out = cut_lineage(out)
        mine = out.where(F.col("reject_reason").isNull()).select(
            "crawl_pos", F.posexplode("bands").alias("band", "key")
        )
        # the earlier documents a given one is compared with, per bucket it falls in, as
        # near_dedup's bucket_edges bounds them: every member of a bucket of up to
        # `all_pairs` documents; in a larger one its first member and ~`anchors` members
        # drawn by hash (a page near the third member of a templated family, not the first,
        # is still found: a run over everything at once finds it so)
        theirs = index.where(F.col("bands").isNotNull()).select(
            F.struct("_output", "crawl_pos").alias("_rep"),
            F.posexplode("bands").alias("band", "key"))  # fmt: skip
        touched = _semi(theirs, mine.select("band", "key").distinct(), ["band", "key"], small)
        if small:  # read twice below: made once
            touched = cut_lineage(touched)
        stats = touched.groupBy("band", "key").agg(F.min("_rep").alias("_first"),
                                                   F.count("*").alias("_n"))  # fmt: skip
        anchor = is_anchor(F.col("_rep.crawl_pos"), F.col("_n"), c.anchors)
        compared = (F.col("_rep") == F.col("_first")) | (
            (F.col("_n") <= F.lit(c.all_pairs)) | anchor if c.verify and c.all_pairs > 0
            else F.lit(False))  # fmt: skip
        buckets = touched.join(stats, ["band", "key"]).where(compared).select("band", "key", "_rep")
        pairs = mine.join(buckets, ["band", "key"]).select("crawl_pos", "_rep").distinct()
        if small:  # read twice below: made once, not the index scan again
            pairs = cut_lineage(pairs)
        # the representatives' signatures only, not every indexed one
        reps = _semi(index.select(F.struct("_output", "crawl_pos").alias("_rep"), "doc_id",
                                  F.col("minhash").alias("_their")),
                     pairs.select("_rep").distinct(), ["_rep"], small)  # fmt: skip
        sigs = out.select("crawl_pos", F.col("minhash").alias("_mine"))
        best = (pairs.join(reps, "_rep").join(sigs, "crawl_pos")
                .select("crawl_pos", F.struct(_agreement("_mine", "_their", n).alias("j"),
                                              F.col("_rep._output").alias("o"),
                                              F.col("doc_id").alias("id")).alias("m"))
                .where(F.col("m.j") >= F.lit(cfg.near_dedup.threshold))
                .groupBy("crawl_pos")
                .agg(F.max("m").alias("_near"),
                     F.count_distinct("m.o", "m.id").alias("_links")))  # fmt: skip
        out = _marked(out.join(best, "crawl_pos", "left"), cfg, False, True)
    return out


def _enabled(cfg: Config) -> bool:
    return bool(cfg.dedup.against) and (cfg.exact_dedup.enabled or cfg.near_dedup.enabled)


STAGE = Stage("prior_dedup", ledger="prior_dup", corpus=prior_dedup, enabled=_enabled,
              sections=("dedup", "near_dedup"), corpus_inputs=earlier_versions,
              passed="not in an earlier output", sized=True)  # fmt: skip
