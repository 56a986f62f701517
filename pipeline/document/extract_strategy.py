"""Extraction strategies: several extractors per page and a learned choice among their outputs.

A strategy names the extractors it runs (cheapest first). Each page's outputs, with features
of the page and of the outputs (pipeline.document.extract_features), go to one small
regressor per extractor that predicts that extractor's F1 on the page; the output with the
highest prediction is the page's text. The regressors are LightGBM models trained on the WCXB
dev split by bench/extract_chooser_train.py (5 folds grouped by site) and shipped in the
package as pipeline/document/extract_chooser.json with their training figures; a worker
process loads them once. Prediction is a pure function of the features: the same page gets
the same choice in any run, partitioning or worker.

One time bound covers all of a page's extractors: each runs under what is left of it, and one
that fails or runs out leaves the others' outputs to choose from.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import Any

from pipeline.document.extract_features import (
    Words,
    overlap_features,
    page_features,
    text_features,
)
from pipeline.document.extractors import EXTRACTORS, check_nesting
from pipeline.document.verdict import ENVIRONMENT

STRATEGIES: dict[str, list[str]] = {
    # two of resiliparse's views from one parse (a third, without comments, added 0.002)
    "fast": ["resiliparse", "resiliparse_all"],
    "balanced": ["resiliparse", "resiliparse_all", "trafilatura"],
    "best": [
        "resiliparse",
        "resiliparse_nocomments",
        "resiliparse_all",
        "trafilatura",
        "readability",
    ],  # fmt: skip
}
# A routed strategy runs its first extractors, then a gate (models on those outputs only)
# predicts every extractor's F1: when the best of what ran is predicted better than the rest
# by the gate's margin, the rest never run. Trained and tuned with the chooser.
ROUTES: dict[str, int] = {"balanced": 2, "best": 3}  # how many extractors run before the gate
# the extractor a page keeps unless another is predicted better by the strategy's margin
DEFAULT = {"fast": "resiliparse", "balanced": "trafilatura", "best": "trafilatura"}
CHOOSER_PATH = Path(__file__).with_name("extract_chooser.json")
VISIBLE = "resiliparse_all"  # every strategy runs it: the page's visible text, for shares


def product_hint(page: dict[str, float]) -> bool:
    """A page with product markup: schema.org Product/Offer, a shop-like URL, or 7+ product
    class names (on WCXB dev: 98% of product pages, 88% of collections, 22% of articles)."""
    return page["s_product"] > 0 or page["u_product"] > 0 or page["h_product"] > 2


def page_part(html: str, url: str) -> dict[str, float]:
    return page_features(html, url)


def features(
    page: dict[str, float], texts: dict[str, str | None], seen: dict[str, Words] | None = None
) -> dict[str, float]:
    """The chooser's input: page features, each output's features, pairwise agreement.
    `seen`: outputs' words already found (the gate's), found once."""
    f = dict(page)
    names = list(texts)
    seen = {} if seen is None else seen
    for n in names:
        if n not in seen:
            seen[n] = Words(texts[n])
    words = seen
    for n in names:
        f.update(text_features(words[n], n, words.get(VISIBLE)))
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            f.update(overlap_features(words[a], words[b], f"{a}~{b}"))
    return f


class Models:
    """LightGBM regressors, one per extractor, over one feature list."""

    def __init__(self, spec: dict[str, Any], extractors: list[str]):
        import lightgbm as lgb

        self.columns: list[str] = spec["features"]
        self.models = [lgb.Booster(model_str=spec["models"][n]) for n in extractors]

    def predict(self, feats: dict[str, float]) -> list[float]:
        import numpy as np

        row = np.array([[feats.get(c, 0.0) for c in self.columns]], dtype=np.float64)
        return [float(m.predict(row, num_threads=1)[0]) for m in self.models]


class Chooser:
    """The shipped models of one strategy: the chooser over every output, and the gate."""

    def __init__(self, spec: dict[str, Any]):
        self.extractors: list[str] = spec["extractors"]
        self.full = Models(spec, self.extractors)
        self.gate = Models(spec["gate"], self.extractors) if "gate" in spec else None
        self.gate_margin: float = spec["gate"]["margin"] if "gate" in spec else 0.0
        self.default = self.extractors.index(spec["default"])
        self.margin: float = spec["margin"]
        self.margin_product: float = spec["margin_product"]

    def adjusted(self, predictions: list[float], page: dict[str, float]) -> list[float]:
        """The default extractor's prediction plus the strategy's margin (on product pages
        its own: extractors other than trafilatura lose most there)."""
        out = list(predictions)
        out[self.default] += self.margin_product if product_hint(page) else self.margin
        return out


_choosers: dict[str, Chooser] = {}
LOADS: dict[str, int] = {}  # loads of each strategy's models in this process (tests read it)


def chooser_bytes() -> bytes:
    """The shipped file, also from a zip (spark-submit --py-files)."""
    return resources.files("pipeline.document").joinpath(CHOOSER_PATH.name).read_bytes()


def chooser(strategy: str) -> Chooser:
    """Loaded once per worker process (the file holds ~2 MB of trees)."""
    if strategy not in _choosers:
        spec = json.loads(chooser_bytes())["strategies"][strategy]
        if spec["extractors"] != STRATEGIES[strategy]:
            raise RuntimeError(
                f"{CHOOSER_PATH.name}: strategy {strategy} was trained on {spec['extractors']}, "
                f"the code runs {STRATEGIES[strategy]}; retrain with bench/extract_chooser_train.py"
            )
        _choosers[strategy] = Chooser(spec)
        LOADS[strategy] = LOADS.get(strategy, 0) + 1
    return _choosers[strategy]


def pick(predictions: list[float], texts: list[str | None]) -> int:
    """The highest prediction among non-empty outputs (the first on a tie); -1 if none."""
    best = -1
    for i, (p, t) in enumerate(zip(predictions, texts, strict=True)):
        if t and t.strip() and (best < 0 or p > predictions[best]):
            best = i
    return best


class Outcome:
    __slots__ = ("text", "chosen", "ran", "failures", "timed_out", "clock", "tree")

    def __init__(self) -> None:
        self.text: str | None = None
        self.chosen: str | None = None
        self.ran: list[str] = []
        self.failures: dict[str, str] = {}
        self.timed_out = False
        self.clock = "cpu"
        self.tree: Any = None  # resiliparse's parse, shared by its views


def _run_extractors(
    html: str, url: str, names: list[str], texts: dict, out: Outcome, bound: Any, clock: tuple
) -> None:
    """Each of `names` on the page under what is left of the shared bound; a failure is noted
    in `out` and leaves the others."""
    from pipeline.document.extract_timeout import ExtractTimeout

    c0, w0, cpu_s, wall_s = clock
    tree = out.tree
    for name in names:
        cpu_left = cpu_s - (time.process_time() - c0)
        wall_left = wall_s - (time.perf_counter() - w0)
        if cpu_left <= 0 or wall_left <= 0:
            out.failures[name] = "no time left"
            out.timed_out = True
            out.clock = "cpu" if cpu_left <= 0 else "wall"
            texts[name] = None
            continue
        try:
            with bound(cpu_left, wall_left):
                if name.startswith("resiliparse"):
                    if tree is None:  # one parse for resiliparse's views
                        from resiliparse.parse.html import HTMLTree

                        check_nesting(html)
                        tree = out.tree = HTMLTree.parse(html)
                    texts[name] = EXTRACTORS[name](tree, url)
                else:
                    texts[name] = EXTRACTORS[name](html, url)
            out.ran.append(name)
        except ExtractTimeout as e:
            out.failures[name] = f"timeout ({e.clock})"
            out.timed_out = True
            out.clock = e.clock
            texts[name] = None
        except RecursionError as e:
            out.failures[name] = f"document nested too deeply{f' ({e})' if str(e) else ''}"[:200]
            texts[name] = None
        except (*ENVIRONMENT, OSError):
            raise  # the machine or the installation (a missing library), not the page
        except Exception as e:  # noqa: BLE001  one extractor's failure leaves the others
            out.failures[name] = f"{type(e).__name__}: {e}"[:200]
            texts[name] = None


def run_strategy(
    html: str, url: str, strategy: str, bound: Any, cpu_s: float, wall_s: float
) -> Outcome:
    """Run a strategy's extractors under one shared bound and choose among their outputs.

    `bound(cpu, wall)` is the time-bound context manager (pipeline.document.extract); each
    extractor gets what is left of `cpu_s` / `wall_s`.
    """
    out = Outcome()
    names = STRATEGIES[strategy]
    texts: dict[str, str | None] = {}
    clock = (time.process_time(), time.perf_counter(), cpu_s, wall_s)
    first = ROUTES.get(strategy, len(names))
    _run_extractors(html, url, names[:first], texts, out, bound, clock)
    model = chooser(strategy)
    page = page_part(html, url)
    seen: dict[str, Words] = {}
    # never on pages with product markup: there only trafilatura's defaults do well
    ran = [texts[n] for n in names[:first]]
    gated = first < len(names) and model.gate is not None and not product_hint(page)
    if gated and any(t and t.strip() for t in ran):
        cheap = {n: texts[n] for n in names[:first]}
        preds = model.gate.predict(features(page, cheap, seen))
        best = pick(preds[:first], ran)
        if preds[best] > max(preds[first:]) + model.gate_margin:
            out.text, out.chosen = ran[best], names[best]
            return out  # the rest would not do better: never run
    _run_extractors(html, url, names[first:], texts, out, bound, clock)
    ordered = [texts[n] for n in names]
    if not any(t and t.strip() for t in ordered):
        return out
    preds = model.adjusted(model.full.predict(features(page, texts, seen)), page)
    i = pick(preds, ordered)
    out.text, out.chosen = ordered[i], names[i]
    return out
