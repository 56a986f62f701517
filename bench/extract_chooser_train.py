"""Train the extraction chooser on four benchmarks, validated leaving one benchmark out; ship it.

For each strategy (pipeline.document.extract_strategy.STRATEGIES) and each extractor it runs,
a LightGBM regressor predicts that extractor's score on a page (the page's benchmark's own
measure: bag-of-words F1, or snippet F1 on trafilatura's evaluation) from the page's features
and the candidate outputs' features (pipeline.document.extract_features); the chooser keeps
the extractor with the highest prediction, the strategy's default (trafilatura's own output
for `balanced` and `best`) unless another is predicted better by the strategy's margin.

**Leave one benchmark out.** For each benchmark (bench/extract_benchmarks.py: WCXB dev,
ScrapingHub AEB, trafilatura's evaluation, Mozilla readability's pages) the whole recipe runs
on the other three: 5-fold cross-validation grouped by site picks the margins and the gate's
margin, models are fit on all three, and the left-out benchmark is scored with them. Its
figures are the ones reported (bench/results/extract_chooser_lobo.json): each page is scored
by a chooser that saw neither its site nor its benchmark. The shipped models are the same
recipe on all four. Each benchmark weighs the same in training (sample weights) and in the
choice of margins: the margins are those with the best mean gain over trafilatura across the
benchmarks among those that leave no benchmark more than 0.005 below trafilatura (for `fast`,
none more than 0.03 below); the gate skips the later extractors on the most pages while
every benchmark stays within 0.002 of the full chooser. Seeds fixed, one thread, LightGBM's
deterministic mode: the same data gives the same file byte for byte.

Reads bench/work/extract_candidates.jsonl.gz (bench/extract_candidates.py); writes
pipeline/document/extract_chooser.json, bench/results/extract_chooser_lobo.json and each
page's left-out choice (bench/work/extract_chooser_lobo_choices.json, which
bench/extract_strategy_bench.py scores).

    make extract-chooser     # candidates, training, the strategies' benchmark
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import lightgbm as lgb
import numpy as np
from sklearn.model_selection import GroupKFold

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from extract_benchmarks import BENCHMARKS  # noqa: E402
from extract_candidates import html_of, load_rows  # noqa: E402

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
LOBO_CHOICES = ROOT / "bench" / "work" / "extract_chooser_lobo_choices.json"
LOBO_OUT = ROOT / "bench" / "results" / "extract_chooser_lobo.json"
ROUNDS = int(os.environ.get("ROUNDS", 200))
GATE_MARGINS = (-0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.2, 10.0)  # 10: never skip
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 1.0)
FLOOR = {"fast": -0.03}  # how far below trafilatura a benchmark may fall (others: -0.005)
FLOOR_DEFAULT = -0.005


def load() -> list[dict]:
    rows = load_rows()
    for r in rows:
        r["page"] = page_part(html_of(r), r["url"])
    return rows


def matrix(rows: list[dict], strategy: str, upto: int | None = None) -> np.ndarray:
    names = STRATEGIES[strategy][:upto]
    feats = [features(r["page"], {n: r[n]["text"] for n in names}) for r in rows]
    cols = sorted(feats[0])
    if os.environ.get("OUTPUT_FEATURES"):  # experiment: the outputs' features only
        cols = [c for c in cols if any(n in c for n in names)]
    return np.array([[f[c] for c in cols] for f in feats], dtype=np.float64), cols


def weights(rows: list[dict]) -> np.ndarray:
    """Each benchmark weighs the same, whatever its number of pages."""
    count: dict = defaultdict(int)
    for r in rows:
        count[r["bench"]] += 1
    return np.array([len(rows) / (len(count) * count[r["bench"]]) for r in rows])


def train(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> lgb.Booster:
    return lgb.train(PARAMS, lgb.Dataset(x, y, weight=w, params={"verbose": -1}), ROUNDS)


def choose(preds: np.ndarray, rows: list[dict], names: list[str]) -> np.ndarray:
    # the runtime's rule: the highest prediction among non-empty outputs
    return np.array([max(0, pick(list(p), [r[n]["text"] for n in names])) for p, r in
                     zip(preds, rows, strict=True)])  # fmt: skip


def per_bench(values: np.ndarray, benches: np.ndarray) -> dict[str, float]:
    return {b: float(values[benches == b].mean()) for b in sorted(set(benches))}


class Recipe:
    """One strategy's chooser fit on some rows: models, margins, gate (pipeline's rule)."""

    def __init__(self, strategy: str):
        self.strategy = strategy
        self.names = STRATEGIES[strategy]
        self.base = self.names.index(DEFAULT[strategy])
        self.first = ROUTES.get(strategy)
        self.floor = FLOOR.get(strategy, FLOOR_DEFAULT)

    def fit(self, rows: list[dict], x: np.ndarray, xg: np.ndarray | None) -> dict:
        names, n = self.names, len(rows)
        ys = np.array([[r[e]["f1"] for e in names] for r in rows])
        w = weights(rows)
        groups = [r["site"] for r in rows]
        benches = np.array([r["bench"] for r in rows])
        traf = np.array([r["trafilatura"]["f1"] for r in rows])
        cv = np.zeros_like(ys)
        cvg = np.zeros_like(ys)
        for tr, te in GroupKFold(n_splits=5).split(x, groups=groups):
            for j in range(len(names)):
                cv[te, j] = train(x[tr], ys[tr, j], w[tr]).predict(x[te])
                if xg is not None:
                    cvg[te, j] = train(xg[tr], ys[tr, j], w[tr]).predict(xg[te])
        hint = np.array([product_hint(r["page"]) for r in rows])
        trials = {}
        for m in MARGINS:
            for mp in MARGINS:
                p = choose(cv + self._bonus(m, mp, hint), rows, names)
                got = ys[np.arange(n), p]
                gain = per_bench(got - traf, benches)
                trials[m, mp] = (statistics.mean(gain.values()), min(gain.values()), p)
        allowed = [k for k, v in trials.items() if v[1] >= self.floor]
        margin, margin_product = max(
            allowed or trials, key=lambda k: (round(trials[k][0], 4), -k[0], -k[1])
        )
        pick_full = trials[margin, margin_product][2]
        spec = {
            "margin": margin,
            "margin_product": margin_product,
            "margins_cv": {
                f"{m} {mp}": [round(v[0], 4), round(v[1], 4)] for (m, mp), v in trials.items()
            },  # fmt: skip
            "models": [train(x, ys[:, j], w) for j in range(len(names))],
        }
        if xg is not None:
            spec.update(self._fit_gate(rows, ys, cvg, pick_full, hint, benches, traf, xg, w))
        return spec

    def _fit_gate(self, rows, ys, cvg, pick_full, hint, benches, traf, xg, w) -> dict:
        """The gate: models on the first extractors' outputs only. Its margin skips the later
        extractors on the most pages while every benchmark stays within 0.002 of the full
        chooser and above the floor."""
        n, first = len(rows), self.first
        full = ys[np.arange(n), pick_full]
        cheap = np.array([pick(list(cvg[i, :first]), [rows[i][e]["text"] for e in
                          self.names[:first]]) for i in range(n)])  # fmt: skip
        has = cheap >= 0
        best_cheap = np.where(has, cvg[np.arange(n), np.maximum(cheap, 0)], -np.inf)
        rest = cvg[:, first:].max(axis=1)
        trials = {}
        full_b = per_bench(full, benches)
        for g in GATE_MARGINS:
            skip = has & ~hint & (best_cheap > rest + g)
            got = np.where(skip, ys[np.arange(n), np.maximum(cheap, 0)], full)
            by = per_bench(got, benches)
            gain = per_bench(got - traf, benches)
            ok = all(by[b] >= full_b[b] - 0.002 for b in by) and min(gain.values()) >= self.floor
            trials[g] = (float(skip.mean()), ok)
        g = max([k for k, v in trials.items() if v[1]] or [max(GATE_MARGINS)],
                key=lambda k: (trials[k][0], -k))  # fmt: skip
        return {
            "gate_margin": g,
            "gate_skipped_cv": round(trials[g][0], 4),
            "gate_models": [train(xg, ys[:, j], w) for j in range(len(self.names))],
        }

    def _bonus(self, m: float, mp: float, hints: np.ndarray) -> np.ndarray:
        return np.where(hints, mp, m)[:, None] * (np.arange(len(self.names)) == self.base)

    def apply(self, spec: dict, rows: list[dict], x: np.ndarray, xg) -> tuple[list, list]:
        """Each page's choice and whether the gate skipped the later extractors."""
        names, first = self.names, self.first
        hint = np.array([product_hint(r["page"]) for r in rows])
        preds = np.column_stack([m.predict(x) for m in spec["models"]])
        full = choose(preds + self._bonus(spec["margin"], spec["margin_product"], hint),
                      rows, names)  # fmt: skip
        if xg is None:
            return [names[j] for j in full], [False] * len(rows)
        pg = np.column_stack([m.predict(xg) for m in spec["gate_models"]])
        out, skipped = [], []
        for i, r in enumerate(rows):
            cheap = pick(list(pg[i, :first]), [r[e]["text"] for e in names[:first]])
            skip = (cheap >= 0 and not hint[i]
                    and pg[i, cheap] > pg[i, first:].max() + spec["gate_margin"])  # fmt: skip
            out.append(names[cheap] if skip else names[full[i]])
            skipped.append(bool(skip))
        return out, skipped


