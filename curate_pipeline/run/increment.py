"""Appending to an output: a run whose inputs extend its current version's publishes a
version that takes over the earlier one's files and adds only what the new inputs bring.

A run appends when the output's current version was made with the same settings, code and
models (its commit's `increment.settings`) from inputs that are the first of this run's, each
unchanged (`increment.inputs_digest`: paths, sizes and mtimes), and the mixture can grow by
appending (natural mode: every document once, so new shards leave the old ones as they are).
Then the corpus half sees only the new inputs' records (crawl positions past the earlier
inputs'), deduplicated among themselves and against the earlier version's dedup index (stage
`prior_dedup`, as `dedup.against` does for other outputs); the new version lists the earlier
version's data/, rejected/ and index/ files and token shards beside its own new ones, and
its counts, budget and report are the sums.

How the result differs from a run over all inputs at once:
- nothing published earlier is retracted: a new document that near-duplicates an earlier
  one is dropped (`prior_dup:near`, naming it), but one that would have joined two earlier
  clusters into one leaves both representatives kept, as they were published;
- a new document is compared with the earlier *kept* documents (the index), not with those
  the earlier run dropped as duplicates: a copy of an earlier exact duplicate is still
  caught through its kept twin; a near copy only of a dropped document can survive;
- the new shards are shuffled among themselves (the trainer reads them after the old ones);
- a WARC-Record-ID repeated across the earlier and the new inputs is not renamed.
Where no new document touches an earlier one, the kept documents and the ledger are those of
a run over all inputs (tested).

Anchors: Delta Lake's append (new files listed beside the old in the next commit); Dolma's
and RedPajama's dedup across dumps.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from curate_pipeline.config import Config
from curate_pipeline.document.warc.records import OFFSET_BITS
from curate_pipeline.engine.storage import read_parquet
from curate_pipeline.location import Location
from curate_pipeline.outputs.budget import budget_report
from curate_pipeline.outputs.publish import versions

log = logging.getLogger(__name__)

# the sections of a manifest that are sums over documents (counted per run, added up)
SUMMED = ("counts", "rule_failures", "languages", "distributions", "pii", "damage")


@dataclass(frozen=True)
class Base:
    """The version a run appends to: its files stay, its first `inputs` inputs are done."""

    version: versions.Version
    inputs: int

    @property
    def first_pos(self) -> int:
        """The first crawl position of the new inputs' records."""
        return self.inputs << OFFSET_BITS


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def record(settings: str, files: list[str], stamps: dict[str, list]) -> dict:
    """What a version's commit says of how it was made, for a later run to append to it."""
    return {"settings": settings, "inputs": len(files),
            "inputs_digest": _digest(files, [stamps.get(f, []) for f in files])}  # fmt: skip


def not_appendable(cfg: Config) -> str | None:
    """Why this config's outputs cannot grow by appending (None: they can)."""
    m = cfg.mixture
    if m.target_tokens is not None:
        return "mixture.target_tokens reweighs every source when one grows"
    if m.rehydration or m.quality_groups:
        return "the mixture's rehydration or quality groups weigh documents by the whole corpus"
    if cfg.tokens.merged:
        return "tokens.merged is one file of every shard"
    if (cfg.exact_dedup.enabled or cfg.near_dedup.enabled) and not cfg.dedup.index:
        return "dedup.index is off: new documents have nothing to be deduplicated against"
    return None


def _mismatch(made: dict | None, settings: str, files: list[str],
              stamps: dict[str, list]) -> str | None:  # fmt: skip
    """Why a version made as `made` (its commit's `increment`) cannot be extended by this
    run's inputs and settings (None: it can)."""
    if made is None:
        return "its current version does not say how it was made (written before appends)"
    if made["settings"] != settings:
        return "its settings, code or models differ from this run's"
    if not 0 < made["inputs"] < len(files):
        return "this run has no inputs beyond those of its current version"
    prefix = files[: made["inputs"]]
    if record(settings, prefix, stamps)["inputs_digest"] != made["inputs_digest"]:
        return "its inputs are not the first of this run's, unchanged"
    return None


def find_base(out: Location, cfg: Config, files: list[str], stamps: dict[str, list],
              settings: str, number: int, force: bool = False) -> Base | None:  # fmt: skip
    """Version `number` (the newest when the run started: the one it publishes after), when
    this run appends to it (`stamps`: the inputs' sizes and mtimes, run/inputs.py); else
    None, said on the console."""
    if not cfg.output.append or force or number < 1:
        return None
    try:
        v = versions.current(out)
    except versions.NoVersion:
        return None
    if v.number != number:  # a newer one (the commit will be refused) or one unreadable
        log.info("a whole new version of %s: its current version is %d, not %d", out,
                 v.number, number)  # fmt: skip
        return None
    made = v.record.get("increment")
    why = not_appendable(cfg) or _mismatch(made, settings, files, stamps)
    if why:
        log.info("a whole new version of %s: %s", out, why)
        return None
    log.info("appending to version %d of %s: %d input(s) done, %d new", v.number, out,
             made["inputs"], len(files) - made["inputs"])  # fmt: skip
    return Base(v, made["inputs"])


def rerun_within(chunks: list, base: Base) -> str | None:
    """The first chunk holding an earlier input that ran again (a file it could not open
    opens now): its documents reach no corpus stage in an append, so the run makes a whole
    new version instead. None when every such chunk was reused."""
    first = 0
    for c in chunks:
        if first < base.inputs and c.status != "reused":
            return c.name
        first += c.files
    return None


