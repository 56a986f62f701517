"""`curate export DIR DEST`: an output's current version as a plain dataset folder, to upload
to the Hugging Face Hub or hand to a trainer: the files the version lists and nothing else
(no _stages/, lock, Delta log or other version), plus a dataset card.

  DEST/data/part-....parquet     its kept documents (DEST/data/xx/ when routed by language)
  DEST/rejected/...              its ledger             (--with rejected)
  DEST/shards/shard-NNNNN.parquet  its mixture shards   (--with shards)
  DEST/tokens/shard-NNNNN.bin/.idx + index.json  its token shards (--with tokens)
  DEST/README.md                 the card, written last: `load_dataset(DEST)` reads the data

Files are copied (server-side within one store), never moved; an appended version's files
from every folder it lists land side by side (each writer's file names carry its write's id,
so they never collide); shards and token shards, numbered per writer, are renumbered in the
version's order. Uploading DEST is `huggingface_hub.upload_folder(folder_path=DEST, ...)`.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor

from curate_pipeline.location import Location
from curate_pipeline.outputs.publish import versions
from curate_pipeline.outputs.publish.card import CARD, card_text

log = logging.getLogger(__name__)

EXTRAS = ("rejected", "shards", "tokens")  # what --with may add to data/


class ExportError(ValueError):
    """DEST cannot take the export (not empty), or the version cannot be read whole."""


def export(out: Location | str, dest: Location | str, extras: tuple[str, ...] = (),
           threads: int = 16) -> dict:  # fmt: skip
    """Copy the current version of `out` to `dest` (empty or absent); returns what was
    copied: {"version", "files": {sub: n}, "bytes"}."""
    out, dest = Location.of(out), Location.of(dest)
    unknown = sorted(set(extras) - set(EXTRAS))
    if unknown:
        raise ExportError(f"--with {','.join(unknown)}: not a part of a version; choose from "
                          f"{', '.join(EXTRAS)}")  # fmt: skip
    if dest.names():
        raise ExportError(f"{dest}: not empty; export into an empty or new folder")
    v = versions.current(out)
    if v.record.get("layout") != versions.LAYOUT:
        raise ExportError(f"{out}: version {v.number} was written before table roots "
                          "(layout 1); rerun it with this curate to export it")  # fmt: skip
    copies: list[tuple[Location, Location]] = []
    for sub in ("data", *(e for e in EXTRAS if e in extras and e != "tokens")):
        copies += _named(v, sub, dest)
    index = None
    if "tokens" in extras:
        index, pairs = _tokens(v, dest)
        copies += pairs
    with ThreadPoolExecutor(max(1, min(threads, len(copies)))) as pool:
        list(pool.map(lambda pair: pair[0].copy(pair[1]), copies))
    if index is not None:
        (dest / "tokens" / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    subs = frozenset(("data", *extras))
    (dest / CARD).write_text(card_text(v, export=subs))  # last: the folder is whole
    counts: dict[str, int] = {}
    for _, target in copies:
        top = target.relative_to(dest).split("/", 1)[0]
        counts[top] = counts.get(top, 0) + 1
    log.info("exported version %d of %s to %s: %s", v.number, out, dest, counts)
    return {"version": v.number, "files": counts}


def _named(v: versions.Version, sub: str, dest: Location) -> list[tuple[Location, Location]]:
    """(source, target) for `sub`'s files: tables without their writer folder (data/F/xx/p →
    data/xx/p), shards renumbered in the version's order."""
    entries = v.record.get("files", {}).get(sub, [])
    sources = v.files(sub)
    if sub == "shards":
        return [(s, dest / sub / f"shard-{i:05d}.parquet") for i, s in enumerate(sources)]
    targets = [e["file"].split("/", 1)[1] if "/" in e["file"] else e["file"] for e in entries]
    if len(set(targets)) < len(targets):  # never seen: names carry the write's id
        targets = [e["file"] for e in entries]
    return [(s, dest / sub / t) for s, t in zip(sources, targets, strict=True)]


def _tokens(v: versions.Version, dest: Location) -> tuple[dict, list]:
    """The token index renumbered for DEST/tokens/ and the (source, target) pairs of the
    shards' .bin and .idx files (an appended version's earlier ones in their folders)."""
    index = json.loads((v.dir / "tokens" / "index.json").read_text())
    pairs, shards = [], []
    for i, s in enumerate(index["shards"]):
        home = v.dir.parent / (s.get("dir") or versions.name(int(s["version"]))) \
            if "version" in s else v.dir  # fmt: skip
        new = f"shard-{i:05d}"
        for ext in ("bin", "idx"):
            pairs.append((home / "tokens" / f"{s['name']}.{ext}", dest / "tokens" / f"{new}.{ext}"))
        shards.append({k: val for k, val in s.items() if k not in ("version", "dir")}
                      | {"name": new})  # fmt: skip
    index = {k: val for k, val in index.items() if k != "megatron"} | {"shards": shards}
    return index, pairs
