"""Train the extraction chooser on the WCXB dev split, cross-validated, and ship it.

For each strategy (pipeline.document.extract_strategy.STRATEGIES) and each extractor it runs,
a LightGBM regressor predicts that extractor's bag-of-words F1 on a page from the page's
features and the candidate outputs' features (pipeline.document.extract_features); the chooser
keeps the extractor with the highest prediction. Folds are grouped by site (GroupKFold on the
URL's host, 5 folds), so every figure is on sites the model never saw; seeds fixed, one thread,
LightGBM's deterministic mode: the same data gives the same file.

Reads bench/work/extract_candidates.jsonl.gz (bench/extract_candidates.py); writes the model
to models/extract_chooser.json (tracked: conf names it) and the cross-validated figures to
bench/results/extract_chooser_cv.json. The AEB pages are never used in training.

    python bench/extract_chooser_train.py
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlparse

import lightgbm as lgb
import numpy as np
from sklearn.model_selection import GroupKFold

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extract_bench import prf  # noqa: E402
from extract_candidates import OUT as CANDIDATES_FILE  # noqa: E402
from extract_candidates import html_of  # noqa: E402

from pipeline.document.extract_strategy import (  # noqa: E402
    CHOOSER_PATH,
    DEFAULT,
    ROUTES,
    STRATEGIES,
    features,
    page_part,
    pick,
    product_hint,
)

PARAMS = {
    "objective": "regression", "learning_rate": 0.05,
    "num_leaves": int(os.environ.get("LEAVES", 7)),
    "min_data_in_leaf": int(os.environ.get("MIN_DATA", 40)),
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": 1.0,
    "seed": 36, "deterministic": True, "num_threads": 1, "verbose": -1,
}  # fmt: skip
CV_CHOICES = ROOT / "bench" / "work" / "extract_chooser_cv_choices.json"
ROUNDS = int(os.environ.get("ROUNDS", 200))
GATE_MARGINS = (-0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.2, 10.0)  # 10: never skip
MARGINS = (0.0, 0.01, 0.03, 0.05, 0.1, 0.2, 0.3, 1.0)


def load() -> list[dict]:
    rows = [json.loads(line) for line in gzip.open(CANDIDATES_FILE, "rt")]
    for r in rows:
        r["page"] = page_part(html_of({"html": _html_path(r["id"])}), r["url"])
        for out in r.values():
            if isinstance(out, dict) and "text" in out:
                out["f1"] = prf(out["text"] or "", r["truth"])[2]
    return rows


def _html_path(page_id: str) -> str:
    from extract_candidates import DATA

    kind, key = page_id.split("/", 1)
    if kind == "wcxb":
        return str(DATA / "wcxb_dev" / "html" / f"{key}.html.gz")
    (match,) = (DATA / "scrapinghub_aeb" / "html").glob(f"{key}*.html")
    return str(match)


def matrix(
    rows: list[dict], strategy: str, upto: int | None = None
) -> tuple[np.ndarray, list[str]]:
    names = STRATEGIES[strategy][:upto]
    feats = [features(r["page"], {n: r[n]["text"] for n in names}) for r in rows]
    cols = sorted(feats[0])
    return np.array([[f[c] for c in cols] for f in feats], dtype=np.float64), cols


def train(x: np.ndarray, y: np.ndarray) -> lgb.Booster:
    return lgb.train(PARAMS, lgb.Dataset(x, y, params={"verbose": -1}), ROUNDS)


def choose(preds: np.ndarray, rows: list[dict], names: list[str]) -> np.ndarray:
    # the runtime's rule: the highest prediction among non-empty outputs
    return np.array([max(0, pick(list(p), [r[n]["text"] for n in names])) for p, r in
                     zip(preds, rows, strict=True)])  # fmt: skip


def train_gate(dev, strategy, ys, full_f1, groups, types, traf) -> tuple[dict, dict, dict]:
    """The routed strategy's gate: models on the first extractors' outputs only, predicting
    every extractor's F1. Its margin: the one that skips the most later extractors while the
    cross-validated mean F1 stays within 0.002 of the full chooser's and every page type
    stays above trafilatura alone."""
    names = STRATEGIES[strategy]
    first = ROUTES[strategy]
    x, cols = matrix(dev, strategy, first)
    cv = np.zeros_like(ys)
    for train_idx, test_idx in GroupKFold(n_splits=5).split(x, groups=groups):
        for j in range(len(names)):
            cv[test_idx, j] = train(x[train_idx], ys[train_idx, j]).predict(x[test_idx])
    texts = [[r[n]["text"] for n in names[:first]] for r in dev]
    cheap = np.array([pick(list(cv[i, :first]), texts[i]) for i in range(len(dev))])
    has = cheap >= 0
    best_cheap = np.where(has, cv[np.arange(len(dev)), np.maximum(cheap, 0)], -np.inf)
    rest = cv[:, first:].max(axis=1)
    # never on pages with product markup, where only trafilatura's defaults do well
    hint = np.array([product_hint(r["page"]) for r in dev])
    trials = {}
    for g in GATE_MARGINS:
        skip = has & ~hint & (best_cheap > rest + g)
        got = np.where(skip, ys[np.arange(len(dev)), np.maximum(cheap, 0)], full_f1)
        ok = all(got[types == t].mean() > traf[types == t].mean() for t in set(types))
        trials[g] = (float(got.mean()), float(skip.mean()), ok, skip)
    good = [g for g, (f, _, ok, _) in trials.items() if ok and f >= full_f1.mean() - 0.002]
    g = max(good or [max(GATE_MARGINS)], key=lambda k: (trials[k][1], -k))
    skip = trials[g][3]
    full_pick = {r["id"]: c for r, c in zip(dev, _FULL_CHOICES[strategy], strict=True)}
    choices = {r["id"]: names[cheap[i]] if skip[i] else full_pick[r["id"]]
               for i, r in enumerate(dev)}  # fmt: skip
    models = {n: train(x, ys[:, j]).model_to_string() for j, n in enumerate(names)}
    figures = {
        "runs_first": names[:first],
        "margin": g,
        "skipped_share_cv": round(trials[g][1], 4),
        "by_margin": {
            str(k): {"f1": round(v[0], 4), "skipped": round(v[1], 4), "types_ok": v[2]}
            for k, v in trials.items()
        },  # fmt: skip
    }
    return {"features": cols, "models": models, "margin": g}, figures, choices


_FULL_CHOICES: dict[str, list[str]] = {}


def main() -> None:
    if os.environ.get("STRATEGIES"):  # experiments: other extractor sets, nothing written
        STRATEGIES.clear()
        STRATEGIES.update(json.loads(os.environ["STRATEGIES"]))
        DEFAULT.update(json.loads(os.environ.get("DEFAULTS", "{}")))
    rows = load()
    dev = [r for r in rows if r["id"].startswith("wcxb/")]
    aeb = [r for r in rows if r["type"] == "aeb"]
    groups = [urlparse(r["url"]).netloc for r in dev]
    shipped: dict = {"strategies": {}, "trained_on": f"WCXB dev, {len(dev)} pages"}
    figures: dict = {}
    cv_choices: dict = {}
    for strategy, names in STRATEGIES.items():
        x, cols = matrix(dev, strategy)
        ys = np.array([[r[n]["f1"] for n in names] for r in dev])
        # targets: each extractor's F1 (its gain over the default, or over the page's mean,
        # measured 0.003-0.005 lower in cross-validation)
        base = names.index(DEFAULT[strategy])
        cv = np.zeros_like(ys)
        for train_idx, test_idx in GroupKFold(n_splits=5).split(x, groups=groups):
            for j in range(len(names)):
                cv[test_idx, j] = train(x[train_idx], ys[train_idx, j]).predict(x[test_idx])
        # the default extractor keeps a page unless another is predicted better by a margin
        # (its own on pages with product markup): the pair with the best cross-validated F1
        hint = np.array([product_hint(r["page"]) for r in dev])

        is_default = np.arange(len(names)) == base

        def bonus(m: float, mp: float, hints: np.ndarray, d: np.ndarray = is_default):
            return np.where(hints, mp, m)[:, None] * d

        # balanced and best must beat trafilatura alone on every page type: the best mean
        # among margins that do, else the best mean
        types = np.array([r["type"] for r in dev])
        traf = np.array([r["trafilatura"]["f1"] for r in dev])
        trials, beats = {}, {}
        for m in MARGINS:
            for mp in MARGINS:
                p = choose(cv + bonus(m, mp, hint), dev, names)
                got = ys[np.arange(len(dev)), p]
                trials[m, mp] = float(got.mean())
                beats[m, mp] = all(got[types == t].mean() > traf[types == t].mean()
                                   for t in set(types))  # fmt: skip
        allowed = [k for k in trials if beats[k]] if DEFAULT[strategy] == "trafilatura" else []
        margin, margin_product = max(
            allowed or trials, key=lambda k: (round(trials[k], 4), -k[0], -k[1])
        )
        pick = choose(cv + bonus(margin, margin_product, hint), dev, names)
        cv_choices[strategy] = {r["id"]: names[j] for r, j in zip(dev, pick, strict=True)}
        _FULL_CHOICES[strategy] = [names[j] for j in pick]
        chosen = ys[np.arange(len(dev)), pick]
        by_type: dict = defaultdict(list)
        for r, f in zip(dev, chosen, strict=True):
            by_type[r["type"]].append(f)
        models = {n: train(x, ys[:, j]) for j, n in enumerate(names)}
        gate = None
        if strategy in ROUTES:
            gate, gate_figures, cv_choices[strategy] = train_gate(
                dev, strategy, ys, chosen, groups, types, traf
            )
            chosen = np.array([ys[i, names.index(cv_choices[strategy][r["id"]])]
                               for i, r in enumerate(dev)])  # fmt: skip
            by_type = defaultdict(list)
            for r, f in zip(dev, chosen, strict=True):
                by_type[r["type"]].append(f)
        xa, _ = matrix(aeb, strategy)
        pa = np.column_stack([models[n].predict(xa) for n in names])
        hint_a = np.array([product_hint(r["page"]) for r in aeb])
        pa = choose(pa + bonus(margin, margin_product, hint_a), aeb, names)
        ya = np.array([[r[n]["f1"] for n in names] for r in aeb])
        figures[strategy] = {
            "extractors": names,
            "margin": margin,
            "margin_product": margin_product,
            "dev_f1_cv_by_margins": {f"{m} {mp}": round(v, 4) for (m, mp), v in trials.items()},
            "margins_beating_trafilatura_on_every_type": [f"{m} {mp}" for m, mp in allowed],
            "dev_f1_cv": round(float(chosen.mean()), 4),
            "dev_f1_oracle": round(float(ys.max(axis=1).mean()), 4),
            "dev_f1_by_type_cv": {
                t: round(statistics.mean(v), 4) for t, v in sorted(by_type.items())
            },
            "dev_chosen": {
                n: sum(1 for c in cv_choices[strategy].values() if c == n) for n in names
            },  # fmt: skip
            "gate": gate_figures if gate else None,
            "aeb_f1": round(float(ya[np.arange(len(aeb)), pa].mean()), 4),
        }
        shipped["strategies"][strategy] = {
            "extractors": names,
            "features": cols,
            "default": DEFAULT[strategy],
            "margin": margin,
            "margin_product": margin_product,
            "models": {n: m.model_to_string() for n, m in models.items()},
            "figures": figures[strategy],
        }
        if gate:
            shipped["strategies"][strategy]["gate"] = gate
        print(strategy, json.dumps(figures[strategy]))
    if os.environ.get("STRATEGIES"):
        return
    # each dev page's cross-validated choice: bench/extract_strategy_bench.py scores them
    CV_CHOICES.write_text(json.dumps(cv_choices))
    CHOOSER_PATH.parent.mkdir(parents=True, exist_ok=True)
    CHOOSER_PATH.write_text(json.dumps(shipped, sort_keys=True))
    out = ROOT / "bench" / "results" / "extract_chooser_cv.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"wrote {CHOOSER_PATH} and {out}")


if __name__ == "__main__":
    main()
