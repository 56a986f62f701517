"""FineWeb-2's per-language rules, ours against datatrove 0.10.1's, language by language.

Documents built from ../shared/data: the 670 non-empty Common Crawl texts (dolma, 53
languages), the non-English article bodies of the scrapinghub benchmark, and the pages of the
shared WARCs extracted as the preset extracts them; and from each of those with at least 4
lines, sub-documents of consecutive lines (halves, thirds, quarters: real text at other lengths,
so languages with a handful of source documents reach 30). Each is labelled by lid.176 and
mapped to its recipe key as the pipeline maps it. Ours: conf/fineweb2.yaml's rules (recipe per
key, datatrove's word splitter per language). Theirs: bench/lang_rules_datatrove.py in the
anchor venv, the filters fineweb-2-pipeline.py builds from the same config files. Printed and
written to bench/results/lang_rules_agreement.json: keep/drop agreement per key (every key with
at least 30 documents, and all), every disagreement with both sides' reasons, and the rule
cost per document by script, ours and datatrove's, medians.

    python bench/lang_rules_agreement_bench.py [--anchor-python bench/.venv-anchor/bin/python]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import load_config  # noqa: E402
from curate_pipeline.document.langid import load_fasttext, predict_languages  # noqa: E402
from curate_pipeline.document.text.lang_words import (  # noqa: E402
    FALLBACK,
    REPLACED,
    assignment,
    split_words_in,  # noqa: E402
)
from curate_pipeline.document.text.rules import checks, evaluate  # noqa: E402
from curate_pipeline.stages.recipe_files import load_recipes, splitter_table  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
WORK = ROOT / "bench" / "work" / "lang_rules"
MIN_DOCS = 30


def sources() -> list[tuple[str, str]]:
    out = []
    for path in sorted((DATA / "text").glob("dolma_*.jsonl")):
        for line in filter(None, path.read_text().split("\n")):
            row = json.loads(line)
            if row["text"].strip():
                out.append((f"dolma/{row['id']}", row["text"]))
    aeb = json.loads((DATA / "extraction" / "scrapinghub_aeb" / "ground-truth.json").read_text())
    for key, item in sorted(aeb.items()):
        out.append((f"aeb/{key[:12]}", item.get("articleBody") or ""))
    out.extend(warc_texts())
    return [(i, t) for i, t in out if t.strip()]


def warc_texts() -> list[tuple[str, str]]:
    """The shared WARCs' HTML pages, extracted with the preset's settings."""
    from warcio.archiveiterator import ArchiveIterator

    from curate_pipeline.document.extract import extract_text

    extract = load_config(ROOT / "conf" / "fineweb2.yaml").extract
    out = []
    for path in sorted((DATA / "warc").glob("*.warc*")):
        if ".wet" in path.name or ".wat" in path.name:
            continue
        with path.open("rb") as fh:
            for n, rec in enumerate(ArchiveIterator(fh)):
                ctype = rec.http_headers.get_header("Content-Type", "") if rec.http_headers else ""
                if rec.rec_type != "response" or "html" not in ctype:
                    continue
                try:
                    html = rec.content_stream().read().decode("utf-8", "replace")
                    text, _ = extract_text(html, extract)
                except Exception:  # noqa: BLE001  an unextractable page is no document
                    continue
                if text:
                    out.append((f"warc/{path.name[:24]}/{n}", text))
    return out


def documents() -> list[dict]:
    """Sources and their sub-documents of consecutive lines, labelled and keyed."""
    cfg = load_config(ROOT / "conf" / "fineweb2.yaml")
    recipes = load_recipes(cfg)
    table = splitter_table(cfg)
    lid = load_fasttext(str(ROOT / "models" / "lid.176.ftz"))
    docs = []
    for sid, text in sources():
        docs.append((sid, text))
        lines = [ln for ln in text.split("\n") if ln.strip()]
        if len(lines) >= 4:
            for parts in (2, 3, 4):
                size = -(-len(lines) // parts)
                for k in range(parts):
                    piece = "\n".join(lines[k * size : (k + 1) * size])
                    if piece.strip():
                        docs.append((f"{sid}#{parts}.{k}", piece))
    preds = predict_languages(lid, [t for _, t in docs])
    out = []
    for (did, text), (label, score) in zip(docs, preds, strict=True):
        key = recipes.key_for(label, text)
        splitter = assignment(table, key, label)
        raw = table.get(key or "") or table.get(label)
        fallback = raw is not None and raw[0] in REPLACED
        out.append({"id": did, "text": text, "label": label, "score": score, "key": key,
                    "splitter": list(splitter), "fallback": fallback or splitter == FALLBACK
                    and raw is None})  # fmt: skip
    return out


def ours(docs: list[dict]) -> dict[str, dict]:
    cfg = load_config(ROOT / "conf" / "fineweb2.yaml")
    recipes = load_recipes(cfg)
    base = (cfg.rules, checks(cfg.rules))
    out = {}
    for d in docs:
        conf, chks = recipes.rules(d["key"]) if d["key"] else base
        split = partial(split_words_in, splitter=tuple(d["splitter"]))
        lang = d["key"] or d["label"]
        evaluate(d["text"], lang, conf, chks, split)  # first call: splitters load, not timed
        t0 = time.perf_counter()
        res = evaluate(d["text"], lang, conf, chks, split)
        out[d["id"]] = {
            "reason": res.failed[0] if res.failed else None,
            "detail": "; ".join(res.details),
            "seconds": time.perf_counter() - t0,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchor-python", default=str(ROOT / "bench" / ".venv-anchor" / "bin" /
                                                  "python"))  # fmt: skip
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    docs = documents()
    src, dst = WORK / "texts.jsonl", WORK / "datatrove.jsonl"
    with src.open("w") as fh:
        for d in docs:
            fh.write(json.dumps({k: d[k] for k in ("id", "text", "key", "label", "fallback")})
                     + "\n")  # fmt: skip
    subprocess.run([args.anchor_python, str(ROOT / "bench" / "lang_rules_datatrove.py"),
                    str(ROOT / "conf" / "fineweb2" / "configs"), str(src), str(dst)],
                   check=True)  # fmt: skip
    theirs = {r["id"]: r for r in map(json.loads, filter(None, dst.read_text().split("\n")))}
    mine = ours(docs)

    by_key: dict[str, list[dict]] = defaultdict(list)
    for d in docs:
        by_key[d["key"] or f"{d['label']} (no recipe)"].append(d)
    per_key, cases = {}, []
    for key, items in sorted(by_key.items(), key=lambda kv: -len(kv[1])):
        diffs = [d for d in items if (mine[d["id"]]["reason"] is None)
                 != (theirs[d["id"]]["reason"] is None)]  # fmt: skip
        kept = sum(mine[d["id"]]["reason"] is None for d in items)
        per_key[key] = {"documents": len(items),
                        "source_documents": len({d["id"].split("#")[0] for d in items}),
                        "kept_ours": kept,
                        "kept_datatrove": sum(theirs[d["id"]]["reason"] is None for d in items),
                        "agreement": round(1 - len(diffs) / len(items), 4),
                        "splitter": "/".join(items[0]["splitter"]),
                        "fallback_splitter": items[0]["fallback"]}  # fmt: skip
        cases += [{"id": d["id"], "key": key, "ours": mine[d["id"]]["detail"] or None,
                   "datatrove": theirs[d["id"]]["reason"]} for d in diffs]  # fmt: skip
    big = {k: v for k, v in per_key.items() if v["documents"] >= MIN_DOCS}
    total_diff = len(cases)

    by_script: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for d in docs:
        script = d["key"].split("_")[1] if d["key"] else "Latn (English)"
        by_script[script].append((mine[d["id"]]["seconds"], theirs[d["id"]]["seconds"],
                                  len(d["text"])))  # fmt: skip
    cost = {s: {"documents": len(v),
                "ours_ms_median": round(statistics.median(x[0] for x in v) * 1000, 3),
                "datatrove_ms_median": round(statistics.median(x[1] for x in v) * 1000, 3),
                "ours_ms_per_1k_chars_median": round(statistics.median(
                    x[0] * 1e6 / max(x[2], 1) for x in v), 3),
                "ratio_median": round(statistics.median(x[0] / x[1] for x in v if x[1]), 3)}
            for s, v in sorted(by_script.items(), key=lambda kv: -len(kv[1]))}  # fmt: skip
    result = {"documents": len(docs), "keys": len(per_key),
              "agreement_all": round(1 - total_diff / len(docs), 4),
              "keys_with_30": {k: v["agreement"] for k, v in big.items()},
              "per_key": per_key, "disagreements": cases, "cost_by_script": cost}  # fmt: skip
    print(f"{len(docs)} documents, {len(per_key)} keys; agreement {result['agreement_all']}")
    for k, v in big.items():
        print(
            f"  {k:24s} {v['documents']:5d} docs  agreement {v['agreement']:.4f}  "
            f"kept {v['kept_ours']}/{v['kept_datatrove']}  {v['splitter']}"
        )
    print(f"{len(cases)} disagreements")
    for c in cases[:40]:
        print("  ", c["id"], c["key"], "| ours:", (c["ours"] or "kept")[:90], "| dt:",
              c["datatrove"] or "kept")  # fmt: skip
    print("cost by script (ms/doc median, ours vs datatrove):")
    for s, v in cost.items():
        print(
            f"  {s:16s} {v['documents']:5d}  {v['ours_ms_median']:8.3f} "
            f"{v['datatrove_ms_median']:8.3f}  x{v['ratio_median']}"
        )
    dest = ROOT / "bench" / "results" / "lang_rules_agreement.json"
    dest.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
