"""DIR/README.md: a Hugging Face dataset card, so the output folder opens as a dataset: the
current version's (versions.py), rewritten in one write after each commit and checked against
the log after the write (the card follows the log).

Without it `datasets.load_dataset(DIR)` takes every Parquet file under DIR, the run's own
stage files (_stages/) among them, and fails on their differing columns. The card is made
with `huggingface_hub`'s DatasetCardData (what the Hub's viewer and search read): the
configurations name exactly the files of the version's writer folders (an appended version's
earlier folders too): `default`, the kept documents; one per language when data/ is routed by
language (`lang_xx`); `rejected`, the ledger. Its metadata: license (`output.license`),
languages, size category, task tags. Its text says what the run read and kept.
"""

from __future__ import annotations

import logging
import re

import langcodes
from huggingface_hub import DatasetCardData

from curate_pipeline.location import Location
from curate_pipeline.outputs.publish import versions

log = logging.getLogger(__name__)

CARD = "README.md"

# the Hub's size categories (huggingface_hub's dataset card metadata), by kept documents
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
         (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"),
         (1_000_000_000, "100M<n<1B"), (10**10, "1B<n<10B"), (10**11, "10B<n<100B"),
         (10**12, "100B<n<1T"))  # fmt: skip


def size_category(n: int) -> str:
    return next((name for bound, name in SIZES if n < bound), "n>1T")


def _iso(label: str) -> str | None:
    """A language label of the identifier (en, rus_Cyrl, zh-Hans) as the Hub's ISO 639 code."""
    code = re.split(r"[_-]", label)[0]
    try:
        tag = langcodes.standardize_tag(code)
    except (ValueError, LookupError):
        return None
    return None if tag in ("und", "zxx", "mul") else tag


def routed_languages(entries: list[dict]) -> list[str]:
    """The language folders of a routed data/ (F/xx/part-...: its files' second part)."""
    return sorted({f["file"].split("/")[1] for f in entries if f["file"].count("/") >= 2})


def card_text(v: versions.Version, export: frozenset[str] | None = None) -> str:
    """The card of version `v` (relative paths from DIR; every folder it lists); `export`:
    of its copy by `curate export` holding these folders (data/, rejected/...: its files
    alone)."""
    manifest, record = v.manifest, v.record
    folders = [v.dir.name, *sorted(versions.held_folders(record) - {v.dir.name}, reverse=True)]
    files = record.get("files", {})

    def paths(sub: str, inner: str = "") -> list[str]:
        tops = [sub] if export is not None else [f"{sub}/{f}" for f in folders]
        return [f"{t}/{inner}*.parquet" if inner else f"{t}/**/*.parquet" for t in tops]

    configs = [{"config_name": "default", "default": True,
                "data_files": [{"split": "train", "path": paths("data")}]}]  # fmt: skip
    routed = routed_languages(files.get("data", [])) if _is_routed(manifest) else []
    configs += [{"config_name": f"lang_{lang}",
                 "data_files": [{"split": "train", "path": paths("data", f"{lang}/")}]}
                for lang in routed]  # fmt: skip
    if export is None or "rejected" in export:
        configs.append({"config_name": "rejected",
                        "data_files": [{"split": "train", "path": paths("rejected")}]})  # fmt: skip
    c = manifest["counts"]
    langs = manifest.get("languages") or {}
    kept_langs = routed or [k for k, n in langs.items() if n.get("kept")]
    codes = sorted({t for t in map(_iso, kept_langs) if t})
    license = manifest.get("config", {}).get("output", {}).get("license") or "other"
    data = DatasetCardData(
        pretty_name=_name(manifest), license=license, language=codes or None,
        size_categories=[size_category(c["kept"])], task_categories=["text-generation"],
        task_ids=["language-modeling"], tags=["curate-pipeline"], configs=configs,
    )  # fmt: skip
    body = _exported(v, routed, export) if export is not None else _body(v, folders, routed)
    return f"---\n{data.to_yaml()}\n---\n{body}"


def _is_routed(manifest: dict) -> bool:
    return bool(manifest.get("config", {}).get("langid", {}).get("route_by_language"))