def new_documents(spark: SparkSession, cfg: Config, chunks: list, base: Base,
                  schema) -> DataFrame:  # fmt: skip
    """The documents pass's rows of the new inputs only: the chunks holding any (in crawl
    order: a chunk's first input is the sum of the files of those before), then the rows past
    the earlier inputs' crawl positions (a chunk may hold both)."""
    parts, first = [], 0
    for c in chunks:
        if first + c.files > base.inputs:
            parts += [Location(u) for u in c.parts]
        first += c.files
    rows = read_parquet(spark, parts, schema, cfg.output.spark_io)
    return rows.where(F.col("crawl_pos") >= F.lit(base.first_pos))


def _home(v: versions.Version) -> dict:
    """What a file entry taken over from version `v` says of where it lies."""
    return {"version": v.number, "dir": v.dir.name}


def taken_over(base: Base, sub: str) -> list[dict]:
    """The earlier version's file entries for `sub`, each naming the version (and folder)
    that holds it."""
    v = base.version
    return [_home(v) | f if "version" not in f else f
            for f in v.record.get("files", {}).get(sub, [])]  # fmt: skip


def references(files: dict[str, list[dict]], tokens: dict | None = None) -> list[str]:
    """The earlier versions' folders an appended version lists files of (kept while it
    is)."""
    listed = [f for entries in files.values() for f in entries]
    listed += (tokens or {}).get("shards", [])
    return sorted({f.get("dir") or versions.name(int(f["version"]))
                   for f in listed if "version" in f})  # fmt: skip


def summed(old: object, new: object) -> object:
    """Two runs' figures added: numbers summed, dicts key by key, lists joined; a bin width
    or any other setting (a string) is the new run's."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for k, v in new.items():
            out[k] = summed(old[k], v) if k in old and not k.endswith("_width") else v
        return out
    if isinstance(old, bool) or isinstance(new, bool):
        return new
    if isinstance(old, int | float) and isinstance(new, int | float):
        return old + new
    if isinstance(old, list) and isinstance(new, list):
        return old + new
    return new


def merged_manifest(earlier: dict, mine: dict) -> dict:
    """This run's manifest with the figures of the whole output: the sums of the earlier
    version's and this run's; this run's own under `increment`."""
    out = dict(mine)
    out["increment"] = {"base_version": earlier.get("version"),
                        "inputs_added": len(mine["inputs"]) - len(earlier["inputs"]),
                        **{k: mine.get(k) for k in SUMMED}}  # fmt: skip
    for k in SUMMED:
        out[k] = summed(earlier.get(k, {}), mine.get(k, {}))
    for r in out["damage"].values():  # a few files per reason, not every one
        r["first_files"] = dict(list(r.get("first_files", {}).items())[:5])
    dec = out.get("decontamination") or {}
    for name, figures in dec.get("sets", {}).items():
        before = (earlier.get("decontamination") or {}).get("sets", {}).get(name, {})
        for k in ("documents_matched", "documents_dropped", "documents_trimmed",
                  "chars_removed"):  # fmt: skip
            figures[k] = figures.get(k, 0) + before.get(k, 0)
    return out


def merged_budget(earlier: dict, mine: dict, cfg: Config) -> dict:
    """The budget of every shard: per source the earlier and the new documents and tokens
    (natural mode: epochs 1)."""
    out = dict(mine)
    sources = {}
    for s in sorted(set(earlier["sources"]) | set(mine["sources"])):
        a, b = earlier["sources"].get(s), mine["sources"].get(s)
        both = summed(a, b) if a and b else dict(a or b)
        for k in ("weight", "epochs", "tokens_rehydrated"):
            both[k] = (b or a)[k]
        both["realised_epochs"] = (both["tokens_after"] / both["tokens_before"]
                                   if both["tokens_before"] else 0.0)  # fmt: skip
        sources[s] = both
    out["sources"] = sources
    out["total_tokens"] = earlier["total_tokens"] + mine["total_tokens"]
    out["shards"] = earlier["shards"] + mine["shards"]
    b = cfg.budget
    out["compute"] = budget_report(out["total_tokens"], b.flops_per_gpu, b.model_params, b.gpus)
    return out


def merged_token_index(base: Base, mine: dict) -> dict:
    """tokens/index.json listing the earlier version's shards (in its folder) before this
    run's."""
    earlier = json.loads((base.version.dir / "tokens" / "index.json").read_text())
    for k in ("tokenizer", "dtype", "eot_token"):
        if earlier[k] != mine[k]:
            raise ValueError(f"{base.version.dir}: its token shards' {k} {earlier[k]!r} is not "
                             f"this run's {mine[k]!r}")  # fmt: skip
    old = [_home(base.version) | s if "version" not in s else s
           for s in earlier["shards"]]  # fmt: skip
    merged = mine | {"shards": old + mine["shards"]}
    if "megatron" in mine:  # every shard's Megatron files, the earlier ones in their folder
        merged["megatron"] = mine["megatron"] | {"prefixes": [
            f"../../{s.get('dir') or versions.name(int(s['version']))}/tokens/megatron/{s['name']}"
            if "version" in s else f"megatron/{s['name']}"
            for s in merged["shards"]]}  # fmt: skip
    return merged


def shard_files(token_index: dict) -> list[dict]:
    """The mixture's shards/ files of a version, from its token index (the same shards, in
    the same order), each naming the version holding it when it is an earlier one's."""
    return [{"file": f"{s['name']}.parquet"} | {k: s[k] for k in ("version", "dir") if k in s}
            for s in token_index["shards"]]  # fmt: skip
