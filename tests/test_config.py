from pathlib import Path

import pytest

from pipeline.config import Config, ConfigError, load_config

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
    with pytest.raises(ConfigError, match="file not found"):
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