def figures(
    rows: list[dict], picks: list[str], skipped: list[bool], names: list[str], first: int | None
) -> dict:
    """Score and CPU of the chosen outputs, per benchmark, page type and language group,
    beside trafilatura's on the same pages."""
    out: dict = {}
    for key in ("bench", "type", "lang_group"):
        groups: dict = defaultdict(list)
        for r, p in zip(rows, picks, strict=True):
            if key == "type" and r["bench"] != "wcxb":
                continue
            groups[r[key]].append((r[p]["f1"], r["trafilatura"]["f1"]))
        out[key] = {g: {"pages": len(v), "f1": round(statistics.mean(a for a, _ in v), 4),
                        "trafilatura": round(statistics.mean(b for _, b in v), 4)}
                    for g, v in sorted(groups.items())}  # fmt: skip
    # CPU: every extractor that ran (the gate's skip spares the later ones), by benchmark
    cpu: dict = defaultdict(list)
    for r, s in zip(rows, skipped, strict=True):
        ran = names[:first] if s else names
        cpu[r["bench"]].append((sum(r[e]["ms"] for e in ran), r["trafilatura"]["ms"]))
    out["cpu_x_trafilatura"] = {b: round(sum(a for a, _ in v) / sum(t for _, t in v), 3)
                                for b, v in sorted(cpu.items())}  # fmt: skip
    out["gate_skipped"] = round(sum(skipped) / len(skipped), 4)
    out["chosen"] = {n: picks.count(n) for n in names}
    return out


