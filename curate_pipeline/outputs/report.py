"""The run report: DIR/report.json and a self-contained DIR/report.html (inline SVG plots,
no network resources, no scripts), rebuilt from a finished run's manifest and budget without
Spark. It reads aggregates only (the run counted them in Spark): its cost does not grow with
the corpus.

It shows the funnel (records reaching each stage, read to kept), rejection reasons, rule
failures, languages, the quality-score histogram with its threshold, duplicate cluster sizes,
the token budget per source, and the time each stage took.
"""

from __future__ import annotations

import html
import io
import json
import math
from pathlib import Path

from curate_pipeline.location import Location
from curate_pipeline.outputs.publish.versions import published_dir

# Runs written before the manifest named each stage's `passed` label (the registry's
# `Stage.passed` now): the labels they had then.
EARLIER_LABELS = {
    "extract": "text extracted (or language decided before)",
    "langid": "language kept",
    "rules": "rules passed",
    "quality": "quality passed",
    "decontamination": "not contaminated",
    "exact_dedup": "no exact duplicate",
    "near_dedup": "no near duplicate",
    "tokenize": "tokenized",
}


def report_data(out: str | Path | Location) -> dict:
    """From an output's current version (or the version folder given)."""
    out = published_dir(out)
    manifest = json.loads((out / "manifest.json").read_text())
    budget_path = out / "budget.json"
    budget = json.loads(budget_path.read_text()) if budget_path.is_file() else None
    stages = manifest["stages"]
    # the records reaching each stage, under the label of what passed the stage before it
    labelled = any("passed" in s for s in stages)
    funnel, label = [], "records read"
    for s in stages:
        passed = s.get("passed") if labelled else EARLIER_LABELS.get(s["name"])
        if passed:
            funnel.append({"stage": s["name"], "label": label, "count": s["rows"]})
            label = passed
    funnel.append({"stage": "kept", "label": "kept", "count": manifest["counts"]["kept"]})
    dist = manifest.get("distributions", {})
    width = dist.get("quality_score_bin_width", 0.25)
    bins = {int(k): n for k, n in dist.get("quality_score_bins", {}).items()}
    lang_width = dist.get("lang_score_bin_width", 0.05)
    lang_bins = {int(k): n for k, n in dist.get("lang_score_bins", {}).items()}
    cfg = manifest["config"]
    return {
        "output": manifest["output"],
        "counts": manifest["counts"],
        "funnel": funnel,
        "rejections": manifest["counts"]["rejected"],
        "rule_failures": manifest.get("rule_failures", {}),
        "languages": manifest.get("languages", {}),
        "languages_scores": {
            "threshold": cfg["langid"]["threshold"],
            "bin_width": lang_width,
            "histogram": [[b * lang_width, n] for b, n in sorted(lang_bins.items())],
        },
        "examples": manifest.get("examples", {}),
        "quality": {
            "model": manifest.get("quality_model"),
            "threshold": cfg["quality"]["threshold"],
            "documents_scored": sum(bins.values()),
            # [lower edge, documents] of each non-empty bin of `bin_width`
            "bin_width": width,
            "histogram": [[b * width, n] for b, n in sorted(bins.items())],
        },
        "duplicates": {
            "near_cluster_sizes": dist.get("near_cluster_sizes", {}),
            "exact_group_sizes": dist.get("exact_group_sizes", {}),
        },
        "decontamination": manifest.get("decontamination", {}),
        "pii": manifest.get("pii", {}),
        "budget": budget,
        "stages": stages,
        "seconds": manifest["seconds"],
    }


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _bar(labels: list[str], values: list[float], title: str, horizontal: bool = True) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, max(1.6, 0.35 * len(labels) + 0.8)))
    if horizontal:
        ax.barh(labels[::-1], values[::-1], color="#4a7fb5")
    else:
        ax.bar(labels, values, color="#4a7fb5")
    ax.set_title(title)
    return _svg(fig)


