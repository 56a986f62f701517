"""DIR/README.md: a Hugging Face dataset card, so the output folder opens as a dataset: the
current version's (pipeline/versions.py), rewritten in one write after each commit.

Without it `datasets.load_dataset(DIR)` takes every Parquet file under DIR, the run's own
stage files (_stages/) among them, and fails on their differing columns. The card's YAML
header names two configurations (the Hub's `configs` field): `default`, the kept documents
(data/, with data/lang=xx/ folders when routed by language), and `rejected`, the ledger.
Its text says what the run read and kept, from the manifest.
"""

from __future__ import annotations

import yaml

CARD = "README.md"


def card_text(manifest: dict, version: str = ".", earlier: list[str] = ()) -> str:
    """The card of the version published in `version` (relative to DIR: versions/N);
    `earlier`: the folders of the versions it appended to, whose files it lists too."""
    v = version.strip("/")
    folders = [v, *(e.strip("/") for e in earlier)]

    def paths(sub: str) -> str | list[str]:
        found = [f"{f}/{sub}/**/*.parquet" for f in folders]
        return found[0] if len(found) == 1 else found

    configs = [
        {"config_name": "default", "data_files": [{"split": "train", "path": paths("data")}]},
        {"config_name": "rejected",
         "data_files": [{"split": "train", "path": paths("rejected")}]},
    ]  # fmt: skip
    header = yaml.safe_dump({"configs": configs, "pretty_name": _name(manifest)}, sort_keys=False)
    c = manifest["counts"]
    rejected = sum(c["rejected"].values())
    reasons = sorted(c["rejected"].items(), key=lambda kv: (-kv[1], kv[0]))[:8]
    langs = manifest.get("languages") or {}
    version = manifest.get("versions", {}).get("curate-pipeline", "")
    lines = [
        f"---\n{header}---",
        f"# {_name(manifest)}",
        "",
        f"Curated by curate-pipeline {version} from {len(manifest['inputs'])} input(s), "
        f"finished {manifest['finished']} (config hash `{manifest['config_hash']}`): version "
        f"{manifest.get('version', '')}, in `{v}/`"
        + (f" (appended to the files of `{'`, `'.join(folders[1:])}`)." if earlier else "."),
        "",
        f"- read {c['read']:,} records; kept {c['kept']:,} documents ({_in(folders, 'data')}, "
        f"the `default` configuration); rejected {rejected:,} ({_in(folders, 'rejected')}, the "
        "`rejected` configuration: stage, reason and detail per record)",
        f"- tokens: {manifest.get('tokens', {}).get('total', 0):,} "
        f"(token shards in `{v}/tokens/`, mixture shards in `{v}/shards/`)",
    ]
    if reasons:
        lines.append("- most frequent reasons: " + ", ".join(f"{k} {n:,}" for k, n in reasons))
    # documents per language identified (before the later stages' drops)
    found = sorted(((k, v.get("docs", 0)) for k, v in langs.items() if v.get("docs")),
                   key=lambda kv: (-kv[1], kv[0]))  # fmt: skip
    if found:
        lines.append("- languages identified: " + ", ".join(f"{k} {n:,}" for k, n in found[:10])
                     + (f" and {len(found) - 10} more" if len(found) > 10 else ""))  # fmt: skip
    appended = (" (an appended version: every folder above holds part of it; `curate "
                "versions DIR --files data` lists its files)" if earlier else "")  # fmt: skip
    lines += [
        "",
        'Read it with `datasets.load_dataset("<this folder>")` (`, "rejected"` for the '
        f"ledger), `pyarrow.dataset.dataset({[f'{f}/data' for f in folders]})`, DuckDB "
        f"(`read_parquet({[f'{f}/data/**/*.parquet' for f in folders]})`), pandas or Polars"
        + appended
        + f". `{v}/report.html` shows "
        f"the run; `{v}/manifest.json` holds its inputs, config, versions and counts. A newer "
        "run publishes a new version beside this one and rewrites this card last.",
        "",
    ]
    return "\n".join(lines)


def _in(folders: list[str], sub: str) -> str:
    return ", ".join(f"`{f}/{sub}/`" for f in folders)


def _name(manifest: dict) -> str:
    return manifest["output"].rstrip("/").rsplit("/", 1)[-1] or "curated corpus"
