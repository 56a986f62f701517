"""Multinomial naive Bayes as word votes (the seed primer's formulation).

Every word casts a vote
    log((c_good(w) + 1) / (N_good + V)) - log((c_bad(w) + 1) / (N_bad + V))
where c(w) counts the word in each class's training text, N is the class's total word count
and V the vocabulary size; a page's score is the sum of its words' votes (words outside the
vocabulary vote 0), plus, optionally, the prior log(P(good) / P(bad)). This is exactly Spark
MLlib's multinomial NaiveBayes with smoothing 1: vote = theta[good] - theta[bad].
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from curate_pipeline.document.quality.tokens import TOKENIZER_VERSION, classifier_tokens


def vote(c_good: int, c_bad: int, n_good: int, n_bad: int, v: int, smoothing: float = 1.0):
    """One word's vote (log-likelihood ratio of the word under good vs bad)."""
    return math.log((c_good + smoothing) / (n_good + smoothing * v)) - math.log(
        (c_bad + smoothing) / (n_bad + smoothing * v)
    )


@dataclass
class NaiveBayesModel:
    votes: dict[str, float]
    prior: float = 0.0  # log(P(good) / P(bad)) from the training documents
    use_prior: bool = False
    meta: dict = field(default_factory=dict)

    def score_tokens(self, tokens: Iterable[str]) -> float:
        get = self.votes.get
        s = sum(get(t, 0.0) for t in tokens)
        return s + self.prior if self.use_prior else s

    def score(self, text: str) -> float:
        return self.score_tokens(classifier_tokens(text))

    def score_texts(self, texts: Iterable[str]) -> list[float]:
        """The interface both backends share."""
        return [self.score(t) for t in texts]

    def save(self, path: str | Path) -> None:
        doc = {
            "backend": "naive_bayes",
            "tokenizer": TOKENIZER_VERSION,
            "prior": self.prior,
            "meta": self.meta,
            "votes": dict(sorted(self.votes.items())),
        }
        Path(path).write_text(json.dumps(doc, ensure_ascii=False, indent=0) + "\n")

    @classmethod
    def load(cls, path: str | Path, use_prior: bool = False) -> NaiveBayesModel:
        doc = json.loads(Path(path).read_text())
        if doc.get("backend") != "naive_bayes":
            raise ValueError(f"{path}: not a naive Bayes quality model")
        if doc.get("tokenizer") != TOKENIZER_VERSION:
            raise ValueError(
                f"{path}: trained with tokenizer {doc.get('tokenizer')!r}, this version "
                f"scores with {TOKENIZER_VERSION!r}: retrain it (curate train-quality)"
            )
        return cls(doc["votes"], doc.get("prior", 0.0), use_prior, doc.get("meta", {}))


def train_counts(
    good: Iterable[list[str]], bad: Iterable[list[str]], smoothing: float = 1.0
) -> NaiveBayesModel:
    """The model from tokenised documents, in plain Python (the reference for Spark's)."""
    cg: Counter = Counter()
    cb: Counter = Counter()
    docs_good = docs_bad = 0
    for toks in good:
        cg.update(toks)
        docs_good += 1
    for toks in bad:
        cb.update(toks)
        docs_bad += 1
    vocab = set(cg) | set(cb)
    n_good, n_bad, v = sum(cg.values()), sum(cb.values()), len(vocab)
    votes = {w: vote(cg[w], cb[w], n_good, n_bad, v, smoothing) for w in vocab}
    # MLlib smooths the class priors too: log((docs_good + s) / (docs_bad + s))
    prior = math.log((docs_good + smoothing) / (docs_bad + smoothing))
    meta = {"n_good": n_good, "n_bad": n_bad, "vocabulary": v,
            "docs_good": docs_good, "docs_bad": docs_bad}  # fmt: skip
    return NaiveBayesModel(votes, prior, meta=meta)