def _regroup(histogram: list[list[float]], width: float, most: int = 30,
             tail: float = 0.01) -> tuple[list, list, int]:  # fmt: skip
    """Fine bins (lower edge, count) merged into at most `most` equal bins over the central
    mass: the `tail` share of documents at each end goes into the first or last bin, so a few
    outliers do not squeeze everyone else into one bar. Returns (edges, counts, clipped)."""
    total = sum(c for _, c in histogram)
    cut = tail * total
    lo_i, hi_i, seen = 0, len(histogram) - 1, 0
    for i, (_, c) in enumerate(histogram):  # first bin past the lower tail
        seen += c
        if seen > cut:
            lo_i = i
            break
    seen = 0
    for i in range(len(histogram) - 1, -1, -1):  # last bin before the upper tail
        seen += histogram[i][1]
        if seen > cut:
            hi_i = i
            break
    lo = histogram[lo_i][0]
    span = histogram[hi_i][0] + width - lo
    factor = max(1, math.ceil(span / width / most))
    step = width * factor
    n = max(1, math.ceil(round(span / step, 9)))
    counts = [0] * n
    clipped = 0
    for edge, c in histogram:
        k = int(round((edge - lo) / width)) // factor
        if k < 0 or k >= n:
            clipped += c
        counts[min(n - 1, max(0, k))] += c
    return [lo + i * step for i in range(n + 1)], counts, clipped


def _histogram(histogram: list[list[float]], width: float, threshold: float,
               xlabel: str = "quality score (log-odds, reference vs crawl)") -> str:  # fmt: skip
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges, counts, clipped = _regroup(histogram, width)
    fig, ax = plt.subplots(figsize=(7, 2.8))
    ax.bar(edges[:-1], counts, width=edges[1] - edges[0], align="edge", color="#4a7fb5",
           edgecolor="white")  # fmt: skip
    note = f" ({clipped} outliers counted in the end bins)" if clipped else ""
    if edges[0] <= threshold <= edges[-1]:
        ax.axvline(threshold, color="#c0392b", linestyle="--", label=f"threshold {threshold:g}")
        ax.legend()
    else:
        note += f"; threshold {threshold:g} off this range"
    ax.set_xlabel(xlabel + note)
    ax.set_ylabel("documents")
    return _svg(fig)


def _examples(items: list[dict]) -> str:
    rows = [[e["url"] or "", e["detail"] or "",
             " ".join((e["text"] or "(no text: dropped before extraction)").split())]
            for e in items]  # fmt: skip
    return _table(["url", "detail", "text (first 300 characters)"], rows, "examples")


