"""Quality classifiers by kind, each loaded from its published format and scoring a list of
texts in batches: fastText .bin, Hugging Face sequence classification folders
(`save_pretrained`: config, weights, tokenizer), ONNX exports of those, and the project's own
naive Bayes. Per-document logic only: Spark ships the files and calls `load_classifier` once
per Python worker (curate_pipeline/stages/quality.py).

Each scorer reproduces its reference inference exactly (tests/test_classifiers.py):
- fastText: `model.predict(text)`, the top label's probability, or 1 minus it when the top
  label is another one (DCLM's classify_fasttext_hq_prob); with more than two labels, the
  label's own probability among all (`k=-1`).
- transformers: `tokenizer(texts, padding="longest", truncation=True)` then the model's
  forward without gradients, in batches of texts sorted by length (less padding);
  `regression` is logits[:, 0] as float (FineWeb-Edu's `logits.squeeze(-1).float()`),
  `probability` the softmax of `label`'s logit. A CUDA device when torch sees one, else the
  CPU: the same code.
- onnx: the same tokenization through the `tokenizers` library alone (the folder's
  tokenizer.json with tokenizer_config.json's pad token, padding side and model_max_length,
  as transformers' fast tokenizer applies them: tested equal to it), the model's inputs by
  name, its first output. It needs neither transformers nor torch: ONNX Runtime is in the
  default install, torch is the `gpu` extra.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from curate_pipeline.config import ClassifierConf
from curate_pipeline.document.quality.preprocess import PREPROCESSING

_EPS = 1e-6  # log-odds of probabilities 0 and 1 stay finite


class Scorer(Protocol):
    def score_texts(self, texts: Sequence[str]) -> list[float]: ...


def _log_odds(p: float) -> float:
    p = min(max(p, _EPS), 1 - _EPS)
    return math.log(p / (1 - p))


class FastTextScorer:
    def __init__(self, model, conf: ClassifierConf):
        self.model, self.conf = model, conf
        self.prep = PREPROCESSING[conf.preprocessing]
        labels = list(model.get_labels())
        if conf.label not in labels:
            raise ValueError(f"classifier {conf.name}: label {conf.label} is not one of the "
                             f"model's labels {labels[:10]}")  # fmt: skip
        self.binary = len(labels) == 2

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        lines = [self.prep(t) for t in texts]
        label = self.conf.label
        out = []
        if self.binary:  # DCLM: k=1, and 1 - p when the top label is the other one
            tops, probs = self.model.predict(lines, k=1)
            for top, p in zip(tops, probs, strict=True):
                q = float(p[0])
                out.append(q if top[0] == label else 1.0 - q)
        else:
            tops, probs = self.model.predict(lines, k=-1)
            for labs, ps in zip(tops, probs, strict=True):
                out.append(dict(zip(labs, (float(x) for x in ps), strict=True)).get(label, 0.0))
        if self.conf.output == "log_odds":
            return [_log_odds(p) for p in out]
        return out


def _label_index(id2label: dict, conf: ClassifierConf) -> int:
    names = {str(v): int(k) for k, v in id2label.items()}
    if conf.label not in names:
        raise ValueError(f"classifier {conf.name}: label {conf.label} is not among the model's "
                         f"labels {sorted(names)}")  # fmt: skip
    return names[conf.label]


def _tokenizer(folder: str | Path, conf: ClassifierConf):
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # executors' logs: no bars per model load

    tok = AutoTokenizer.from_pretrained(str(folder))
    if conf.max_length:
        tok.model_max_length = conf.max_length
    return tok


def _by_length(texts: list[str], size: int, score) -> list[float]:
    """`score` over batches of `size` texts of about the same length (a batch pads to its
    longest: sorted, little padding is computed, as NeMo Curator sorts by length), in the
    texts' order again."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = [0.0] * len(texts)
    for i in range(0, len(order), size):
        idx = order[i : i + size]
        for j, s in zip(idx, score([texts[j] for j in idx]), strict=True):
            out[j] = s
    return out


def _from_logits(logits: np.ndarray, conf: ClassifierConf, index: int | None) -> list[float]:
    logits = logits.astype(np.float32)
    if conf.output == "regression":
        return [float(x) for x in logits[:, 0]]
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    col = [float(x) for x in p[:, index]]
    return [_log_odds(x) for x in col] if conf.output == "log_odds" else col


class TransformersScorer:
    def __init__(self, folder: str | Path, conf: ClassifierConf, threads: int = 0):
        import torch
        from transformers import AutoModelForSequenceClassification

        self.torch, self.conf = torch, conf
        if threads:
            torch.set_num_threads(threads)
        self.prep = PREPROCESSING[conf.preprocessing]
        self.tok = _tokenizer(folder, conf)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = AutoModelForSequenceClassification.from_pretrained(str(folder))
        self.model.to(self.device).eval()
        self.index = (None if conf.output == "regression"
                      else _label_index(self.model.config.id2label, conf))  # fmt: skip

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        return _by_length([self.prep(t) for t in texts], self.conf.batch_size, self._batch)

    def _batch(self, batch: list[str]) -> list[float]:
        enc = self.tok(batch, return_tensors="pt", padding="longest", truncation=True)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        with self.torch.no_grad():
            logits = self.model(**enc).logits.float().cpu().numpy()
        return _from_logits(logits, self.conf, self.index)


