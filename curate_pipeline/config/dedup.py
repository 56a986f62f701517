"""Deduplication: exact, near (MinHash-LSH), and against earlier outputs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from curate_pipeline.config.base import _Section


class ExactDedupConf(_Section):
    # Keep the first (smallest crawl_pos) of each SHA-1 of lowercased, space-collapsed text.
    enabled: bool = True
    # Up to this many documents (the documents pass's rows), the groups are counted on the
    # driver from one collect of (key, position, id), ~150 bytes a document: two jobs where
    # the aggregation and its join took three. 0 = always on the cluster.
    local_max_documents: int = Field(200_000, ge=0)


class DedupConf(_Section):
    # Earlier outputs (paths or URIs) whose current version's documents this run's must not
    # repeat: a document with the exact key of one of theirs, or a near duplicate of one
    # (same LSH bucket, signatures agreeing on near_dedup.threshold), is dropped as
    # `prior_dup:exact` / `prior_dup:near` naming it. Each output keeps its own dedup by
    # default (FineWeb deduplicates per dump; Dolma, RedPajama across): [] = off.
    against: list[str] = Field(default_factory=list)
    # Write the dedup index with each version (versions/N/index/: kept documents' exact
    # keys, MinHash signatures and band keys), what a later run's `against` reads.
    index: bool = True
    # Keys of this run's documents (exact keys, and band keys: 14 a document) up to which they
    # are broadcast to the scan of the earlier outputs' indexes (~30 bytes each in the hash
    # relation: 2M ~ 60 MB per executor), so the index is filtered where it lies and never
    # shuffled; above it both sides are shuffled by key. Spark's own autoBroadcastJoinThreshold
    # (10 MB) cannot see the size of derived rows. An append of 1% to 10M documents: 1.4M.
    broadcast_keys: int = Field(2_000_000, ge=0)
    # An append matches its new documents against the indexes on the driver (one collect)
    # when they are within near_dedup.local_max_documents and the indexes' rows (their commits
    # list them) within this: ~0.6 KB a row collected, ~1.2 KB at the solve's peak.
    local_max_index_rows: int = Field(100_000, ge=0)


class NearDedupConf(_Section):
    enabled: bool = True
    shingle_size: int = Field(5, ge=1)  # word 5-grams: datatrove / FineWeb
    # bands x rows hash functions: 14 x 8 = 112 as datatrove / FineWeb (candidate curve
    # 1 - (1 - s^8)^14, steepest near (1/14)^(1/8) = 0.72); the primer uses 20 x 5.
    bands: int = Field(14, ge=1)
    rows: int = Field(8, ge=1)
    seed: int = 1  # datasketch's default seed
    # Keep a candidate edge only where the signatures agree on at least this share of hash
    # functions (estimated Jaccard): the primer's final check. 0.8 = NeMo Curator's default.
    verify: bool = True
    threshold: float = Field(0.8, ge=0, le=1)
    # Which pairs of a bucket are verified, after each member against the bucket's first:
    # a member that failed it against every other member of a bucket of up to `all_pairs`
    # documents; in a larger one (a template shared by thousands of pages), against about
    # `anchors` members drawn by hash (and a failed anchor against every member), so work
    # stays ~2 x anchors x n pairs (NeMo Curator checks against 2 anchors). 0: the first
    # member only (this pipeline before issue 35).
    all_pairs: int = Field(50, ge=0)
    anchors: int = Field(8, ge=1)
    # Connected-components rounds (large-star + small-star) before giving up.
    max_iterations: int = Field(64, ge=1)
    # Up to this many candidate edges, components are solved on the driver (scipy), as
    # datatrove does in one process; more, distributed rounds. 0 = always distributed.
    local_max_edges: int = Field(2_000_000, ge=0)
    # Up to this many documents (the documents pass's rows), the whole corpus half (buckets,
    # verification, components) is solved on the driver from one collect of the signatures
    # (0.6 KB a document; the solve peaked at 5.7 KB a document, 591 MB for 103,514 documents
    # 42% of them in clusters, in 6 s: tests/test_near_clusters.py's corpus): one Spark job
    # instead of ~15. 0 = always on the cluster.
    local_max_documents: int = Field(50_000, ge=0)
    # Duplicates only within a language (FineWeb-2 deduplicates each language apart): the
    # band keys take the document's recipe key (else its LID label), so two documents of
    # different languages never share a bucket.
    per_language: bool = False
    # Shingle words: `whitespace` (of the simplified text) or `per_language` (datatrove's
    # splitter for the document's language, rules.word_splitters: FineWeb-2's MinHash; a
    # Chinese or Thai text has no spaces to split on).
    word_splitter: Literal["whitespace", "per_language"] = "whitespace"
