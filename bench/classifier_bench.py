"""Benchmark the quality classifiers by kind: documents per second per core.

Texts are real crawl: the 697 documents of one 2019 Common Crawl WARC (dolma sample, in
../shared/data/text), 1.5 KB median. Models are built here in the published formats at the
published sizes, with random (transformers) or locally trained (fastText) weights, since
no model can be downloaded on this machine; the cost of inference depends on the shape of
a model, not on its weights:
- fasttext: DCLM's format (`__label__hq` / `__label__cc`, word bigrams), dim 256, trained on
  the scrapinghub article bodies (hq) vs the crawl documents (cc), scored with DCLM's
  preprocessing;
- transformers: BERT-base's shape (hidden 768, 12 layers, 12 heads: the size of
  FineWeb-Edu's classifier, a 109M-parameter BERT-style encoder), 512 tokens, batches of 32;
- onnx: the same model exported with torch.onnx, run by onnxruntime.
Each kind scores the texts in one process on one thread (Spark runs one task, one Python
worker, per core; the scorers take spark.task.cpus threads), three rounds; the median.

    python bench/classifier_bench.py [--docs 697] [--neural-docs 96] [--rounds 3]
Writes bench/results/classifiers.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate_pipeline.config import ClassifierConf  # noqa: E402
from curate_pipeline.document.quality.classifiers import load_classifier  # noqa: E402
from curate_pipeline.document.quality.preprocess import dclm  # noqa: E402
from curate_pipeline.examples.classifier_models import transformer_folder  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results"


def crawl_texts() -> list[str]:
    path = next((SHARED / "text").glob("*.jsonl"))
    return [json.loads(line)["text"] for line in path.open(encoding="utf-8") if line.strip()]


def article_texts() -> list[str]:
    truth = SHARED / "extraction" / "scrapinghub_aeb" / "ground-truth.json"
    return [v["articleBody"] for v in json.loads(truth.read_text()).values() if v["articleBody"]]


def dclm_format_fasttext(path: Path, good: list[str], bad: list[str]) -> None:
    import fasttext

    lines = path.with_suffix(".txt")
    labelled = [f"__label__hq {dclm(t)}\n" for t in good]
    labelled += [f"__label__cc {dclm(t)}\n" for t in bad]
    lines.write_text("".join(labelled), encoding="utf-8")
    model = fasttext.train_supervised(input=str(lines), wordNgrams=2, dim=256, epoch=5,
                                      thread=1, seed=0, verbose=0)  # fmt: skip
    model.save_model(str(path))


def rate(scorer, texts: list[str], rounds: int) -> dict:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        scores = scorer.score_texts(texts)
        times.append(time.perf_counter() - t)
        assert len(scores) == len(texts)
    med = statistics.median(times)
    return {"docs": len(texts), "seconds_median": round(med, 3),
            "seconds": [round(x, 3) for x in times],
            "docs_per_s_per_core": round(len(texts) / med, 1),
            "ms_per_doc": round(1000 * med / len(texts), 3)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=697)
    ap.add_argument("--neural-docs", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not (SHARED / "text").is_dir():
        print(f"benchmark data not found under {SHARED}", file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    crawl = crawl_texts()
    texts = (crawl * (1 + args.docs // len(crawl)))[: args.docs]
    neural = crawl[: args.neural_docs]
    out: dict = {
        "machine_note": "one thread, one process; texts: dolma CC-MAIN-2019 sample",
        "text_bytes_median": statistics.median(len(t.encode()) for t in crawl),
    }
    with tempfile.TemporaryDirectory() as tmp:
        ft = Path(tmp) / "dclm.bin"
        dclm_format_fasttext(ft, article_texts(), crawl)
        conf = ClassifierConf(name="dclm", kind="fasttext", path=str(ft), preprocessing="dclm",
                              label="__label__hq")  # fmt: skip
        out["fasttext"] = rate(load_classifier(ft, conf), texts, args.rounds)
        print("fasttext (DCLM format, dim 256):", out["fasttext"])
        folder = transformer_folder(Path(tmp) / "base", hidden=768, layers=12, heads=12,
                                    max_length=512, vocab=8000, onnx=True,
                                    init_range=0.02)  # fmt: skip
        params = sum(p.numel() for p in __import__("transformers").AutoModel.from_pretrained(
            folder).parameters())  # fmt: skip
        out["transformer_parameters"] = params
        for kind in ("transformers", "onnx"):
            conf = ClassifierConf(name="edu", kind=kind, path=str(folder), output="regression",
                                  batch_size=32)  # fmt: skip
            scorer = load_classifier(folder, conf)
            if kind == "onnx":  # one thread, as a Spark task with spark.task.cpus 1
                import onnxruntime as ort

                so = ort.SessionOptions()
                so.intra_op_num_threads = 1
                cpu = ["CPUExecutionProvider"]
                scorer.session = ort.InferenceSession(str(folder / "model.onnx"), so,
                                                      providers=cpu)  # fmt: skip
            out[kind] = rate(scorer, neural, args.rounds)
            print(f"{kind} (BERT-base shape, {params / 1e6:.0f}M parameters, 512 tokens):",
                  out[kind])  # fmt: skip
    out["ratios"] = {
        "fasttext_over_transformers": round(out["fasttext"]["docs_per_s_per_core"]
                                            / out["transformers"]["docs_per_s_per_core"], 1),
        "onnx_over_transformers": round(out["onnx"]["docs_per_s_per_core"]
                                        / out["transformers"]["docs_per_s_per_core"], 2),
    }  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "classifiers.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["ratios"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
