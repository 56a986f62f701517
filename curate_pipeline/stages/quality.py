"""Stage `quality`: every classifier of the registry (quality.classifiers, or the one trained
model) scores the documents in its languages into its score column; a document below a
classifier's threshold is `quality:below_threshold`, naming the classifier. Documents in
languages a classifier does not judge pass, unscored by it.

Each Python worker loads each model once (curate_pipeline/engine/models.py `load_shipped`) and
scores the documents of a task's Arrow batches in lists (transformers: in batches of
`batch_size` texts per forward pass)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from curate_pipeline.config import ClassifierConf, Config
from curate_pipeline.document.quality.classifiers import below, finish, load_classifier
from curate_pipeline.document.quality.fasttext_backend import meta_path
from curate_pipeline.engine.models import ModelError, load_shipped, resolve_model, ship
from curate_pipeline.stages.step import DocumentStep, Drop, Stage, Verdict

FOLDER_KINDS = ("transformers", "onnx")  # a save_pretrained folder, not a file


def classifier_path(cfg: Config, c: ClassifierConf) -> Path:
    if not cfg.quality.classifiers:  # the trained model of quality.model
        fix = ("run `make models` (trains the default toy model), train your own with "
               "`curate train-quality`, or set quality.enabled: false")  # fmt: skip
    elif c.kind in FOLDER_KINDS:
        fix = (f"put the model's folder (config.json, weights, tokenizer files"
               f"{', model.onnx' if c.kind == 'onnx' else ''}) there, e.g. "
               "`huggingface-cli download <repo> --local-dir <path>` where the hub is reachable, "
               "or set quality.enabled: false")  # fmt: skip
    else:
        fix = ("put the published model file there (a preset's first lines say where it is "
               "published), or set quality.enabled: false")  # fmt: skip
    return resolve_model(c.path, f"quality classifier {c.name!r} ({c.kind})", fix,
                         folder=c.kind in FOLDER_KINDS)  # fmt: skip


# What each kind imports beyond the default install (the `gpu` extra: torch, transformers).
KIND_NEEDS = {"transformers": ("torch", "transformers")}


def check_libraries(c: ClassifierConf) -> None:
    """A kind whose libraries are not installed: ModelError before Spark starts, naming
    them and the two fixes (the extra, or the ONNX export the default install runs)."""
    import importlib.util

    missing = [m for m in KIND_NEEDS.get(c.kind, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise ModelError(
            f"quality classifier {c.name!r} (kind {c.kind}) needs {' and '.join(missing)}, "
            "which the default install leaves out: pip install 'curate-pipeline[gpu]' (or "
            "`make gpu`), or export the model to ONNX and use kind: onnx, which runs on the "
            "default install (docs/quality-classifiers.md: ONNX)"
        )


def quality_model_paths(cfg: Config) -> list[Path]:
    for c in cfg.quality.registry():
        check_libraries(c)
    return [classifier_path(cfg, c) for c in cfg.quality.registry()]


def score_fields(cfg: Config) -> list[pa.Field]:
    return [pa.field(c.score_column, pa.float64()) for c in cfg.quality.registry()]


def task_cores() -> int:
    """The threads a neural scorer takes: the task's cores (spark.task.cpus, 1 unless
    configured). Spark runs a task, and a Python worker, per core: a thread pool of every
    core in each worker would oversubscribe the executor. 0 outside a task."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return int(ctx.cpus()) if ctx is not None else 0


def quality_step(spark: SparkSession, cfg: Config) -> DocumentStep:
    shipped: list[tuple[ClassifierConf, str]] = []
    for c in cfg.quality.registry():
        path = classifier_path(cfg, c)
        shipped.append((c, ship(spark, path)))
        if c.kind == "fasttext" and meta_path(path).is_file():
            ship(spark, meta_path(path))

    def score(docs: list[dict]) -> list[Verdict]:
        verdicts: list[Verdict] = [None] * len(docs)
        for c, name in shipped:
            load = partial(load_classifier, conf=c, threads=task_cores())
            model = load_shipped(name, load, c.model_dump_json())
            judged = [i for i, d in enumerate(docs) if c.applies_to(d.get("lang"))]
            for d in docs:
                d[c.score_column] = None
            scores = model.score_texts([docs[i]["text"] or "" for i in judged])
            for i, s in zip(judged, scores, strict=True):
                docs[i][c.score_column] = s = finish(c, s)
                if verdicts[i] is None and (why := below(c, s)) is not None:
                    verdicts[i] = Drop("below_threshold", why)
        return verdicts

    return DocumentStep(score_fields(cfg), score)


STAGE = Stage("quality", step=quality_step, model=quality_model_paths,
              enabled=lambda c: c.quality.enabled)  # fmt: skip
