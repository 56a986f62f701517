"""The model `curate train-quality` trains, loaded as the classifier registry loads it, and
what it was trained on."""

from __future__ import annotations

import json
from pathlib import Path

from curate_pipeline.config import QualityConf
from curate_pipeline.document.quality.classifiers import Scorer, load_classifier
from curate_pipeline.document.quality.fasttext_backend import meta_path


def load_quality_model(path: str | Path, conf: QualityConf) -> Scorer:
    """The trained model of quality.backend / quality.model (scores: log-odds)."""
    return load_classifier(path, conf.model_copy(update={"classifiers": []}).registry()[0])


# Below this many training documents a model is a toy: fine for the demo and the tests, never
# for curating real data (the project's own example model has 143).
TOY_DOCUMENTS = 1000


def describe(path: str | Path, backend: str) -> dict:
    """What scored a run, from the model's training metadata (the manifest, console, report)."""
    p = Path(path)
    meta: dict = {}
    try:
        if backend == "naive_bayes":
            meta = json.loads(p.read_text(encoding="utf-8")).get("meta", {})
        elif meta_path(p).is_file():
            meta = json.loads(meta_path(p).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    docs = int(meta.get("docs_good", 0)) + int(meta.get("docs_bad", 0))
    return {
        "path": str(p),
        "backend": backend,
        "documents": docs or None,
        "good_inputs": meta.get("good_inputs"),
        "bad_inputs": meta.get("bad_inputs"),
        "toy": docs < TOY_DOCUMENTS,
    }