def _table(headers: list[str], rows: list[list], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0}td,th{padding:.25em .8em;border:1px solid #ddd}
table.examples td{font-size:.85em;vertical-align:top;max-width:28em;word-break:break-word}
th{background:#f3f3f3;text-align:left}td.num{text-align:right}
.funnel td.bar span{display:inline-block;background:#4a7fb5;height:1em}
"""


def render_html(d: dict) -> str:
    c = d["counts"]
    top = max((f["count"] for f in d["funnel"]), default=1) or 1
    funnel_rows = "".join(
        f"<tr><td>{html.escape(f['label'])}</td>"
        f'<td class="num funnel-count" data-stage="{f["stage"]}">{f["count"]}</td>'
        f'<td class="bar"><span style="width:{300 * f["count"] // top}px"></span></td></tr>'
        for f in d["funnel"]
    )
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>curate run report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>curate run report</h1>",
        f"<p>{html.escape(d['output'])}: read <span id='read'>{c['read']}</span> = kept "
        f"<span id='kept'>{c['kept']}</span> + rejected "
        f"<span id='rejected'>{sum(c['rejected'].values())}</span>, in {d['seconds']:.1f} s.</p>",
        "<h2>Funnel</h2><p>Records reaching each step, from read to kept.</p>",
        f'<table class="funnel"><tbody>{funnel_rows}</tbody></table>',
        "<h2>Why records were dropped</h2>",
        _table(
            ["stage:reason", "records"], sorted(d["rejections"].items(), key=lambda kv: -kv[1])
        ),  # fmt: skip
    ]
    if d["rule_failures"]:
        parts += ["<h2>Rule failures</h2><p>Documents breaking each rule (one document can "
                  "break several).</p>",
                  _table(["rule", "documents"], list(d["rule_failures"].items()))]  # fmt: skip
    if d["languages"]:
        langs = list(d["languages"].items())[:20]
        parts += ["<h2>Languages</h2>",
                  _bar([k for k, _ in langs], [v["docs"] for _, v in langs],
                       "documents per language (top 20)")]  # fmt: skip
    ls = d["languages_scores"]
    if ls["histogram"]:
        parts += ["<h3>Language-ID confidence</h3>",
                  _histogram(ls["histogram"], ls["bin_width"], ls["threshold"],
                             "best label's probability (lid.176)")]  # fmt: skip
    q = d["quality"]
    model = q.get("model")
    if model and model.get("classifiers"):  # the registry: each published classifier
        parts += ["<h2>Quality scores</h2>",
                  _table(["classifier", "kind", "model", "preprocessing", "score", "column",
                          "drops below"],
                         [[c["name"], c["kind"], c["path"], c["preprocessing"],
                           f"{c['output']} of {c['label'] or 'logit 0'}", c["score_column"],
                           "" if c["threshold"] is None else c["threshold"]]
                          for c in model["classifiers"]])]  # fmt: skip
    elif model:
        toy = (" <strong>A toy model (fewer than 1,000 training documents): not for real "
               "data.</strong>") if model.get("toy") else ""  # fmt: skip
        parts += ["<h2>Quality scores</h2>",
                  f"<p>Scored by {html.escape(model['path'])} ({html.escape(model['backend'])}, "
                  f"trained on {model.get('documents') or 'an unknown number of'} documents)."
                  f"{toy}</p>"]  # fmt: skip
    if q["histogram"]:
        parts += [f"<p>{q['documents_scored']} documents scored.</p>",
                  _histogram(q["histogram"], q["bin_width"], q["threshold"])]  # fmt: skip
    ex = d["examples"]
    if ex.get("rejected"):
        parts += ["<h2>Examples of what was dropped</h2><p>Up to three documents per reason, "
                  "chosen by a hash of their id (the same on every run): read them before "
                  "trusting a threshold.</p>"]  # fmt: skip
        for reason, items in ex["rejected"].items():
            parts += [f"<h3>{html.escape(reason)}</h3>", _examples(items)]
    if ex.get("kept"):
        parts += ["<h2>Examples of what was kept</h2><p>Up to three documents per source.</p>"]
        for src, items in ex["kept"].items():
            parts += [f"<h3>{html.escape(src or '(no source)')}</h3>", _examples(items)]
    dup = d["duplicates"]
    if dup["near_cluster_sizes"] or dup["exact_group_sizes"]:
        rows = [["exact", k, v] for k, v in dup["exact_group_sizes"].items()]
        rows += [["near", k, v] for k, v in dup["near_cluster_sizes"].items()]
        parts += ["<h2>Duplicates</h2>", _table(["kind", "cluster size", "kept documents"], rows)]
    dc = d["decontamination"]
    if dc.get("sets"):
        rows = [[name, f["items"], f["items_too_short"], f["ngrams"], f["documents_matched"],
                 f["documents_dropped"], f["documents_trimmed"], f["chars_removed"]]
                for name, f in dc["sets"].items()]  # fmt: skip
        parts += ["<h2>Decontamination</h2>",
                  f"<p>{dc['ngram']}-grams of normalised words, policy {dc['policy']}.</p>",
                  _table(["set", "items", "too short", "n-grams", "documents matched", "dropped",
                          "trimmed", "chars removed"], rows)]  # fmt: skip
    if d["pii"]:
        parts += ["<h2>PII replaced</h2>", _table(["figure", "count"], list(d["pii"].items()))]
    b = d["budget"]
    if b:
        rows = [[s, v["weight"] if v["weight"] is not None else "natural", f"{v['epochs']:.2f}",
                 v["docs_before"], v["tokens_before"], v["docs_after"], v["tokens_after"]]
                for s, v in b["sources"].items()]  # fmt: skip
        comp = b["compute"]
        parts += ["<h2>Token budget</h2>",
                  _table(["source", "weight", "epochs", "docs before", "tokens before",
                          "docs after", "tokens after"], rows),
                  f"<p>Total D = {b['total_tokens']:,} tokens in {b['shards']} shards. "
                  f"Compute-optimal model: {comp['compute_optimal_params']:,.0f} parameters, "
                  f"{comp['compute_optimal_flops']:.3g} FLOPs, "
                  f"{comp['compute_optimal_gpu_hours']:.3g} GPU-hours at "
                  f"{comp['flops_per_gpu'] / 1e12:g} TFLOP/s.</p>"]  # fmt: skip
    parts += ["<h2>Stage timings</h2>",
              _table(["stage", "status", "seconds", "rows"],
                     [[s["name"], s["status"], s["seconds"], s["rows"]] for s in d["stages"]]),
              _bar([s["name"] for s in d["stages"]], [s["seconds"] for s in d["stages"]],
                   "seconds per stage"),
              "</body></html>"]  # fmt: skip
    return "\n".join(parts)


def preload() -> None:
    """Import matplotlib (~0.5 s) while Spark starts, so the report at the end of a run does
    not wait for it (curate_pipeline/run/driver_preload.py calls this in a thread)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))  # loads the fonts and the SVG backend too
    ax.set_title("warm-up")
    _svg(fig)


def write_report(out_dir: str | Path | Location) -> tuple[Location, Location]:
    out = published_dir(out_dir)
    data = report_data(out)
    (out / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "report.html").write_text(render_html(data))
    return out / "report.json", out / "report.html"