def _body(v: versions.Version, folders: list[str], routed: list[str]) -> str:
    manifest = v.manifest
    c = manifest["counts"]
    rejected = sum(c["rejected"].values())
    reasons = sorted(c["rejected"].items(), key=lambda kv: (-kv[1], kv[0]))[:8]
    langs = manifest.get("languages") or {}
    made = manifest.get("versions", {}).get("curate-pipeline", "")
    own = f"versions/{v.dir.name}"
    lines = [
        f"# {_name(manifest)}",
        "",
        f"Curated by curate-pipeline {made} from {len(manifest['inputs'])} input(s), finished "
        f"{manifest['finished']} (config hash `{manifest['config_hash']}`): version "
        f"{v.number}, written by writer folder `{v.dir.name}`"
        + (
            f" and holding the files of `{'`, `'.join(folders[1:])}` (an appended version)."
            if len(folders) > 1
            else "."
        ),  # fmt: skip
        "",
        f"- read {c['read']:,} records; kept {c['kept']:,} documents (`default`: "
        f"{_in('data', folders)}); rejected {rejected:,} (`rejected`: {_in('rejected', folders)}:"
        " stage, reason and detail per record)",
        f"- tokens: {manifest.get('tokens', {}).get('total', 0):,} (token shards in "
        f"`{own}/tokens/`, mixture shards in `{own}/shards/`)",
    ]
    if routed:
        lines.append("- one configuration per language (`lang_xx`: the files of `data/F/xx/`; "
                     "every file keeps its `lang` column)")  # fmt: skip
    if reasons:
        lines.append("- most frequent reasons: " + ", ".join(f"{k} {n:,}" for k, n in reasons))
    found = sorted(((k, n.get("docs", 0)) for k, n in langs.items() if n.get("docs")),
                   key=lambda kv: (-kv[1], kv[0]))  # fmt: skip
    if found:
        lines.append("- languages identified: " + ", ".join(f"{k} {n:,}" for k, n in found[:10])
                     + (f" and {len(found) - 10} more" if len(found) > 10 else ""))  # fmt: skip
    lines += [
        "",
        "## Reading it",
        "",
        '- `datasets.load_dataset("<this folder>")` (`"rejected"` for the ledger).',
        "- Delta Lake: `data/` and `rejected/` are Delta tables holding exactly this version "
        '(`deltalake.DeltaTable("<this folder>/data").to_pyarrow_dataset()`, '
        '`polars.read_delta(...)`, DuckDB `delta_scan(...)`, Spark `format("delta")`).',
        "- A plain file list (pyarrow, DuckDB, pandas): `curate versions <this folder> --files "
        "data` prints this version's files; globbing `data/` takes every writer's.",
        f"- `{own}/report.html` shows the run; `{own}/manifest.json` holds its inputs, config, "
        "versions and counts. A newer run publishes a new version beside this one and rewrites "
        "this card last; `curate export` copies this version alone to a folder to upload.",
        "",
    ]
    return "\n".join(lines)


def _exported(v: versions.Version, routed: list[str], subs: frozenset[str]) -> str:
    manifest = v.manifest
    c = manifest["counts"]
    lines = [
        f"# {_name(manifest)}",
        "",
        f"Version {v.number} of `{manifest['output']}`, exported by `curate export`: its kept "
        f"documents ({c['kept']:,}, `data/`"
        + (", a folder per language, each file keeping its `lang` column" if routed else "")
        + ")"
        + "".join(
            f", {what} (`{sub}/`)"
            for sub, what in (
                ("rejected", "its ledger"),
                ("shards", "its mixture shards"),
                ("tokens", "its token shards"),
            )
            if sub in subs
        )
        + ". Curated by curate-pipeline "
        f"{manifest.get('versions', {}).get('curate-pipeline', '')} from "
        f"{len(manifest['inputs'])} input(s), finished {manifest['finished']} (config hash "
        f"`{manifest['config_hash']}`).",
        "",
        'Read it with `datasets.load_dataset("<this folder>")`, or any Parquet reader on '
        '`data/` (Spark: `spark.read.option("recursiveFileLookup", "true").parquet(...)`). '
        "Upload it with `huggingface_hub.upload_folder(folder_path=..., repo_id=..., "
        'repo_type="dataset")`.',
        "",
    ]
    return "\n".join(lines)


def _in(sub: str, folders: list[str]) -> str:
    return ", ".join(f"`{sub}/{f}/`" for f in folders)


def _name(manifest: dict) -> str:
    return manifest["output"].rstrip("/").rsplit("/", 1)[-1] or "curated corpus"


def publish_card(out: Location) -> int:
    """DIR/README.md for the newest committed version, checked again after the write and
    rewritten while a newer one appeared meanwhile (each writer ends its commit with this,
    so the card converges on the newest); returns the version it names."""
    for _ in range(10):
        v = versions.current(out)
        (out / CARD).write_text(card_text(v))
        if versions.current(out).number == v.number:
            return v.number
    return v.number


def card_folders(card: str) -> list[str]:
    """The writer folders a dataset card names (its data files' paths), its own version's
    first, then those whose files it lists too."""
    found = re.findall(r"(?:data|rejected)/(\d{12})/", card)
    return list(dict.fromkeys(found))


def card_versions(out: Location) -> list[str]:
    """The writer folders the dataset card of `out` names, its own first (kept while it
    does)."""
    try:
        return card_folders((out / CARD).read_text())
    except (OSError, UnicodeDecodeError):
        return []
