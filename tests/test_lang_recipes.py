"""LID labels to FineWeb-2's per-language recipe keys (conf/fineweb2/configs), no Spark.

The keys checked by hand against FineWeb-2's own naming: the macrolanguages lid.176 labels
by their ISO 639-1 code take the individual language FineWeb-2 keys them by; languages
written in several scripts take the script of the document's letters.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curate_pipeline.config import Config
from curate_pipeline.document.lang_recipes import RecipeKeys
from curate_pipeline.document.langid import load_fasttext
from curate_pipeline.stages.langid import lid_model_path

ROOT = Path(__file__).resolve().parents[1]
KEYS = {p.stem for p in (ROOT / "conf" / "fineweb2" / "configs").glob("*.yml")}


@pytest.fixture(scope="module")
def keys() -> RecipeKeys:
    assert len(KEYS) == 1929  # FineWeb-2 @d0defb2, shipped unchanged
    return RecipeKeys(KEYS)


def test_every_lid176_label_has_a_recipe_but_english(keys):
    labels = load_fasttext(str(lid_model_path(Config()))).get_labels()
    assert len(labels) == 176
    got = {label.removeprefix("__label__"): keys.key_for(label) for label in labels}
    assert [label for label, key in got.items() if key is None] == ["en"]  # FineWeb-2 has none
    assert all(key in KEYS for key in got.values() if key is not None)
    # the macrolanguages, as FineWeb-2 keys them
    assert {label: got[label] for label in ("zh", "ar", "fa", "ms", "sw", "no", "et", "lv",
                                            "mn", "ne", "ps", "yi", "sq", "uz", "az", "qu")} == {
        "zh": "cmn_Hani", "ar": "arb_Arab", "fa": "fas_Arab", "ms": "zsm_Latn",
        "sw": "swh_Latn", "no": "nob_Latn", "et": "ekk_Latn", "lv": "lvs_Latn",
        "mn": "khk_Cyrl", "ne": "npi_Deva", "ps": "pbt_Arab", "yi": "ydd_Hebr",
        "sq": "als_Latn", "uz": "uzn_Latn", "az": "azj_Latn", "qu": "quz_Latn",
    }  # fmt: skip
    assert (got["de"], got["ja"], got["ko"], got["bh"]) == (
        "deu_Latn", "jpn_Jpan", "kor_Hang", "bho_Deva"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("label", "text", "key"),
    [
        ("sr", "Ово је текст на српском језику.", "srp_Cyrl"),
        ("sr", "Ovo je tekst na srpskom jeziku.", "srp_Latn"),
        ("uz", "Бу ўзбек тилидаги матн.", "uzn_Cyrl"),
        ("uz", "Bu oʻzbek tilidagi matn.", "uzn_Latn"),
        ("hi", "यह हिंदी में लिखा गया है।", "hin_Deva"),
        ("hi", "yah hindi mein likha gaya hai", "hin_Latn"),
        ("pa", "ਇਹ ਪੰਜਾਬੀ ਵਿੱਚ ਹੈ", "pan_Guru"),
        ("sr", "12345 ...", "srp_Cyrl"),  # no letters: the language's likely script (CLDR)
        ("sr", "", "srp_Cyrl"),
    ],
)
def test_the_script_is_the_documents(keys, label, text, key):
    assert keys.key_for(label, text) == key


def test_glotlid_labels_are_keys_already(keys):
    assert keys.key_for("__label__deu_Latn", "whatever") == "deu_Latn"
    assert keys.key_for("srp_Latn", "Ово је текст") == "srp_Latn"  # the model said Latin
    assert keys.key_for("eng_Latn") is None  # no FineWeb-2 recipe: the default applies
    assert keys.key_for("xx") is None and keys.key_for("not a label") is None
