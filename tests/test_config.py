import os
import subprocess
import sys
from pathlib import Path

import pytest

from curate_pipeline.config import Config, ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_default_yaml_matches_builtin_defaults():
    # conf/default.yaml documents every default: it must not drift from the code.
    assert load_config(ROOT / "conf" / "default.yaml").model_dump(exclude={"spark"}) == (
        Config().model_dump(exclude={"spark"})
    )


def test_unknown_key_names_key_and_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("extract:\n  timout_s: 3\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert "extract.timout_s" in str(e.value) and str(p) in str(e.value)
    assert "unknown key" in str(e.value)


def test_wrong_type_names_key(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("read:\n  max_record_bytes: lots\n")
    with pytest.raises(ConfigError, match=r"read\.max_record_bytes"):
        load_config(p)


def test_missing_file():
    with pytest.raises(ConfigError, match="no such file"):
        load_config("/nonexistent/conf.yaml")


def test_invalid_yaml_and_non_mapping(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("extract: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    p.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(p)


def test_yaml_tags_are_not_executed(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("spark: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)


def test_section_hash_tracks_changes():
    a, b = Config(), Config()
    b.extract.timeout_s = 1.0
    assert a.section_hash("read") == b.section_hash("read")
    assert a.section_hash("extract") != b.section_hash("extract")


def test_a_partial_config_is_read_over_conf_default_yaml(tmp_path):
    from curate_pipeline.config import explain

    part = tmp_path / "mine.yaml"
    part.write_text("langid:\n  threshold: 0.5\nspark:\n  conf:\n    spark.ui.enabled: 'true'\n")
    cfg = load_config(part)
    base = load_config(ROOT / "conf" / "default.yaml")
    assert cfg.langid.threshold == 0.5
    # the base's Spark settings stay (they were lost to built-in defaults before), merged
    # key by key with the file's
    assert cfg.spark.conf["spark.ui.enabled"] == "true"
    rest = {k: v for k, v in base.spark.conf.items() if k != "spark.ui.enabled"}
    assert rest and all(cfg.spark.conf[k] == v for k, v in rest.items())
    assert cfg.model_dump(exclude={"langid", "spark"}) == base.model_dump(
        exclude={"langid", "spark"})  # fmt: skip
    origins = {k: o for k, _, o in explain(part)}
    assert origins["langid.threshold"] == str(part)
    assert origins["spark.conf.spark.ui.enabled"] == str(part)
    assert origins["langid.model"].endswith("conf/default.yaml")
    r = subprocess.run([sys.executable, "-m", "curate_pipeline.cli", "config", "show", "--config",
                        str(part)], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 0
    line = next(x for x in r.stdout.splitlines() if x.startswith("langid.threshold:"))
    assert line.split("#")[1].strip() == str(part)


def test_local_settings_never_reach_a_cluster():
    """Issue 63: this machine's UI off and C1/serial-GC JVM are local mode's alone; a cluster
    (any deploy config read over the defaults) keeps Spark's and the platform's own."""
    from curate_pipeline.engine.spark import config_settings

    for name in ("conf/default.yaml", "deploy/emr/curate.yaml", "deploy/dataproc/curate.yaml"):
        cfg = load_config(ROOT / name)
        local, cluster = config_settings(cfg, True), config_settings(cfg, False)
        assert local["spark.ui.enabled"] == "false" and "UseSerialGC" in local[
            "spark.driver.extraJavaOptions"]  # fmt: skip
        assert "spark.ui.enabled" not in cluster, name
        assert not any("TieredStopAtLevel" in v or "SerialGC" in v for v in cluster.values())
        assert cluster["spark.sql.parquet.columnarReaderBatchSize"] == "256"  # the run's own


def test_presets_resolve_by_name_from_anywhere(tmp_path, monkeypatch):
    """Issue 64: the presets ship in the package; `--config fineweb2` (or the checkout's path
    `conf/fineweb2.yaml`) works from any folder, and so do the files a preset names."""
    from curate_pipeline.config import describe_presets, find_config, presets
    from curate_pipeline.location import conf_location

    here = load_config(ROOT / "conf" / "fineweb2.yaml")
    monkeypatch.chdir(tmp_path)  # no conf/ here
    assert load_config("fineweb2") == here and load_config("conf/fineweb2.yaml") == here
    shipped = {"default", "fineweb", "fineweb2", "dclm", "fineweb-edu", "nemotron-cc"}
    assert shipped <= set(presets())
    assert conf_location(here.recipes.configs, "recipes", "", folder=True).is_dir()
    names = dict(describe_presets())
    assert names["fineweb2"].startswith("FineWeb-2's recipe")
    try:
        find_config("finweb")
        raise AssertionError("a wrong name must be refused")
    except ConfigError as e:
        assert "no preset of that name" in str(e) and "fineweb2" in str(e)
    r = subprocess.run([sys.executable, "-m", "curate_pipeline.cli", "config", "list"],
                       capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert r.returncode == 0 and "fineweb2" in r.stdout and "dclm" in r.stdout, r.stderr


def test_a_config_needing_the_segmenters_refuses_without_them(tmp_path):
    """Issue 64: the word segmenters are the `multilingual` extra; a config whose splitter
    needs them (fineweb2's per_language, fineweb's spacy_en) on a machine without them stops
    before Spark, naming the setting and the extra; the default recipe needs none."""
    from curate_pipeline.config.needs import needed_modules

    assert needed_modules(load_config(None)) == {}
    assert "jieba" in needed_modules(load_config("fineweb2"))["rules.word_splitter"]
    assert needed_modules(load_config("fineweb")) == {"rules.word_splitter": ("spacy",)}
    code = ("import sys; sys.modules['jieba'] = None; from curate_pipeline.cli import main; "
            "sys.exit(main(sys.argv[1:]))")  # fmt: skip
    warc = tmp_path / "x.warc.gz"
    warc.write_bytes(b"")
    r = subprocess.run([sys.executable, "-c", code, "run", "--config", "fineweb2", "--input",
                        str(warc), "--output", str(tmp_path / "out")], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    assert "rules.word_splitter needs jieba" in r.stderr
    assert "pip install 'curate-pipeline[multilingual]'" in r.stderr and "Spark" not in r.stderr


def test_the_config_schema_validates_the_presets():
    """Issue 64: `curate config schema` is the JSON Schema of every setting (for editors):
    each preset validates against it, a wrong type does not."""
    import json

    import jsonschema

    r = subprocess.run([sys.executable, "-m", "curate_pipeline.cli", "config", "schema"],
                       capture_output=True, text=True, cwd=ROOT, check=True)  # fmt: skip
    schema = json.loads(r.stdout)
    assert {"langid", "rules", "steps", "spark"} <= set(schema["properties"])
    for name in ("default", "fineweb2", "dclm"):
        jsonschema.validate(load_config(name).model_dump(mode="json"), schema)
    bad = load_config(None).model_dump(mode="json")
    bad["langid"]["threshold"] = "high"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
