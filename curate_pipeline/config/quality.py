"""The quality classifiers: backends, the published-classifier registry, the ensemble, training."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from curate_pipeline.config.base import _Section


class QualityTrainConf(_Section):
    # Share of training documents held out (by a hash of the text) to report accuracy.
    heldout_fraction: float = Field(0.1, ge=0, lt=1)
    seed: int = 0
    min_df: int = Field(1, ge=1)  # words in fewer training documents are not in the vocabulary
    max_vocab: int = Field(1 << 18, ge=1)  # Spark CountVectorizer's default
    smoothing: float = Field(1.0, gt=0)  # Laplace, as the primer and MLlib NaiveBayes(1.0)
    # fastText train_supervised arguments (fastText defaults, wordNgrams 2 as DCLM's filter).
    fasttext: dict[str, float | int | str] = Field(
        default_factory=lambda: {
            "epoch": 5,
            "lr": 0.1,
            "wordNgrams": 2,
            "dim": 100,
            "minCount": 1,
            "seed": 0,
            "thread": 1,
        }  # fmt: skip
    )


class ClassifierConf(_Section):
    """One published (or trained) quality classifier: what it is, where it lies, how its
    authors fed it text, which output is its score and where the score goes."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")  # ledger details, buckets
    # fasttext: a .bin; transformers: a save_pretrained folder (config, weights, tokenizer);
    # onnx: a folder with model.onnx and the tokenizer files; naive_bayes: our JSON.
    kind: Literal["fasttext", "transformers", "onnx", "naive_bayes"]
    path: str  # a file or folder: a local path (or relative to the project) or a URI
    # The text as the model's authors fed it (curate_pipeline/document/quality/preprocess.py):
    # dclm: lines joined by spaces (DCLM's classify_fasttext_hq_prob); raw: the text as is
    # (FineWeb-Edu's tokenizer call); words: lowercased words, as `curate train-quality`.
    preprocessing: Literal["dclm", "raw", "words"] = "raw"
    # fasttext: the label whose probability is the score (DCLM: __label__hq); transformers and
    # onnx with output `probability`: the id2label name whose softmax probability is the score
    label: str | None = None
    # regression: logits[:, 0] (FineWeb-Edu: 0-5); probability: of `label`; log_odds:
    # log(p / (1 - p)) of `label` (the models `curate train-quality` writes)
    output: Literal["regression", "probability", "log_odds"] = "probability"
    # The score written is clipped to [low, high] (NeMo Curator's FineWeb classifiers: [0, 5])
    clip: tuple[float, float] | None = None
    # The threshold compares int(round(score)) (FineWeb-Edu's int_score: `int_score >= 3`
    # keeps a page; Python's round, halves to even); false: the score itself
    integer: bool = False
    max_length: int | None = Field(None, ge=1)  # tokens; null: the tokenizer's model_max_length
    batch_size: int = Field(32, ge=1)  # texts per forward pass (transformers, onnx)
    score_column: str = Field("", pattern=r"^([a-z][a-z0-9_]*)?$")  # default: <name>_score
    threshold: float | None = None  # documents scoring below are dropped; null: score only
    languages: list[str] = Field(default_factory=lambda: ["en"])  # "all": every language
    use_prior: bool = False  # naive_bayes: add the training set's log(docs_good / docs_bad)

    @model_validator(mode="after")
    def _check(self) -> ClassifierConf:
        if not self.score_column:
            self.score_column = f"{self.name.replace('-', '_').lower()}_score"
        if self.kind == "fasttext" and self.preprocessing == "raw":
            raise ValueError(f"classifier {self.name}: fastText reads one line of text; use "
                             "preprocessing dclm (lines joined) or words")  # fmt: skip
        if self.kind == "fasttext" and not self.label:
            raise ValueError(f"classifier {self.name}: a fasttext model needs `label` "
                             "(e.g. __label__hq)")  # fmt: skip
        if self.output != "regression" and self.kind in ("transformers", "onnx") and \
                not self.label:  # fmt: skip
            raise ValueError(f"classifier {self.name}: output {self.output} needs `label`")
        if self.output == "regression" and self.kind in ("fasttext", "naive_bayes"):
            raise ValueError(f"classifier {self.name}: a {self.kind} model has no regression "
                             "output; use probability or log_odds")  # fmt: skip
        return self

    def applies_to(self, lang: str | None) -> bool:
        return "all" in self.languages or lang in self.languages


class EnsembleConf(_Section):
    """Nemotron-CC's percentile buckets: each classifier's scores cut at corpus percentiles
    (5, 10, ..., 95 for 20 buckets), the buckets combined per document (max in Nemotron-CC)."""

    enabled: bool = False
    buckets: int = Field(20, ge=2, le=1000)  # Nemotron-CC: 20 (0-19)
    rule: Literal["max", "mean"] = "max"  # Nemotron-CC: max
    # Spark approxQuantile's relative error: a cut's rank is within relative_error * N of
    # the exact one (0: exact, a full sort)
    relative_error: float = Field(0.001, ge=0, lt=1)
    # reuse the cuts stored in the output (quality_percentiles.json) when the classifiers are
    # the same: a resume or an added input keeps the buckets of the first run
    reuse: bool = True


class QualityConf(_Section):
    # Off by default: a classifier is only as good as its training data, and the one `make
    # models` trains (a few dozen example sentences) is for the demo and the tests.
    enabled: bool = False
    backend: Literal["naive_bayes", "fasttext"] = "naive_bayes"
    # naive Bayes: the JSON of word votes; fastText: the .bin (metadata beside it, .bin.json).
    # The default is a toy trained by `make models` on the project's own example texts.
    model: str = "models/quality_nb.json"
    # Scores are log-odds (good vs crawl): 0 = looks at least as much like the reference.
    threshold: float = 0.0
    # Add the training set's log(docs_good / docs_bad) to naive Bayes scores. Off: the ratio
    # of reference to crawl documents in a training set is arbitrary.
    use_prior: bool = False
    # Languages scored (a classifier trained on English judges English); others pass.
    languages: list[str] = Field(default_factory=lambda: ["en"])
    train: QualityTrainConf = Field(default_factory=QualityTrainConf)
    # The classifier registry (docs/quality-classifiers.md). Empty: the one model above
    # (backend, model, threshold, use_prior, languages), scored as log-odds into quality_score.
    classifiers: list[ClassifierConf] = Field(default_factory=list)
    ensemble: EnsembleConf = Field(default_factory=EnsembleConf)

    @model_validator(mode="after")
    def _unique(self) -> QualityConf:
        for what in ("name", "score_column"):
            seen = [getattr(c, what) for c in self.classifiers]
            dup = sorted({v for v in seen if seen.count(v) > 1})
            if dup:
                raise ValueError(f"quality.classifiers: {what} {dup} used twice")
        return self

    def registry(self) -> list[ClassifierConf]:
        """The classifiers that score a run: the registry, or the single trained model."""
        if self.classifiers:
            return list(self.classifiers)
        return [ClassifierConf(
            name="quality", kind=self.backend, path=self.model, preprocessing="words",
            label="__label__hq" if self.backend == "fasttext" else None, output="log_odds",
            score_column="quality_score", threshold=self.threshold,
            languages=list(self.languages), use_prior=self.use_prior,
        )]  # fmt: skip

    def applies_to(self, lang: str | None) -> bool:
        return "all" in self.languages or lang in self.languages
