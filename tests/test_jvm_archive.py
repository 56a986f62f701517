"""The driver JVM's class-data-sharing archive: found where configured, and the check that
keeps a damaged archive out of place really tells one from a good one."""

from __future__ import annotations

import pytest

from curate_pipeline.config import Config
from curate_pipeline.engine.spark import ROOT, class_archive
from curate_pipeline.run.jvm_archive import maps


def test_archive_is_looked_up_and_optional(tmp_path, monkeypatch):
    assert class_archive(Config.model_validate({"spark": {"class_archive": None}})) is None
    missing = Config.model_validate({"spark": {"class_archive": str(tmp_path / "none.jsa")}})
    assert class_archive(missing) is None
    here = tmp_path / "a.jsa"
    here.write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    assert class_archive(Config.model_validate({"spark": {"class_archive": "a.jsa"}})) == here
    # written by another Spark version's JVM (make test-versions' 3.5 venv): not mapped
    import pyspark

    stamp = tmp_path / "a.jsa.spark"
    stamp.write_text("3.5.9\n" if not pyspark.__version__.startswith("3.5") else "4.3.0\n")
    assert class_archive(Config.model_validate({"spark": {"class_archive": "a.jsa"}})) is None
    stamp.write_text(pyspark.__version__)
    assert class_archive(Config.model_validate({"spark": {"class_archive": "a.jsa"}})) == here


def test_a_cut_archive_fails_the_check_a_whole_one_passes(tmp_path):
    archive = ROOT / "build" / "spark-cds.jsa"
    if not archive.is_file():
        pytest.skip("no archive: run `make setup`")
    cut = tmp_path / "cut.jsa"
    with open(archive, "rb") as src:
        cut.write_bytes(src.read(archive.stat().st_size // 3))
    assert maps(archive)
    assert not maps(cut)
