"""What an output holds: the inputs and settings of the run that wrote it (DIR/_stages/run.json,
written when a run starts, so an interrupted run is described too). A run started into an
output that holds another run's inputs or settings is refused before Spark starts, saying what
is there and the choices: another folder, `--overwrite`, adding inputs after the old ones (the
added-inputs path), or `--retune` (the steps rerun on the stored text with new settings)."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime

from curate_pipeline.config import Config, ConfigError
from curate_pipeline.location import Location

RUN_FILE = "run.json"
# sections that change how a run executes, never what it decides (the inputs themselves are
# compared as files; chunking is kept for reruns in _CHUNKING.json)
NEUTRAL = ("spark", "output", "input", "chunks")


def _path(out: Location) -> Location:
    return out / "_stages" / RUN_FILE


def sections(cfg: Config) -> dict[str, str]:
    data = cfg.model_dump(mode="json")
    return {name: cfg.section_hash(name) for name in data if name not in NEUTRAL}


def settings(cfg: Config) -> dict[str, object]:
    """Every deciding setting by its dotted key (langid.threshold: 0.65)."""
    flat: dict[str, object] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        else:
            flat[prefix] = value

    for name, value in cfg.model_dump(mode="json").items():
        if name not in NEUTRAL:
            walk(name, value)
    return flat


def write(out: Location, files: list[str], cfg: Config, config_path: str | None) -> None:
    _path(out).write_text(json.dumps({
        "inputs": files, "config": config_path, "config_hash": cfg.section_hash(),
        "sections": sections(cfg), "settings": settings(cfg),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }, indent=2) + "\n")  # fmt: skip


def changed_settings(held: dict, cfg: Config) -> list[str]:
    """The deciding settings that differ from the record's, as `key (old -> new)`. A key the
    record lacks is a difference unless it is at its built-in default (a key added to the
    config since); a key the config lacks, unless entries replaced it (a table filled in)."""
    if "settings" not in held:  # a record from before settings were kept: by section
        old = held.get("sections", {})
        return sorted(k for k, h in sections(cfg).items() if k in old and old[k] != h)
    was_all, now = held["settings"], settings(cfg)
    default = settings(Config())
    out = []
    for key in sorted(set(was_all) | set(now)):
        if key in was_all and key in now:
            differs = was_all[key] != now[key]
        elif key in now:  # new to the record: a new key, or an entry of a filled-in table
            differs = now[key] != default.get(key, object()) or any(
                key.startswith(k + ".") for k in was_all
            )
        else:  # gone: a key removed from the config (no difference), or a table emptied
            parents = [key.rsplit(".", n)[0] for n in range(1, key.count(".") + 1)]
            differs = any(p in now for p in parents) or any(k.startswith(key + ".") for k in now)
        if differs:
            out.append(f"{key} ({_short(was_all.get(key))} -> {_short(now.get(key))})")
    return out


def _short(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read(out: Location) -> dict | None:
    try:
        return json.loads(_path(out).read_text())
    except (OSError, ValueError):
        return None


def _names(files: list[str], most: int = 3) -> str:
    shown = ", ".join(Location.of(f).name for f in files[:most])
    return shown + (f", ... ({len(files)} in all)" if len(files) > most else "")


def check(out: Location | str, files: list[str], cfg: Config, config_path: str | None,
          retune: bool = False) -> None:  # fmt: skip
    """Refuse (ConfigError) a run whose inputs or settings differ from what `out` holds."""
    out = Location.of(out)
    held = read(out)
    if held is None:
        return
    old = list(held.get("inputs", []))
    there = (f"--output {out} holds a run of {len(old)} input(s) ({_names(old)}), started "
             f"{held.get('started')}, config {held.get('config') or '(defaults)'} (hash "
             f"{held.get('config_hash')})")  # fmt: skip
    if files[: len(old)] != old:
        conf = ["--config", config_path] if config_path else []
        added = [f for f in files if f not in old]
        cmd = shlex.join(["curate", "run", *conf, *(a for f in old + added
                                                      for a in ("--input", f)),
                          "--output", str(out)])  # fmt: skip
        raise ConfigError(
            f"{there}; this run's inputs differ. Choose another --output folder; or "
            f"--overwrite to replace it; or, to add inputs to it, list its inputs first, in "
            f"their order: {cmd}"
        )
    changed = changed_settings(held, cfg)
    if changed and not retune:
        shown = ", ".join(changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        raise ConfigError(
            f"{there}; this config differs in {shown}. Choose another --output "
            "folder; or --overwrite to replace it; or --retune to rerun the changed steps on "
            "the stored text (extraction is reused where its settings did not change)"
        )
