"""Megatron-LM's own reader on our token shards: `tokens.format: megatron` output opened with
megatron-core's `IndexedDataset`, every document compared with our reader's tokens + EOT.

megatron-core pulls torch, so it lives in its own venv (`make bench-megatron` builds
bench/.venv-megatron from bench/requirements-megatron.txt). This script runs `curate run` on
the sample WARC, or the WARCs given (several shards, a merged dataset) in the project's venv,
then the check in the Megatron venv.

    python bench/megatron_check.py [--input WARC ...] [--rows-per-shard N]
        [--megatron-python bench/.venv-megatron/bin/python]

Writes bench/results/megatron.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / "work" / "megatron"

CHECK = r"""
import json, sys
import numpy as np
from megatron.core.datasets.indexed_dataset import IndexedDataset
import megatron.core
out = {"megatron_core": megatron.core.__version__, "datasets": {}}
expected = json.load(open(sys.argv[1]))
for prefix, docs in expected.items():
    ds = IndexedDataset(prefix)
    got = [ds[i].tolist() for i in range(len(ds))]
    out["datasets"][prefix] = {"documents": len(ds), "equal": got == docs,
                               "dtype": str(ds.index.dtype)}
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--megatron-python", default=str(ROOT / "bench" / ".venv-megatron" / "bin" / "python")
    )
    ap.add_argument("--input", nargs="*", help="WARC files (default: the project's sample)")
    ap.add_argument("--rows-per-shard", type=int, default=1)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from curate_pipeline.config import load_config
    from curate_pipeline.examples.sample import write_sample_warc
    from curate_pipeline.outputs.publish.versions import published_path
    from curate_pipeline.outputs.tokens.shards import TokenShards

    WORK.mkdir(parents=True, exist_ok=True)
    inputs = args.input
    if not inputs:
        inputs = [str(WORK / "sample.warc.gz")]
        write_sample_warc(inputs[0])
    cfg = load_config(ROOT / "conf" / "default.yaml")
    cfg.tokens.format, cfg.tokens.merged = "megatron", True
    cfg.shards.rows_per_shard = args.rows_per_shard
    conf = WORK / "megatron.yaml"
    conf.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    out = WORK / "out"
    subprocess.run([str(Path(sys.executable).parent / "curate"), "run", "--config", str(conf),
                    "--input", *inputs, "--output", str(out), "--force"],
                   check=True, cwd=ROOT)  # fmt: skip
    ours = TokenShards(published_path(out) / "tokens")
    expected: dict[str, list[list[int]]] = {}
    start = 0
    for sh in ours.index["shards"]:
        docs = [ours[i].tolist() + [ours.eot] for i in range(start, start + sh["docs"])]
        expected[str(published_path(out) / "tokens" / "megatron" / sh["name"])] = docs
        start += sh["docs"]
    expected[str(published_path(out) / "tokens" / "megatron" / "merged")] = [
        d.tolist() + [ours.eot] for d in ours
    ]
    exp_file = WORK / "expected.json"
    exp_file.write_text(json.dumps(expected))
    res = subprocess.run([args.megatron_python, "-c", CHECK, str(exp_file)], check=True,
                         capture_output=True, text=True)  # fmt: skip
    result = json.loads(res.stdout.strip().splitlines()[-1])
    ok = all(d["equal"] for d in result["datasets"].values())
    result["all_equal"] = ok
    print(json.dumps(result, indent=2))
    dest = ROOT / "bench" / "results" / "megatron.json"
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {dest}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
