"""Load the configured quality model, whichever backend: both score lists of texts."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import QualityConf
from pipeline.quality.fasttext_backend import FastTextQualityModel
from pipeline.quality.naive_bayes import NaiveBayesModel


def load_quality_model(path: str | Path, conf: QualityConf):
    if conf.backend == "naive_bayes":
        return NaiveBayesModel.load(path, use_prior=conf.use_prior)
    return FastTextQualityModel.load(path)
