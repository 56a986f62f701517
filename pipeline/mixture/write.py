"""The end of the belt: mix sources by weight, write Parquet and token shards, and the budget.

Per source, epochs_i = w_i * D / N_i (N_i its curated tokens; "natural": 1 for all). Copies
are drawn with pipeline/mixture/sampling.py; the global shuffle orders rows by a hash of
(doc_id, shard seed, repeat), and a row's shard is floor(u * n_shards) of that same hash, so
shard contents and names depend on neither partitioning nor task order. Executors write the
shard files themselves (`DIR/shards/`, `DIR/tokens/`); the driver only sees per-shard counts.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.budget import budget_report
from pipeline.config import Config
from pipeline.dedup.components import cut_lineage
from pipeline.mixture.sampling import copies, uniform
from pipeline.schema import spark_schema
from pipeline.stages.arrow_batches import map_batches
from pipeline.stages.tokenize import get_tokenizer
from pipeline.tokens.shards import write_token_shard

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
    ]
)


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
    out: Path,
    totals: dict[str, tuple[int, int, int]] | None = None,
) -> dict:
    """Write DIR/shards/, DIR/tokens/ and DIR/budget.json from the kept, tokenised rows;
    `totals` = source_totals(kept), when the caller has counted them already."""
    if totals is None:
        totals = source_totals(kept)
    before = {s: (d, t) for s, (d, t, _) in totals.items()}
    ep = plan_epochs({s: t for s, (_, t) in before.items()}, cfg)
    mseed, sseed = cfg.mixture.seed, cfg.shards.seed
    rows = kept.select(
        F.col("doc_id").alias("id"), "text", "url", "source", "lang", "tokens", "n_tokens"
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
            for k in copies(r["id"], ep.get(r["source"], 0.0), mseed):
                outr.append({**r, "repeat": k, "order": uniform(r["id"], sseed, k)})
        return outr

    mixed = rows.mapInArrow(map_batches(draw, mixed_schema), spark_schema(mixed_schema))
    if all(e == int(e) for e in ep.values()):
        # whole epochs (natural mode: all 1): every document has exactly e copies
        after = {s: (d * int(ep[s]), t * int(ep[s]), b * int(ep[s]))
                 for s, (d, t, b) in totals.items()}  # fmt: skip
    else:
        mixed = cut_lineage(mixed)  # counted, then written: draw the copies once
        after = source_totals(mixed)
    total_rows = sum(d for d, _, _ in after.values())
    total_bytes = sum(b for _, _, b in after.values())
    sc = cfg.shards
    if sc.target_bytes:
        n_shards = max(1, math.ceil(total_bytes / sc.target_bytes))
    else:
        n_shards = max(1, math.ceil(total_rows / (sc.rows_per_shard or total_rows or 1)))
    tok = get_tokenizer(cfg.tokenizer.name, cfg.tokenizer.eot_token)  # loaded once a process
    eot, dtype = tok.eot, tok.dtype
    shard_dir, token_dir = out / "shards", out / "tokens"
    for d in (shard_dir, token_dir):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    compression = cfg.output.compression

    def write(batch_rows: list[dict]) -> list[dict]:
        by_shard: dict[int, list[dict]] = {}
        for r in batch_rows:
            by_shard.setdefault(r["shard"], []).append(r)
        summary = []
        for shard, rs in sorted(by_shard.items()):
            rs.sort(key=lambda r: (r["order"], r["id"], r["repeat"]))
            name = f"shard-{shard:05d}"
            table = pa.Table.from_pylist(
                [{c: r[c] for c in SHARD_COLUMNS} for r in rs]
            )  # fmt: skip
            tmp = shard_dir / f"{name}.parquet.part"
            pq.write_table(table, tmp, compression=compression)
            tmp.replace(shard_dir / f"{name}.parquet")
            n_tok = write_token_shard(token_dir / name, [r["tokens"] for r in rs], eot, dtype)
            summary.append({"shard": shard, "docs": len(rs), "tokens": n_tok,
                            "text_bytes": sum(len(r["text"].encode()) for r in rs)})  # fmt: skip
        return summary

    # one task per shard group; all rows of a shard reach one task, whole
    sharded = mixed.withColumn("shard", F.floor(F.col("order") * n_shards).cast("int"))
    grouped = sharded.repartition(n_shards, "shard")
    write_all = _whole_partition(write)
    shards = sorted(
        (r.asDict() for r in grouped.mapInArrow(write_all, spark_schema(SUMMARY)).collect()),
        key=lambda r: r["shard"],
    )
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
                "docs_after": after.get(s, (0, 0, 0))[0],
                "tokens_after": after.get(s, (0, 0, 0))[1],
                "realised_epochs": after.get(s, (0, 0, 0))[1] / before[s][1]
                if before[s][1]
                else 0.0,
            }
            for s in sorted(before)
        },
        "total_tokens": total_tokens,
        "shards": len(shards),
        "compute": budget_report(
            total_tokens, cfg.budget.flops_per_gpu, cfg.budget.model_params, cfg.budget.gpus
        ),
    }
    (out / "budget.json").write_text(json.dumps(budget, indent=2) + "\n")
    return budget


def _whole_partition(fn):
    """A mapInArrow function calling `fn` once on all rows of the partition."""

    def run(batches):
        rows = [r for b in batches for r in b.to_pylist()]
        if rows:
            yield pa.RecordBatch.from_pylist(fn(rows), schema=SUMMARY)

    return run