_UNBOUNDED = int(1e29)  # transformers' stand-in for "no model_max_length" (VERY_LARGE_INTEGER)


class FastTokenizer:
    """transformers' `tok(texts, padding="longest", truncation=True)` on a saved fast
    tokenizer, from the `tokenizers` library: the folder's tokenizer.json (normalizer, model,
    special-token template), truncated to model_max_length (or `max_length`), padded to the
    batch's longest with the pad token on the configured side."""

    def __init__(self, folder: str | Path, max_length: int | None = None):
        import json

        from tokenizers import Tokenizer

        folder = Path(folder)
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        cfg: dict = {}
        for name in ("special_tokens_map.json", "tokenizer_config.json"):  # the latter wins
            f = folder / name
            if f.is_file():
                cfg.update(json.loads(f.read_text(encoding="utf-8")))
        limit = max_length or cfg.get("model_max_length") or _UNBOUNDED
        self.tok.no_truncation()
        if limit < _UNBOUNDED:
            self.tok.enable_truncation(int(limit), strategy="longest_first",
                                       direction=cfg.get("truncation_side", "right"))  # fmt: skip
        self.tok.no_padding()
        pad = cfg.get("pad_token")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        if pad is not None:
            pad_id = self.tok.token_to_id(pad)
            if pad_id is None:
                raise ValueError(f"{folder}: pad token {pad!r} is not in tokenizer.json")
            self.tok.enable_padding(direction=cfg.get("padding_side", "right"), pad_id=pad_id,
                                    pad_type_id=0, pad_token=pad)  # fmt: skip
        self.padded = pad is not None

    def __call__(self, texts: list[str]) -> dict[str, np.ndarray]:
        encs = self.tok.encode_batch(texts)
        if not self.padded and len({len(e.ids) for e in encs}) > 1:
            raise ValueError("the tokenizer has no pad token: texts of different lengths "
                             "cannot be batched (set batch_size: 1)")  # fmt: skip
        return {
            "input_ids": np.array([e.ids for e in encs], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encs], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encs], dtype=np.int64),
        }


class OnnxScorer:
    MODEL = "model.onnx"

    def __init__(self, folder: str | Path, conf: ClassifierConf, threads: int = 0):
        import json

        import onnxruntime as ort

        self.conf = conf
        self.prep = PREPROCESSING[conf.preprocessing]
        self.tok = FastTokenizer(folder, conf.max_length)
        providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider")
                     if p in ort.get_available_providers()]  # fmt: skip
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0: onnxruntime's default (every core)
        self.session = ort.InferenceSession(str(Path(folder) / self.MODEL), options,
                                            providers=providers)  # fmt: skip
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.index = None
        if conf.output != "regression":
            cfg = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
            self.index = _label_index(cfg.get("id2label", {}), conf)

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        return _by_length([self.prep(t) for t in texts], self.conf.batch_size, self._batch)

    def _batch(self, batch: list[str]) -> list[float]:
        enc = self.tok(batch)
        feed = {}
        for name in self.inputs:
            if name not in enc:
                raise ValueError(f"classifier {self.conf.name}: the ONNX model wants input "
                                 f"{name!r}, the tokenizer gives {sorted(enc)}")  # fmt: skip
            feed[name] = enc[name].astype(np.int64)
        logits = self.session.run(None, feed)[0]
        return _from_logits(np.asarray(logits), self.conf, self.index)


class NaiveBayesScorer:
    def __init__(self, path: str | Path, conf: ClassifierConf):
        from curate_pipeline.document.quality.naive_bayes import NaiveBayesModel

        self.model = NaiveBayesModel.load(path, use_prior=conf.use_prior)

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        return self.model.score_texts(list(texts))


def finish(conf: ClassifierConf, score: float) -> float:
    """The score as written: clipped to `clip` when set."""
    if conf.clip is not None:
        return min(max(score, conf.clip[0]), conf.clip[1])
    return score


def below(conf: ClassifierConf, score: float) -> str | None:
    """Why a score fails the classifier's threshold (the ledger's detail), or None."""
    if conf.threshold is None:
        return None
    if conf.integer:
        n = int(round(score))
        return f"{conf.name} {score:.4g} (int {n}) < {conf.threshold:g}" if n < conf.threshold \
            else None  # fmt: skip
    return f"{conf.name} {score:.4g} < {conf.threshold:g}" if score < conf.threshold else None


def load_classifier(path: str | Path, conf: ClassifierConf, threads: int = 0) -> Scorer:
    """The scorer of `conf.kind` from the file or folder at `path`; a neural one runs on
    `threads` threads (0: the library's default, every core)."""
    if conf.kind == "fasttext":
        import fasttext

        from curate_pipeline.document.quality.fasttext_backend import check_tokenizer

        if conf.preprocessing == "words":
            check_tokenizer(path)
        return FastTextScorer(fasttext.load_model(str(path)), conf)
    if conf.kind == "transformers":
        return TransformersScorer(path, conf, threads)
    if conf.kind == "onnx":
        return OnnxScorer(path, conf, threads)
    return NaiveBayesScorer(path, conf)
