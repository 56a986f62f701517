"""The per-language files a run reads on the driver and ships with its steps: the recipes
folder (`recipes.configs`) and the word-splitter table (`rules.word_splitters`).

Each is a location (a local path, relative to the working directory and then the project
root, or a URI: s3://, gs://, hdfs://, ...), read once on the driver, whatever the executors
see; their content, not only their name, is in the stages' fingerprints (`digest`)."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any

import yaml

from curate_pipeline.config import Config
from curate_pipeline.document.recipes import Recipes
from curate_pipeline.document.text.lang_words import Splitter, read_table
from curate_pipeline.location import conf_location

_KEY_FILE = re.compile(r"^([a-z]{2,3}_[A-Z][a-z]{3})\.ya?ml$")


@lru_cache(maxsize=4)
def _read_configs(path: str) -> tuple[dict[str, dict[str, Any]], str]:
    """(key -> config, sha256 of the files) of a recipes folder."""
    fix = "set recipes.configs to a folder of <iso639-3>_<Script>.yml files (conf/fineweb2/configs)"
    folder = conf_location(path, "recipes.configs folder", fix, folder=True)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    configs: dict[str, dict[str, Any]] = {}
    h = hashlib.sha256()
    for name in folder.names():
        m = _KEY_FILE.match(name)
        if not m:
            continue
        data = (folder / name).read_bytes()
        h.update(name.encode() + b"\0" + data + b"\0")
        try:
            cfg = yaml.load(data, Loader=loader)
        except yaml.YAMLError as e:
            raise ValueError(f"recipe {folder / name}: not YAML ({e})") from None
        if not isinstance(cfg, dict):
            raise ValueError(f"recipe {folder / name}: expected a mapping of settings")
        configs[m.group(1)] = cfg
    if not configs:
        raise ValueError(f"recipes.configs {folder}: no <iso639-3>_<Script>.yml file in it")
    return configs, h.hexdigest()


def load_recipes(cfg: Config) -> Recipes | None:
    """The run's recipes over its rules section, or None when `recipes.configs` is null."""
    if not cfg.recipes.configs:
        return None
    configs, _ = _read_configs(cfg.recipes.configs)
    return Recipes(configs, cfg.rules)


@lru_cache(maxsize=4)
def _read_table(path: str) -> tuple[dict[str, Splitter], str]:
    loc = conf_location(path, "rules.word_splitters table", "set rules.word_splitters to "
                    "conf/fineweb2/word_splitters.csv", folder=False)  # fmt: skip
    text = loc.read_text()
    return read_table(text.splitlines()), hashlib.sha256(text.encode()).hexdigest()


def _uses_table(cfg: Config) -> bool:
    return "per_language" in (cfg.rules.word_splitter, cfg.near_dedup.word_splitter)


def splitter_table(cfg: Config, user: str = "rules") -> dict[str, Splitter] | None:
    """The word-splitter table when `user` (rules or near_dedup) splits per language."""
    if getattr(cfg, user).word_splitter != "per_language":
        return None
    return _read_table(cfg.rules.word_splitters)[0]


def digest(cfg: Config) -> list[str | None]:
    """The content of the files this config reads: part of the stages' fingerprints."""
    return [
        _read_configs(cfg.recipes.configs)[1] if cfg.recipes.configs else None,
        _read_table(cfg.rules.word_splitters)[1] if _uses_table(cfg) else None,
    ]  # fmt: skip
