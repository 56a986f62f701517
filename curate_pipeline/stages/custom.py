"""Steps of the user's own (`steps.custom`): a function from the user's module, run among the
per-document steps where the config says, under the step contract (docs/adding-a-stage.md):
its drops are ledger rows under its own stage name, its errors `<name>:error` rows, its
settings and code hash in the fingerprints (a change reruns it on the stored text), the
manifest and the version record.

The function is found by "module:function" (imported on the driver) or given as an object
through the Python API (`curate_pipeline.api.run(steps=[fn])`). A module that is one file of
the user's (not in an installed package) is shipped to the executors with the job
(SparkContext.addPyFile), so nothing needs installing on a cluster; a function defined in
the script itself (`__main__`) travels by value with the tasks.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from curate_pipeline.config import Config, ConfigError
from curate_pipeline.stages.step import DocumentStep, Drop, Stage, Verdict, each

# Functions handed over by the Python API, by their "module:qualname" (found without import)
_given: dict[str, Callable] = {}
_shipped: set[tuple[str, str]] = set()


def register(fn: Callable) -> str:
    """The "module:qualname" a function given to the Python API is named by in the config."""
    spec = f"{fn.__module__}:{fn.__qualname__}"
    _given[spec] = fn
    return spec


def resolve(spec: str) -> Callable:
    """The function "module:function" names (ConfigError naming it and the fix)."""
    if spec in _given:
        return _given[spec]
    module_name, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(
            f"steps.custom: {spec}: cannot import {module_name} ({e}); run where it is "
            "importable (its folder on PYTHONPATH, or installed)"
        ) from None
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ConfigError(f"steps.custom: {spec}: {module_name} has no {attr}")
    if not callable(obj):
        raise ConfigError(f"steps.custom: {spec} is not a function")
    return obj


@dataclass(frozen=True)
class Custom:
    name: str
    spec: str
    after: str
    settings: dict
    code: str  # sha256 of the function's module source (its own source if no file)

    def record(self) -> dict:
        return {"name": self.name, "function": self.spec, "after": self.after,
                "settings": self.settings, "code": self.code}  # fmt: skip


def _source_file(fn: Callable) -> Path | None:
    module = sys.modules.get(fn.__module__)
    f = getattr(module, "__file__", None)
    return Path(f) if f and f.endswith(".py") and Path(f).is_file() else None


def _code(fn: Callable) -> str:
    f = _source_file(fn)
    try:
        data = f.read_bytes() if f else inspect.getsource(fn).encode()
    except (OSError, TypeError):
        data = fn.__qualname__.encode()
    return hashlib.sha256(data).hexdigest()[:16]


def customs(cfg: Config) -> list[Custom]:
    out = []
    try:
        entries = cfg.steps.entries()
    except ValueError as e:
        raise ConfigError(str(e)) from None
    for c in entries:
        fn = resolve(c.function)
        name = c.name or c.function.partition(":")[2].split(".")[-1]
        out.append(Custom(name, c.function, c.after or cfg.steps.after, dict(c.settings),
                          _code(fn)))  # fmt: skip
    return out


def _verdict(result: object, name: str) -> Verdict:
    """What a user's function returned, as a verdict (datatrove's filter results too)."""
    if result is None or result is True:
        return None
    if isinstance(result, Drop):
        return result
    if result is False:
        return Drop("dropped")
    if isinstance(result, tuple) and result and result[0] is False:
        return Drop(str(result[1]) if len(result) > 1 else "dropped",
                    str(result[2]) if len(result) > 2 else None)  # fmt: skip
    if isinstance(result, str):
        return Drop(result)
    raise TypeError(f"step {name} returned {type(result).__name__}: return None or True to "
                    "keep, Drop(reason, detail), False or (False, reason) to drop")  # fmt: skip


def _ship(spark, fn: Callable) -> None:
    """The user's module file to the executors, where it is no installed package's."""
    f = _source_file(fn)
    if f is None or fn.__module__ == "__main__" or "site-packages" in f.parts:
        return  # by value (__main__), or installed on the nodes
    key = (spark.sparkContext.applicationId, str(f.resolve()))
    if key not in _shipped:
        spark.sparkContext.addPyFile(str(f))
        _shipped.add(key)


def stage(custom: Custom) -> Stage:
    def factory(spark, cfg: Config) -> DocumentStep:  # noqa: ARG001
        fn = resolve(custom.spec)
        if spark is not None:
            _ship(spark, fn)
        settings, name = custom.settings, custom.name
        takes_settings = len(inspect.signature(fn).parameters) >= 2

        def check(doc: dict) -> Verdict:
            return _verdict(fn(doc, settings) if takes_settings else fn(doc), name)

        return DocumentStep([], each(check))

    return Stage(custom.name, step=factory, sections=("steps",),
                 settings=lambda cfg: custom.record())  # fmt: skip


def with_custom(stages: list[Stage], cfg: Config, order: list[str]) -> list[Stage]:
    """`stages` (enabled, in order) with the user's steps placed after the stage each names,
    in the order listed (`order`: every stage's name in the registry's order)."""
    if not cfg.steps.custom:
        return stages
    placeable = [n for n in order if n not in AFTER_NOT]
    ranked = [(float(order.index(st.name)) if st.name in order else -1.0, st) for st in stages]
    for i, c in enumerate(customs(cfg)):
        if c.after not in placeable:
            raise ConfigError(f"steps.custom: {c.name}: after {c.after!r}: give one of "
                              f"{', '.join(placeable)}")  # fmt: skip
        ranked.append((order.index(c.after) + 0.5 + i / 1000, stage(c)))
    return [st for _, st in sorted(ranked, key=lambda r: r[0])]


# Stages a user's step cannot follow: the corpus stages (dedup) and the final ones
AFTER_NOT = ("prior_dedup", "exact_dedup", "near_dedup", "quality_buckets", "pii", "tokenize")
