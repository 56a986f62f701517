"""The driver JVM's heap settings at crawl scale: `curate run` over the 28-file crawl of
bench/scale_bench.py (23,184 records) with conf/default.yaml's JVM options and with the same
options less the initial-heap settings (-Xms64m and the free ratios), one fresh run each,
back to back. Reports wall time, peak PSS per role, the documents pass's task-seconds.
Writes bench/results/jvm_heap_scale.json. (bench/jvm_heap_bench.py: the same at 2,057
records, alternating rounds.)

    python bench/jvm_heap_scale_bench.py
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from jvm_heap_bench import HEAP_FLAGS, OPTS_KEY  # noqa: E402
from scale_bench import WORK, build_crawl, curate, manifest  # noqa: E402

from curate_pipeline.config import load_config  # noqa: E402


def main() -> int:
    files = build_crawl(28, 720)
    res: dict = {"date": time.strftime("%Y-%m-%d"), "files": len(files)}
    for name in ("jvm_default_heap", "default"):
        cfg = load_config(ROOT / "conf" / "default.yaml")
        opts = cfg.spark.local_conf[OPTS_KEY]
        if name == "jvm_default_heap":
            opts = " ".join(o for o in opts.split() if not o.startswith(HEAP_FLAGS))
        cfg.spark.local_conf[OPTS_KEY] = opts
        conf = WORK / f"heap-{name}.yaml"
        conf.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
        out = WORK / "runs" / f"heap-{name}"
        shutil.rmtree(out, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        r = curate(conf, files, out)
        m = manifest(out)
        r.update(java_options=opts, records=m["counts"]["read"], kept=m["counts"]["kept"],
                 documents_pass_task_seconds=m["documents_pass_task_seconds"])  # fmt: skip
        res[name] = r
        print(name, json.dumps(r), flush=True)
    dest = ROOT / "bench" / "results" / "jvm_heap_scale.json"
    dest.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
