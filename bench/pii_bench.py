"""PII precision and recall, ours against datatrove's PIIFormatter, on the labelled set
(bench/data/pii_labelled.jsonl, built by bench/pii_labelled_build.py: strings from the real
texts of ../shared/data in their context, and composed ones, half PII, half look-alikes).

A string counts as replaced when it is no longer in its context after formatting. Both sides
run with FineWeb's settings (public IPs only). Per kind (e-mail, IPv4, IPv6) and overall;
the strings each side gets wrong are listed.

    python bench/pii_bench.py [--anchor-python bench/.venv-anchor/bin/python]
Writes bench/results/pii.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import PiiConf  # noqa: E402
from curate_pipeline.document.text.pii import redact  # noqa: E402

SET = ROOT / "bench" / "data" / "pii_labelled.jsonl"
RESULTS = ROOT / "bench" / "results"


def _ours(rows: list[dict]) -> dict[int, str]:
    c = PiiConf()
    e, i4, i6 = tuple(c.email_replacements), tuple(c.ip_replacements), tuple(c.ipv6_replacements)
    return {r["id"]: redact(r["context"], e, i4, i6, c.public_ips_only)[0] for r in rows}


def _theirs(rows: list[dict], python: str) -> dict[int, str]:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        subprocess.run([python, str(ROOT / "bench" / "pii_datatrove.py"), str(src), str(dst)],
                       check=True)  # fmt: skip
        lines = [line for line in dst.read_text().split("\n") if line]
        return {d["id"]: d["out"] for d in map(json.loads, lines)}


def score(rows: list[dict], outputs: dict[int, str]) -> dict:
    out: dict = {}
    wrong = []
    for kind in ("email", "ipv4", "ipv6", "all"):
        tp = fp = fn = tn = 0
        for r in rows:
            if kind != "all" and r["kind"] != kind:
                continue
            replaced = r["target"] not in outputs[r["id"]]
            if replaced and r["pii"]:
                tp += 1
            elif replaced:
                fp += 1
                if kind == "all":
                    wrong.append(("replaced", r["kind"], r["target"], r["origin"]))
            elif r["pii"]:
                fn += 1
                if kind == "all":
                    wrong.append(("missed", r["kind"], r["target"], r["origin"]))
            else:
                tn += 1
        out[kind] = {
            "pii": tp + fn, "look_alikes": fp + tn, "tp": tp, "fp": fp, "fn": fn,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        }  # fmt: skip
    out["wrong"] = wrong
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    anchor = ROOT / "bench" / ".venv-anchor" / "bin" / "python"
    ap.add_argument("--anchor-python", default=str(anchor))
    args = ap.parse_args()
    rows = [json.loads(line) for line in SET.read_text().split("\n") if line]
    result = {"strings": len(rows), "pii": sum(r["pii"] for r in rows),
              "ours": score(rows, _ours(rows))}  # fmt: skip
    if Path(args.anchor_python).exists():
        result["datatrove"] = score(rows, _theirs(rows, args.anchor_python))
    else:
        print(f"no anchor venv at {args.anchor_python}: "
              "make bench/.venv-anchor/bin/datatrove-ready")  # fmt: skip
    print(f"{result['strings']} strings, {result['pii']} PII")
    for side in ("ours", "datatrove"):
        if side not in result:
            continue
        s = result[side]
        cells = ", ".join(
            f"{k} P {s[k]['precision']} R {s[k]['recall']} (fp {s[k]['fp']}, fn {s[k]['fn']})"
            for k in ("email", "ipv4", "ipv6", "all")
        )
        print(f"{side:>9}: {cells}")
        for w in s["wrong"]:
            print(f"           {w}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pii.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
