"""The end of the belt: mix sources by weight, write Parquet and token shards, and the budget.

Per source, epochs_i = w_i * D / N_i (N_i its curated tokens; "natural": 1 for all). Copies
are drawn with curate_pipeline/outputs/mixture/sampling.py; the global shuffle orders rows by a
hash of
(doc_id, shard seed, repeat), and a row's shard is floor(u * n_shards) of that same hash, so
shard contents and names depend on neither partitioning nor task order.

Each shard is one partition (`repartition_by_id`), sorted by Spark (which spills), and its
task streams it to its Parquet and token files a bounded buffer at a time: no task holds a
shard, let alone several. Files are written through the output's filesystem (a local disk or
an object store) under `_attempts/` with the task attempt in their names; the driver moves
into place only those of the attempts Spark reported as successful (a rename on a disk, a
server-side copy on a store, MOVERS at a time; S3's managed copy takes objects over 5 GiB),
so a speculative or lost attempt never puts a partial shard in place.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from curate_pipeline.config import Config
from curate_pipeline.engine.compat import repartition_by_id
from curate_pipeline.location import Location
from curate_pipeline.outputs.budget import budget_report
from curate_pipeline.outputs.mixture.quality_groups import NO_GROUP, GroupWeights
from curate_pipeline.outputs.mixture.rehydration import Rehydration
from curate_pipeline.outputs.mixture.sampling import copies, uniform
from curate_pipeline.outputs.tokens.megatron import dtype_code as megatron_dtype_code
from curate_pipeline.outputs.tokens.megatron import write_merged as write_megatron_merged
from curate_pipeline.outputs.tokens.megatron import write_shard as write_megatron_shard
from curate_pipeline.stages.arrow_batches import map_batches
from curate_pipeline.stages.schema import spark_schema
from curate_pipeline.stages.tokenize import driver_tokenizer

log = logging.getLogger(__name__)


class MixtureError(ValueError):
    """A mixture the config refuses (e.g. a source repeated past mixture.max_epochs)."""


SHARD_COLUMNS = ["id", "text", "url", "source", "lang", "repeat", "n_tokens"]
SUMMARY = pa.schema(
    [
        pa.field("shard", pa.int32()),
        pa.field("docs", pa.int64()),
        pa.field("tokens", pa.int64()),
        pa.field("text_bytes", pa.int64()),
        pa.field("attempt", pa.int64()),
    ]
)
ATTEMPTS = "_attempts"
# Shard files moved into place at once by the driver: I/O-bound requests, not CPU.
MOVERS = 32
# A Parquet row group is written once this many rows or text bytes are buffered.
GROUP_ROWS = 20000
GROUP_BYTES = 64 << 20


def plan_epochs(available: dict[str, int], cfg: Config) -> dict[str, float]:
    m = cfg.mixture
    if m.target_tokens is None:
        return {s: 1.0 for s in available}
    unknown = set(m.weights) - set(available)
    if unknown:
        log.warning("mixture weights name sources with no documents: %s", sorted(unknown))
    total_w = sum(m.weights.values())
    if not math.isclose(total_w, 1.0, rel_tol=1e-6):
        raise MixtureError(f"mixture.weights sum to {total_w:g}, not 1")
    out = {}
    for s, n in available.items():
        w = m.weights.get(s, 0.0)
        out[s] = w * m.target_tokens / n if n else 0.0
    over = {s: round(e, 2) for s, e in out.items() if e > m.max_epochs}
    if over:
        msg = (
            f"sources repeated more than mixture.max_epochs={m.max_epochs:g}: {over}; many "
            "passes over a small source teach the model to memorise it"
        )
        if m.refuse_above_max:
            raise MixtureError(msg + " (set mixture.refuse_above_max: false to allow)")
        log.warning(msg)
    return out


def source_totals(kept: DataFrame) -> dict[str, tuple[int, int, int]]:
    """source -> (docs, tokens, text bytes) of the kept rows."""
    return {
        r["source"]: (int(r["docs"]), int(r["tokens"] or 0), int(r["bytes"] or 0))
        for r in kept.groupBy("source")
        .agg(F.count("*").alias("docs"), F.sum("n_tokens").alias("tokens"),
             F.sum(F.octet_length("text")).alias("bytes"))
        .collect()
    }  # fmt: skip


def write_mixture(
    spark: SparkSession,
    kept: DataFrame,
    cfg: Config,
    out: Location | str | Path,
    totals: dict[str, tuple[int, int, int]] | None = None,
    guard: Callable[[], None] | None = None,
) -> dict:
    """Write DIR/shards/, DIR/tokens/ and DIR/budget.json from the kept, tokenised rows;
    `totals` = source_totals(kept), when the caller has counted them already. `guard()`
    (the run's lock) runs before each thing the driver deletes, moves or writes."""
    guard = guard or (lambda: None)
    out = Location.of(out)
    if totals is None:
        totals = source_totals(kept)
    before = {s: (d, t) for s, (d, t, _) in totals.items()}
    reh = load_rehydration(cfg, kept)
    gw = load_groups(cfg, kept)
    factor = _factor(reh, gw)  # a document's copies before the draw (None: 1 each)
    extra = _factor_columns(reh, gw)
    weighted = _weighted_totals(kept, factor, extra) if factor is not None else None
    # the tokens each source's epochs are planned on: rehydrated and weighted by quality
    # group, when those are on
    basis = {s: t for s, (_, t, _) in totals.items()} if weighted is None else _by_source(
        weighted)  # fmt: skip
    ep = plan_epochs(basis, cfg)
    mseed, sseed = cfg.mixture.seed, cfg.shards.seed
    rows = kept.select(
        F.col("doc_id").alias("id"), "text", "url", "source", "lang", "tokens", "n_tokens", *extra
    )
    mixed_schema = pa.schema(
        [pa.field(n, t) for n, t in (("id", pa.string()), ("text", pa.string()),
                                      ("url", pa.string()), ("source", pa.string()),
                                      ("lang", pa.string()))]
        + [pa.field("tokens", pa.list_(pa.int32())), pa.field("n_tokens", pa.int64()),
           pa.field("repeat", pa.int32()), pa.field("order", pa.float64())]
    )  # fmt: skip

    def draw(batch: list[dict]) -> list[dict]:
        outr = []
        for r in batch:
            epochs = ep.get(r["source"], 0.0)
            if factor is not None:  # rehydrated, weighted: the document counts that often
                epochs *= factor(r)
            for k in copies(r["id"], epochs, mseed):
                outr.append({**r, "repeat": k, "order": uniform(r["id"], sseed, k)})
        return outr

    mixed = rows.mapInArrow(map_batches(draw, mixed_schema), spark_schema(mixed_schema))
    if factor is None and all(e == int(e) for e in ep.values()):
        # whole epochs (natural mode: all 1): every document has exactly e copies
        after = {s: (d * int(ep[s]), t * int(ep[s]), b * int(ep[s]))
                 for s, (d, t, b) in totals.items()}  # fmt: skip
    else:
        after = _drawn_totals(kept, ep, mseed, factor, extra)  # narrow: no text, no tokens
    total_rows = sum(d for d, _, _ in after.values())
    total_bytes = sum(b for _, _, b in after.values())
    sc = cfg.shards
    if sc.target_bytes:
        n_shards = max(1, math.ceil(total_bytes / sc.target_bytes))
    else:
        n_shards = max(1, math.ceil(total_rows / (sc.rows_per_shard or total_rows or 1)))
    tok = driver_tokenizer(cfg)  # loaded once a process
    eot, dtype = tok.eot, tok.dtype
    shard_dir, token_dir = out / "shards", out / "tokens"
    guard()
    (out / "budget.json").delete()  # written last: the shards' commit
    for d in (shard_dir, token_dir):
        d.delete()
        (d / ATTEMPTS).mkdir()
    write = _shard_writer(shard_dir, token_dir, eot, dtype, cfg.output.compression)

    # one partition per shard, sorted by Spark; each task streams its shard to its files
    shard = F.floor(F.col("order") * n_shards).cast("int")
    sharded = (
        repartition_by_id(mixed.withColumn("shard", shard), n_shards, "shard")
        .sortWithinPartitions("order", "id", "repeat")
        .select("shard", *SHARD_COLUMNS, "tokens")
    )
    shards = sorted(
        (r.asDict() for r in sharded.mapInArrow(write, spark_schema(SUMMARY)).collect()),
        key=lambda r: r["shard"],
    )
    guard()
    # commit: the attempts Spark counted, moved into place side by side (a rename on a disk,
    # a server-side copy on a store: ~7,000 of them for a snapshot's 2,400 shards)
    moves = [
        (
            d / ATTEMPTS / f"shard-{r['shard']:05d}.a{r['attempt']}{ext}",
            d / f"shard-{r['shard']:05d}{ext}",
        )
        for r in shards
        for d, ext in ((shard_dir, ".parquet"), (token_dir, ".bin"), (token_dir, ".idx"))
    ]
    with ThreadPoolExecutor(MOVERS) as pool:
        list(pool.map(lambda m: m[0].move(m[1]), moves))  # fmt: skip
    for d in (shard_dir, token_dir):
        (d / ATTEMPTS).delete()
    index = {
        "tokenizer": cfg.tokenizer.name,
        "dtype": dtype.str,
        "eot_token": eot,
        "format": "shard-NNNNN.bin: token ids, each document followed by eot_token; "
        "shard-NNNNN.idx: int64 document start offsets plus the end",
        "shards": [
            {"name": f"shard-{r['shard']:05d}", "docs": r["docs"], "tokens": r["tokens"]}
            for r in shards
        ],  # fmt: skip
    }
    if cfg.tokens.format == "megatron":  # Megatron-LM's indexed dataset beside ours
        stems = [token_dir / sh["name"] for sh in index["shards"]]
        for stem in stems:
            write_megatron_shard(stem, token_dir / "megatron" / stem.name, dtype)
        index["megatron"] = {
            "dir": "megatron",
            "dtype_code": megatron_dtype_code(dtype),
            "merged": "merged" if cfg.tokens.merged else None,
            # each shard's Megatron files, relative to tokens/ (an appended version lists
            # the earlier versions' too: run/increment.py)
            "prefixes": [f"megatron/{sh['name']}" for sh in index["shards"]],
        }
        if cfg.tokens.merged:
            write_megatron_merged(stems, token_dir / "megatron" / "merged", dtype)
    guard()
    (token_dir / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    weights = cfg.mixture.weights
    total_tokens = sum(t for _, t, _ in after.values())
    budget = {
        "target_tokens": cfg.mixture.target_tokens,
        "mode": "natural" if cfg.mixture.target_tokens is None else "weighted",
        "sources": {
            s: {
                "weight": weights.get(s) if cfg.mixture.target_tokens else None,
                "epochs": ep[s],
                "docs_before": before[s][0],
                "tokens_before": before[s][1],
                "tokens_rehydrated": basis.get(s, 0) if weighted is not None else None,
                "docs_after": after.get(s, (0, 0, 0))[0],
                "tokens_after": after.get(s, (0, 0, 0))[1],
                "realised_epochs": after.get(s, (0, 0, 0))[1] / before[s][1]
                if before[s][1]
                else 0.0,
            }
            for s in sorted(before)
        },
        "total_tokens": total_tokens,
        "rehydration": _rehydration_report(cfg, weighted) if reh is not None else None,
        "quality_groups": _groups_report(cfg, weighted) if gw is not None else None,
        "shards": len(shards),
        "compute": budget_report(
            total_tokens, cfg.budget.flops_per_gpu, cfg.budget.model_params, cfg.budget.gpus
        ),
    }
    guard()
    (out / "budget.json").write_text(json.dumps(budget, indent=2) + "\n")
    return budget


def load_rehydration(cfg: Config, kept: DataFrame) -> Rehydration | None:
    """mixture.rehydration's table (read on the driver), or None when off."""
    path = cfg.mixture.rehydration
    if not path:
        return None
    missing = [c for c in ("lang_key", "dup_cluster_size") if c not in kept.columns]
    if missing:
        raise MixtureError(
            f"mixture.rehydration needs each document's {' and '.join(missing)}: turn on "
            "near_dedup (cluster sizes) and recipes.configs (language keys), or set "
            "mixture.rehydration: null"
        )
    return Rehydration.load(path)


def load_groups(cfg: Config, kept: DataFrame) -> GroupWeights | None:
    """mixture.quality_groups' weights by ensemble bucket, or None when there are none."""
    groups = cfg.mixture.quality_groups
    if not groups:
        return None
    if "quality_bucket" not in kept.columns:
        raise MixtureError(
            "mixture.quality_groups weighs documents by their quality bucket: turn on quality "
            "with quality.ensemble.enabled: true (conf/nemotron-cc.yaml), or set "
            "mixture.quality_groups: {}"
        )
    return GroupWeights(groups, cfg.quality.ensemble.buckets)


def _factor_columns(reh: Rehydration | None, gw: GroupWeights | None) -> list[str]:
    return (["lang_key", "dup_cluster_size"] if reh is not None else []) + (
        ["quality_bucket"] if gw is not None else [])  # fmt: skip


def _factor(reh: Rehydration | None, gw: GroupWeights | None):
    """A row's count before the draw: its rehydration repeats times its quality group's
    weight; None when neither is on."""
    if reh is None and gw is None:
        return None

    def factor(r: dict) -> float:
        n = float(reh.repeats(r["lang_key"], r["dup_cluster_size"])) if reh is not None else 1.0
        return n * gw.weight(r["quality_bucket"]) if gw is not None else n

    return factor


def _weighted_totals(
    kept: DataFrame, factor, extra: list[str]
) -> dict[tuple[str, str | None, int | None], tuple[int, int, float, float]]:
    """(source, language key, quality bucket) -> (docs, tokens, and both counted `factor`
    times), from narrow columns; one row per source, language and bucket reaches the driver."""
    cols = ["source", "n_tokens", *extra]
    narrow = kept.select(*cols)
    schema = pa.schema([pa.field("source", pa.string()), pa.field("lang_key", pa.string()),
                        pa.field("bucket", pa.int32()), pa.field("n", pa.float64()),
                        pa.field("n_tokens", pa.int64())])  # fmt: skip

    def count(batch: list[dict]) -> list[dict]:
        return [{"source": r["source"], "lang_key": r.get("lang_key"),
                 "bucket": r.get("quality_bucket"), "n": factor(r),
                 "n_tokens": r["n_tokens"] or 0} for r in batch]  # fmt: skip

    rows = narrow.mapInArrow(map_batches(count, schema), spark_schema(schema))
    return {
        (r["source"], r["lang_key"], r["bucket"]): (int(r["docs"]), int(r["tokens"]),
                                                    float(r["docs_w"]), float(r["tokens_w"]))
        for r in rows.groupBy("source", "lang_key", "bucket")
        .agg(F.count("*").alias("docs"), F.sum("n_tokens").alias("tokens"),
             F.sum("n").alias("docs_w"), F.sum(F.col("n") * F.col("n_tokens")).alias("tokens_w"))
        .collect()
    }  # fmt: skip


def _by_source(weighted: dict) -> dict[str, int]:
    """source -> tokens, as rehydration and the quality groups count them."""
    out: dict[str, float] = {}
    for (source, _, _), (_, _, _, t_w) in weighted.items():
        out[source] = out.get(source, 0.0) + t_w
    return {s: round(t) for s, t in out.items()}


def _report(weighted: dict, key) -> dict[str, dict]:
    sums: dict[str, list[float]] = {}
    for k, v in weighted.items():
        a = sums.setdefault(key(k), [0, 0, 0.0, 0.0])
        for i, x in enumerate(v):
            a[i] += x
    return {k: {"docs_before": a[0], "tokens_before": a[1], "docs_after": round(a[2]),
                "tokens_after": round(a[3])} for k, a in sorted(sums.items())}  # fmt: skip


def _totals(parts: dict[str, dict]) -> dict:
    return {k: sum(p[k] for p in parts.values())
            for k in ("docs_before", "tokens_before", "docs_after", "tokens_after")}  # fmt: skip


def _rehydration_report(cfg: Config, weighted: dict) -> dict:
    """What rehydration (and the quality groups, when on) did, per language key: documents
    and tokens before and after."""
    langs = _report(weighted, lambda k: k[1] or "(no recipe)")
    return {"table": cfg.mixture.rehydration, **_totals(langs), "languages": langs}


def _groups_report(cfg: Config, weighted: dict) -> dict:
    """Documents and tokens per quality group, before and after its weight (and rehydration,
    when on)."""
    gw = GroupWeights(cfg.mixture.quality_groups, cfg.quality.ensemble.buckets)
    groups = _report(weighted, lambda k: gw.group(k[2]))
    for name, g in groups.items():
        g["weight"] = cfg.mixture.quality_groups[name].weight if name != NO_GROUP else 1.0
    return {**_totals(groups), "groups": groups}


def _drawn_totals(
    kept: DataFrame, ep: dict[str, float], seed: int, factor=None, extra: list[str] = ()
) -> dict[str, tuple[int, int, int]]:
    """source -> (docs, tokens, text bytes) after the draw, from narrow columns: the copies
    of each document are drawn again where the shards are written (the same hash)."""
    narrow = kept.select(F.col("doc_id").alias("id"), "source", "n_tokens",
                         F.octet_length("text").alias("bytes"), *extra)  # fmt: skip
    schema = pa.schema([pa.field("source", pa.string()), pa.field("n", pa.int64()),
                        pa.field("n_tokens", pa.int64()),
                        pa.field("bytes", pa.int64())])  # fmt: skip

    def count(batch: list[dict]) -> list[dict]:
        out = []
        for r in batch:
            epochs = ep.get(r["source"], 0.0)
            if factor is not None:
                epochs *= factor(r)
            n = len(copies(r["id"], epochs, seed))
            out.append({"source": r["source"], "n": n, "n_tokens": (r["n_tokens"] or 0) * n,
                        "bytes": (r["bytes"] or 0) * n})  # fmt: skip
        return out

    drawn = narrow.mapInArrow(map_batches(count, schema), spark_schema(schema))
    return {
        r["source"]: (int(r["docs"] or 0), int(r["tokens"] or 0), int(r["bytes"] or 0))
        for r in drawn.groupBy("source")
        .agg(F.sum("n").alias("docs"), F.sum("n_tokens").alias("tokens"),
             F.sum("bytes").alias("bytes"))
        .collect()
    }  # fmt: skip


def _shard_writer(shard_dir: Location, token_dir: Location, eot: int, dtype: np.dtype,
                  compression: str):  # fmt: skip
    """The mapInArrow function writing one shard's partition, streamed: Parquet row groups
    of at most GROUP_ROWS rows / GROUP_BYTES of text, token ids appended as they come."""
    parquet_schema = pa.schema([
        pa.field("id", pa.string()), pa.field("text", pa.string()), pa.field("url", pa.string()),
        pa.field("source", pa.string()), pa.field("lang", pa.string()),
        pa.field("repeat", pa.int32()), pa.field("n_tokens", pa.int64()),
    ])  # fmt: skip

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        attempt = TaskContext.get().taskAttemptId()
        shard: int | None = None
        writer = pq_f = bin_f = idx_f = None
        buffered: list[pa.RecordBatch] = []
        rows = buffered_bytes = docs = tokens = text_bytes = 0

        def flush() -> None:
            nonlocal rows, buffered_bytes
            if buffered:
                writer.write_table(pa.Table.from_batches(buffered))  # type: ignore[union-attr]
            buffered.clear()
            rows = buffered_bytes = 0

        try:
            for batch in batches:
                if not batch.num_rows:
                    continue
                ids = pc.unique(batch.column("shard")).to_pylist()
                if shard is None:
                    shard = ids[0]
                    name = f"shard-{shard:05d}.a{attempt}"
                    pq_f = (shard_dir / ATTEMPTS / f"{name}.parquet").open_output()
                    writer = pq.ParquetWriter(pq_f, parquet_schema, compression=compression)
                    bin_f = (token_dir / ATTEMPTS / f"{name}.bin").open_output()
                    idx_f = (token_dir / ATTEMPTS / f"{name}.idx").open_output()
                if ids != [shard]:  # repartition_by_id puts exactly one shard in a partition
                    raise RuntimeError(f"shard task holds shards {sorted({shard, *ids})}")
                table = batch.select(parquet_schema.names).cast(parquet_schema)
                size = pc.sum(pc.binary_length(batch.column("text"))).as_py() or 0
                buffered.append(table)
                rows += batch.num_rows
                buffered_bytes += size
                if rows >= GROUP_ROWS or buffered_bytes >= GROUP_BYTES:
                    flush()
                # tokens: each document's ids then EOT; idx: each document's start offset
                col = batch.column("tokens")
                lengths = np.diff(col.offsets.to_numpy()).astype(np.int64)
                flat = col.flatten().to_numpy(zero_copy_only=False).astype(dtype)
                ends = np.cumsum(lengths)
                bin_f.write(np.insert(flat, ends, eot).astype(dtype).tobytes())
                starts = tokens + np.concatenate(([0], ends[:-1])) + np.arange(len(lengths))
                idx_f.write(starts.astype("<i8").tobytes())
                tokens += int(lengths.sum()) + len(lengths)
                docs += batch.num_rows
                text_bytes += size
            if shard is None:
                return  # an empty partition: no shard
            flush()
            idx_f.write(np.array([tokens], dtype="<i8").tobytes())
        finally:
            for f in (writer, pq_f, bin_f, idx_f):
                if f is not None:
                    f.close()
        yield pa.RecordBatch.from_pylist(
            [{"shard": shard, "docs": docs, "tokens": tokens, "text_bytes": text_bytes,
              "attempt": attempt}], schema=SUMMARY,
        )  # fmt: skip

    return run
