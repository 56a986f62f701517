"""What a config needs installed beyond the package's own dependencies: the `multilingual`
extra's word segmenters, for a word splitter of FineWeb's English (`spacy_en`) or FineWeb-2's
per-language splitting (`per_language`). A run checks before Spark starts (and on every
executor: engine/executor_check.py), so a missing one is one line naming the extra, not an
ImportError in the first task that meets a Thai page."""

from __future__ import annotations

import importlib.util

from curate_pipeline.config import Config, ConfigError

EXTRA = "multilingual"
# the modules each splitter imports (document/text/lang_words.py, spacy_words.py)
SPACY = ("spacy",)
PER_LANGUAGE = ("spacy", "jieba", "sudachipy", "sudachidict_core", "pyvi", "pythainlp",
                "indicnlp", "kiwipiepy", "kiwipiepy_model", "khmernltk", "laonlp")  # fmt: skip


def needed_modules(cfg: Config) -> dict[str, tuple[str, ...]]:
    """setting -> the modules it needs (empty: the core dependencies serve)."""
    out = {}
    for key, value in (("rules.word_splitter", cfg.rules.word_splitter),
                       ("near_dedup.word_splitter", cfg.near_dedup.word_splitter)):  # fmt: skip
        if value == "spacy_en":
            out[key] = SPACY
        elif value == "per_language":
            out[key] = PER_LANGUAGE
    return out


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_installed(cfg: Config) -> None:
    """ConfigError naming the settings, the missing modules and the extra to install."""
    missing = {key: [m for m in mods if not installed(m)]
               for key, mods in needed_modules(cfg).items()}  # fmt: skip
    missing = {k: v for k, v in missing.items() if v}
    if missing:
        said = "; ".join(f"{k} needs {', '.join(v)}" for k, v in missing.items())
        raise ConfigError(f"{said}: pip install 'curate-pipeline[{EXTRA}]' (the word "
                          f"segmenters), or set the splitter to regex")  # fmt: skip
