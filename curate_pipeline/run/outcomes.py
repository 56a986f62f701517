"""What a run did, counted in one Spark aggregation: rows dropped per stage and reason, rows
kept (and their tokens and bytes per source, which the mixture plans with), rule failures,
languages, and the distributions the report plots (quality scores in fixed-width bins,
duplicate cluster sizes). One job instead of one per figure: on a small crawl each job costs
more than the counting; on a snapshot only these aggregates, never rows, reach the driver."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from curate_pipeline.engine.compat import to_arrow
from curate_pipeline.outputs import report_examples


class ReconcileError(RuntimeError):
    """Counts that do not add up: some record was neither kept nor rejected."""


# Read-stage reasons that mean a file, or a stretch of it, or one record's framing is broken.
DAMAGE_REASONS = ("unreadable_file", "corrupt_file", "corrupt_record")
_SEP = "\x00"
# Quality scores are counted in bins of this width (log-odds); the report regroups them.
SCORE_BIN = 0.25
# Language-ID probabilities, in bins of this width.
LANG_BIN = 0.05


@dataclass
class Outcomes:
    counts: dict  # {"read", "kept", "rejected": {"stage:reason": n}}
    rule_failures: dict[str, int]  # documents breaking each rule (one can break several)
    languages: dict[str, dict[str, int]]  # label -> documents identified, kept by langid
    sources: dict[str, tuple[int, int, int]]  # kept: source -> (docs, tokens, text bytes)
    # read damage: reason -> file -> (rows, file bytes skipped where measured, why: the
    # detail of an unreadable file, else "")
    damage: dict[str, dict[str, tuple[int, int, str]]]
    # the report's distributions: "quality_score_bins" {bin index: documents scored} (a bin
    # holds scores in [i * SCORE_BIN, (i + 1) * SCORE_BIN)), "lang_score_bins" (the same with
    # LANG_BIN, language-ID probabilities), "exact_group_sizes" and
    # "near_cluster_sizes" {size: kept documents}
    distributions: dict[str, dict[int, int]]
    pii: dict[str, int]  # replacements in kept documents: emails, ips, documents touched
    # per evaluation set: documents matched (first match's set), dropped, trimmed; chars cut
    decontamination: dict[str, dict[str, int]]
    # the report's examples (outputs/report_examples.py): {"rejected": {stage:reason: [...]},
    # "kept": {source: [...]}}; the text of rows a corpus stage dropped is still to be filled
    # in (report_examples.fill_texts)
    examples: dict[str, dict[str, list[dict]]] = field(default_factory=dict)


def _facts(df: DataFrame, kind: str, key: Column, flag: Column | None = None,
           tokens: Column | None = None, size: Column | None = None,
           example: Column | None = None) -> DataFrame:  # fmt: skip
    zero = F.lit(0).cast("long")
    return df.select(
        (example if example is not None else report_examples.none()).alias("example"),
        F.lit(kind).alias("kind"),
        key.cast("string").alias("key"),
        (flag.cast("long") if flag is not None else zero).alias("flag"),
        (tokens.cast("long") if tokens is not None else zero).alias("tokens"),
        (size.cast("long") if size is not None else zero).alias("bytes"),
    )


# Up to this many records the facts (a few narrow rows a record, an example's 300 characters
# for each kept or dropped one: ~0.5 KB a record, 50 MB at the cap) are aggregated on the
# driver from one collect: the aggregation's shuffle costs a job more than the counting.
LOCAL_MAX_ROWS = 100_000


def aggregate_on_driver(facts: DataFrame, k: int = report_examples.K) -> list[dict]:
    """The aggregation's rows (kind, key, n, flag, tokens, bytes, p0..p{k-1}) computed on the
    driver: counts and sums per (kind, key), and per seed the example with the smallest hash
    of its id (the hashes computed by Spark, as in the aggregation)."""
    ex = F.col("example")
    hashes = [F.when(ex.isNotNull(), F.xxhash64(F.lit(seed), ex["doc_id"])).alias(f"h{seed}")
              for seed in range(k)]  # fmt: skip
    table = to_arrow(facts.select("kind", "key", "flag", "tokens", "bytes", "example", *hashes))
    sums = table.group_by(["kind", "key"]).aggregate(
        [("flag", "count", pc.CountOptions(mode="all")), ("flag", "sum"), ("tokens", "sum"),
         ("bytes", "sum")])  # fmt: skip
    out = {(r["kind"], r["key"]): {"kind": r["kind"], "key": r["key"], "n": r["flag_count"],
                                   "flag": r["flag_sum"], "tokens": r["tokens_sum"],
                                   "bytes": r["bytes_sum"], **{f"p{s}": None for s in range(k)}}
           for r in sums.to_pylist()}  # fmt: skip
    shown = table.filter(pc.is_valid(table.column("example")))
    groups = list(zip(shown.column("kind").to_pylist(), shown.column("key").to_pylist(),
                      strict=True))  # fmt: skip
    examples = shown.column("example").to_pylist()
    for seed in range(k):
        best: dict[tuple, int] = {}
        h = shown.column(f"h{seed}").to_pylist()
        for i, g in enumerate(groups):
            if g not in best or h[i] < h[best[g]]:
                best[g] = i
        for g, i in best.items():
            out[g][f"p{seed}"] = {"h": h[i], "e": examples[i]}
    return list(out.values())


def count_outcomes(read_rows: int, frames: list[DataFrame], docs: DataFrame) -> Outcomes:
    """`frames`: the documents pass then each corpus stage's output, in order (a row dropped
    by one stage is not in the next); `docs`: the documents pass, for rules and languages.
    Checked to reconcile: every row read is kept by the last stage or dropped by one."""
    kept = frames[-1].where(F.col("reject_reason").isNull())
    parts = [
        _facts(f.where(F.col("reject_reason").isNotNull()), "reject",
               F.concat_ws(":", "reject_stage", "reject_reason"),
               example=report_examples.example(f))
        for f in frames
    ]  # fmt: skip
    parts.append(
        _facts(kept, "kept", F.col("source") if "source" in kept.columns else F.lit(""),
               tokens=F.col("n_tokens") if "n_tokens" in kept.columns else None,
               size=F.octet_length("text"), example=report_examples.example(kept))
    )  # fmt: skip
    broken = (F.col("reject_stage") == "read") & F.col("reject_reason").isin(*DAMAGE_REASONS)
    parts.append(
        _facts(docs.where(broken), "damage",
               F.concat_ws(_SEP, "reject_reason", "warc_file", F.when(
                   F.col("reject_reason") == "unreadable_file",
                   F.substring("reject_detail", 1, 200)).otherwise(F.lit(""))),
               size=F.coalesce(F.col("skipped_bytes"), F.lit(0)))
    )  # fmt: skip
    for column in ("pii_emails", "pii_ips"):
        if column in kept.columns:
            parts.append(_facts(kept, "pii", F.lit(column[4:]), flag=F.col(column) > 0,
                                tokens=F.coalesce(F.col(column), F.lit(0))))  # fmt: skip
    if "decont_set" in docs.columns:
        matched = docs.where(F.col("decont_set").isNotNull())
        dropped = F.coalesce(F.col("reject_stage") == "decont", F.lit(False))
        cut = F.coalesce(F.col("decont_removed_chars"), F.lit(0))
        parts.append(_facts(matched, "decont", F.col("decont_set"), flag=dropped, tokens=cut))
    if "quality_score" in docs.columns:
        scored = docs.where(F.col("quality_score").isNotNull())
        parts.append(_facts(scored, "quality_score_bins",
                            F.floor(F.col("quality_score") / F.lit(SCORE_BIN))))  # fmt: skip
    for column, kind in (("exact_copies", "exact_group_sizes"),
                         ("dup_cluster_size", "near_cluster_sizes")):  # fmt: skip
        # the stage that adds the column: its kept rows, one per group or cluster
        first = next((f for f in frames[1:] if column in f.columns), None)
        if first is not None:
            kept_there = first.where(F.col("reject_reason").isNull() & F.col(column).isNotNull())
            parts.append(_facts(kept_there, kind, F.col(column)))
    if "failed_rules" in docs.columns:
        parts.append(_facts(docs.select(F.explode("failed_rules").alias("r")), "rule", F.col("r")))
    if "lang_score" in docs.columns:
        scored = docs.where(F.col("lang_score").isNotNull())
        # a probability of exactly 1 goes in the last bin, not one of its own
        b = F.least(F.floor(F.col("lang_score") / F.lit(LANG_BIN)), F.lit(round(1 / LANG_BIN) - 1))
        parts.append(_facts(scored, "lang_score_bins", b))
    if "lang" in docs.columns:
        kept_by_langid = F.col("reject_stage").isNull() | (F.col("reject_stage") != "lang")
        parts.append(
            _facts(docs.where(F.col("lang").isNotNull()), "lang", F.col("lang"), kept_by_langid)
        )
    facts = reduce(DataFrame.unionByName, parts)
    if read_rows <= LOCAL_MAX_ROWS:
        agg = aggregate_on_driver(facts)
    else:
        agg = (
            facts.groupBy("kind", "key")
            .agg(F.count("*").alias("n"), F.sum("flag").alias("flag"),
                 F.sum("tokens").alias("tokens"), F.sum("bytes").alias("bytes"),
                 *report_examples.picks(F.col("example")))
            .collect()
        )  # fmt: skip
    by_kind: dict[str, list] = {}
    for r in agg:
        by_kind.setdefault(r["kind"], []).append(r)
    rejected = {r["key"]: int(r["n"]) for r in by_kind.get("reject", [])}
    sources = {r["key"]: (int(r["n"]), int(r["tokens"]), int(r["bytes"]))
               for r in by_kind.get("kept", [])}  # fmt: skip
    n_kept = sum(d for d, _, _ in sources.values())
    counts = {"read": read_rows, "kept": n_kept, "rejected": dict(sorted(rejected.items()))}
    if read_rows != n_kept + sum(rejected.values()):
        raise ReconcileError(
            f"counts do not reconcile: read {read_rows} != kept {n_kept} + rejected "
            f"{sum(rejected.values())} ({rejected}); this is a pipeline bug, please report it"
        )
    damage: dict[str, dict[str, tuple[int, int, str]]] = {}
    for r in sorted(by_kind.get("damage", []), key=lambda r: r["key"]):
        reason, path, why = r["key"].split(_SEP, 2)
        damage.setdefault(reason, {})[path] = (int(r["n"]), int(r["bytes"]), why)
    rules = sorted(by_kind.get("rule", []), key=lambda r: (-r["n"], r["key"]))
    langs = sorted(by_kind.get("lang", []), key=lambda r: (-r["n"], r["key"]))
    distributions = {
        kind: dict(sorted((int(r["key"]), int(r["n"])) for r in by_kind.get(kind, [])))
        for kind in (
            "quality_score_bins",
            "lang_score_bins",
            "exact_group_sizes",
            "near_cluster_sizes",
        )
    }
    pii = {f"{r['key']}_replaced": int(r["tokens"]) for r in by_kind.get("pii", [])}
    pii |= {f"documents_with_{r['key']}": int(r["flag"]) for r in by_kind.get("pii", [])}
    decont = {
        r["key"]: {"documents_matched": int(r["n"]), "documents_dropped": int(r["flag"]),
                   "documents_trimmed": int(r["n"]) - int(r["flag"]),
                   "chars_removed": int(r["tokens"])}
        for r in sorted(by_kind.get("decont", []), key=lambda r: r["key"])
    }  # fmt: skip
    return Outcomes(
        decontamination=decont,
        pii=dict(sorted(pii.items())),
        distributions=distributions,
        counts=counts,
        rule_failures={r["key"]: int(r["n"]) for r in rules},
        languages={r["key"]: {"docs": int(r["n"]), "kept": int(r["flag"])} for r in langs},
        sources=sources,
        damage=damage,
        examples={
            "rejected": report_examples.chosen([(r["key"], r) for r in by_kind.get("reject", [])]),
            "kept": report_examples.chosen([(r["key"] or "", r) for r in by_kind.get("kept", [])]),
        },
    )


def damage_report(damage: dict[str, dict[str, tuple[int, int, str]]], shown: int = 5) -> dict:
    """The manifest's `damage` section: per reason, files, rows, bytes skipped, and the
    first files (by path) with their figures."""
    out = {}
    for reason in DAMAGE_REASONS:
        files = damage.get(reason, {})
        if files:
            first = {}
            for p, (n, b, why) in list(files.items())[:shown]:
                first[p] = {"rows": n, "bytes_skipped": b} | ({"why": why} if why else {})
            out[reason] = {
                "files": len(files),
                "rows": sum(f[0] for f in files.values()),
                "bytes_skipped": sum(f[1] for f in files.values()),
                "first_files": first,
            }
    return out


def damage_lines(report: dict) -> list[str]:
    """The console summary of a run that met unreadable or damaged input."""
    lines = []
    for reason, r in report.items():
        n, files, skipped = r["rows"], r["files"], r["bytes_skipped"]
        if reason == "unreadable_file":
            lines.append(f"{files} input file(s) unreadable (ledger: read:unreadable_file)")
        elif reason == "corrupt_file":
            lines.append(f"{n} damaged stretch(es) in {files} file(s), {skipped:,} bytes skipped "
                         "where measured (ledger: read:corrupt_file)")  # fmt: skip
        else:
            lines.append(f"{n} record(s) with broken framing in {files} file(s) "
                         "(ledger: read:corrupt_record)")  # fmt: skip
        for path, f in r["first_files"].items():
            lines.append(f"    {path}: " + (f.get("why") or f"{f['rows']}"))
        if files > len(r["first_files"]):
            lines.append(f"    ... and {files - len(r['first_files'])} more file(s)")
    return lines