def main() -> None:
    if os.environ.get("STRATEGIES"):  # experiments: other extractor sets, nothing written
        STRATEGIES.clear()
        STRATEGIES.update(json.loads(os.environ["STRATEGIES"]))
        DEFAULT.update(json.loads(os.environ.get("DEFAULTS", "{}")))
        ROUTES.clear()
        ROUTES.update(json.loads(os.environ.get("ROUTES", "{}")))
    rows = load()
    shipped: dict = {"strategies": {}, "trained_on": {b: sum(r["bench"] == b for r in rows)
                                                       for b in BENCHMARKS}}  # fmt: skip
    report: dict = {}
    lobo_choices: dict = {}
    for strategy, names in STRATEGIES.items():
        recipe = Recipe(strategy)
        x, cols = matrix(rows, strategy)
        xg, gcols = matrix(rows, strategy, recipe.first) if recipe.first else (None, None)
        picks: list[str] = [""] * len(rows)
        skipped = [False] * len(rows)
        margins = {}
        for left in BENCHMARKS:
            tr = np.array([r["bench"] != left for r in rows])
            te = ~tr
            train_rows = [r for r, t in zip(rows, tr, strict=True) if t]
            test_rows = [r for r, t in zip(rows, te, strict=True) if t]
            spec = recipe.fit(train_rows, x[tr], None if xg is None else xg[tr])
            got, skip = recipe.apply(spec, test_rows, x[te], None if xg is None else xg[te])
            for i, p, s in zip(np.flatnonzero(te), got, skip, strict=True):
                picks[i], skipped[i] = p, s
            margins[left] = {k: spec[k] for k in ("margin", "margin_product", "gate_margin")
                             if k in spec}  # fmt: skip
        lobo = figures(rows, picks, skipped, names, recipe.first)
        lobo["margins_when_left_out"] = margins
        lobo["oracle"] = {b: round(float(np.mean([max(r[e]["f1"] for e in names) for r in rows
                                                  if r["bench"] == b])), 4)
                          for b in BENCHMARKS}  # fmt: skip
        lobo_choices[strategy] = {r["id"]: p for r, p in zip(rows, picks, strict=True)}
        spec = recipe.fit(rows, x, xg)
        entry = {
            "extractors": names,
            "features": cols,
            "default": DEFAULT[strategy],
            "margin": spec["margin"],
            "margin_product": spec["margin_product"],
            "models": {
                n: m.model_to_string() for n, m in zip(names, spec["models"], strict=True)
            },  # fmt: skip
        }
        if xg is not None:
            entry["gate"] = {
                "features": gcols,
                "margin": spec["gate_margin"],
                "models": {
                    n: m.model_to_string() for n, m in zip(names, spec["gate_models"], strict=True)
                },  # fmt: skip
            }
            lobo["shipped_gate"] = {"margin": spec["gate_margin"],
                                    "skipped_cv": spec["gate_skipped_cv"]}  # fmt: skip
        lobo["shipped_margins"] = [spec["margin"], spec["margin_product"]]
        entry["figures"] = {k: lobo[k] for k in ("bench", "shipped_margins")}
        shipped["strategies"][strategy] = entry
        report[strategy] = lobo
        print(strategy, json.dumps({k: lobo[k] for k in ("bench", "cpu_x_trafilatura",
                                                          "gate_skipped", "chosen")}))  # fmt: skip
    if os.environ.get("STRATEGIES"):
        return
    LOBO_CHOICES.write_text(json.dumps(lobo_choices))
    CHOOSER_PATH.write_text(json.dumps(shipped, sort_keys=True))
    LOBO_OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {CHOOSER_PATH} and {LOBO_OUT}")


if __name__ == "__main__":
    main()
