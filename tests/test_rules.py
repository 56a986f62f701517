"""The Gopher quality and repetition rules (and the C4/FineWeb sets), pure Python."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import pytest
import regex

from curate_pipeline.config import RulesConf
from curate_pipeline.document.text.gopher import quality_stats, repetition_stats
from curate_pipeline.document.text.rules import checks, evaluate
from curate_pipeline.document.text.words import split_words
from curate_pipeline.examples.sample import ARTICLE_BREAD, ARTICLE_RIVER

ROOT = Path(__file__).resolve().parents[1]

RULES = RulesConf()
CHECKS = checks(RULES)


def failed(text: str, rule_sets=None, rules: RulesConf = RULES, lang: str = "en") -> list[str]:
    if rule_sets is not None:
        rules = rules.model_copy(update={"rule_sets": rule_sets})
    return evaluate(text, lang, rules, checks(rules)).failed


def _unique_words(n: int, length: int = 8, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        out["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(length))] = None
    return list(out)


def test_articles_pass_every_rule():
    for text in (ARTICLE_RIVER, ARTICLE_BREAD):
        assert failed(text) == []


def test_navigation_bar_fails_word_count_and_stop_words():
    nav = "Home | About us | Contact | Privacy policy | Log in"
    broken = failed(nav)
    assert "gopher_quality.short_doc" in broken
    assert "gopher_quality.stop_words" in broken
    outcome = evaluate(nav, "en", RULES, CHECKS)
    assert any("n_words 8 < 50" in d for d in outcome.details)


def test_bullet_page_fails_the_bullet_rule():
    items = [f"- {w} for the garden and the house, with care" for w in _unique_words(20)]
    broken = failed("Our products:\n" + "\n".join(items), ["gopher_quality"])
    assert broken == ["gopher_quality.bullet_lines"]


def test_ellipsis_page_fails_the_ellipsis_line_rule():
    words = _unique_words(40)
    lines = [
        f"The story of {a} and the {b} begins here..."
        for a, b in zip(words, words[1:], strict=False)
    ]
    lines = lines[:12] + [f"Read the full story of {w} with us today." for w in words[:20]]
    broken = failed("\n".join(lines), ["gopher_quality"])
    assert broken == ["gopher_quality.ellipsis_lines"]


def test_hash_and_ellipsis_symbol_ratios():
    words = _unique_words(60)
    prose = " ".join(f"the {w}" for w in words) + " and"  # two distinct stop words
    assert failed(prose + " #tag" * 20, ["gopher_quality"]) == ["gopher_quality.hash_ratio"]
    with_ellipses = prose + " …" * 20 + " the end."
    assert failed(with_ellipses, ["gopher_quality"]) == ["gopher_quality.ellipsis_ratio"]


def test_word_length_and_alpha_rules():
    short = " ".join(["a", "of", "the", "to", "be"] * 20)
    assert failed(short, ["gopher_quality"]) == ["gopher_quality.short_words"]
    long_words = " ".join(f"the {w}" for w in _unique_words(60, length=30)) + " and"
    assert failed(long_words, ["gopher_quality"]) == ["gopher_quality.long_words"]
    numbers = " ".join(["the and of to"] + [str(i * 7919) for i in range(100)])
    assert failed(numbers, ["gopher_quality"]) == ["gopher_quality.alpha_words"]


def test_stop_words_are_per_language_and_case_insensitive():
    text = " ".join(_unique_words(60)) + " The. With."
    assert failed(text, ["gopher_quality"]) == []
    assert failed(text.replace("The. With.", ""), ["gopher_quality"]) == [
        "gopher_quality.stop_words"
    ]
    # a language without a stop-word list skips that rule only
    assert failed("xylophone yonder", ["gopher_quality"], lang="fr") == ["gopher_quality.short_doc"]
    rules = RULES.model_copy(update={"gopher_quality": RULES.gopher_quality.model_copy(
        update={"stop_words": {"fr": ["le", "la", "et"]}})})  # fmt: skip
    assert "gopher_quality.stop_words" in failed(
        "xylophone yonder", ["gopher_quality"], rules, "fr"
    )


def test_null_threshold_disables_a_rule():
    q = RULES.gopher_quality.model_copy(update={"min_doc_words": None, "min_stop_words": None})
    rules = RULES.model_copy(update={"gopher_quality": q})
    nav = "Home | About us | Contact | Privacy policy | Log in"
    assert "gopher_quality.short_doc" not in failed(nav, rules=rules)


# --- repetition: one text per rule, built to break exactly that rule --------------------


def _line_rule_text(kind: str) -> str:
    w = iter(_unique_words(4000, seed=1))

    def line(n: int) -> str:
        return " ".join(next(w) for _ in range(n))

    if kind == "dup_line_frac":  # many short repeated lines among long unique ones
        lines = []
        for _ in range(10):
            lines += [line(30), "ok"]
        return "\n".join(lines[:16])
    if kind == "dup_para_frac":  # short repeated paragraphs among long multi-line ones
        paras = ["\n".join(line(12) for _ in range(5)) for _ in range(10)]
        return "\n\n".join(paras + ["ok"] * 6)
    if kind == "dup_line_char_frac":  # one long single-token line, twice
        long_token = "x" * 300
        return "\n".join([long_token] + [line(18) for _ in range(5)] + [long_token])
    if kind == "dup_para_char_frac":  # a paragraph of many 2-character lines, twice
        cjk = iter(chr(0x4E00 + i) for i in range(2000))
        para = "\n".join(next(cjk) + " " for _ in range(100))
        extras = ["\n".join(next(cjk) * 3 for _ in range(30)) for _ in range(5)]
        return "\n\n".join([para] + extras[:3] + [para] + extras[3:])  # not last: strip()
    raise ValueError(kind)


def _gram_text(n_rep: int, kind: str, target: float, m: int = 20) -> str:
    """m occurrences of a repeated n_rep-gram between unique words, padded with unique
    filler so that the rule's statistic lands on `target`."""
    words = iter(_unique_words(5000, seed=2))
    if kind == "top":
        # every shorter prefix of the repeated gram occurs twice more (so it is the most
        # frequent shorter gram) and is short; the last word is long, carrying the chars
        gram = [next(words)[:1] for _ in range(n_rep - 1)] + [next(words) * 3]
        extra = [[next(words)] + gram[:-1] + [next(words)] for _ in range(2)]
        chars = (sum(map(len, gram)) + n_rep - 1) * m
    else:
        gram = [next(words) for _ in range(n_rep)]
        extra = []
        chars = sum(map(len, gram)) * (m - 1)
    tokens: list[str] = []
    for _ in range(m):
        tokens += [next(words)] + gram
    for e in extra:
        tokens += e
    tokens.append(next(words))
    text = " ".join(tokens)
    while chars / len(text) > target:
        text += " " + next(words)
    return text


REPETITION_CASES = {
    "dup_line_frac": _line_rule_text("dup_line_frac"),
    "dup_para_frac": _line_rule_text("dup_para_frac"),
    "dup_line_char_frac": _line_rule_text("dup_line_char_frac"),
    "dup_para_char_frac": _line_rule_text("dup_para_char_frac"),
    "top_2_gram": _gram_text(2, "top", 0.25),
    "top_3_gram": _gram_text(3, "top", 0.22),
    "top_4_gram": _gram_text(4, "top", 0.20),
    "dup_5_gram": _gram_text(5, "dup", 0.158),
    "dup_6_gram": _gram_text(6, "dup", 0.155),
    "dup_7_gram": _gram_text(7, "dup", 0.142),
    "dup_8_gram": _gram_text(8, "dup", 0.13),
    "dup_9_gram": _gram_text(9, "dup", 0.118),
    "dup_10_gram": _gram_text(10, "dup", 0.105),
}


@pytest.mark.parametrize("rule", sorted(REPETITION_CASES))
def test_each_repetition_rule_has_a_text_breaking_only_it(rule):
    assert failed(REPETITION_CASES[rule], ["gopher_repetition"]) == [f"gopher_repetition.{rule}"]


# --- the fast n-gram statistics equal a plain reading of datatrove's definitions --------


def _reference(text: str, words: list[str]) -> dict[str, float]:
    def top(n):
        grams = [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
        if not grams:
            return 0
        g, c = Counter(grams).most_common(1)[0]
        return len(g) * c if c > 1 else 0

    def dup(n):
        seen, i, chars = set(), 0, 0
        while i < len(words) - n + 1:
            g = "".join(words[i : i + n])
            key = tuple(words[i : i + n])
            if key in seen:
                chars += len(g)
                i += n
            else:
                seen.add(key)
                i += 1
        return chars

    out = {f"top_{n}_gram_char_frac": top(n) / len(text) for n in (2, 3, 4)}
    out.update({f"dup_{n}_gram_char_frac": dup(n) / len(text) for n in range(5, 11)})
    return out


@pytest.mark.parametrize("seed", range(30))
def test_vectorised_ngram_stats_match_reference(seed):
    rng = random.Random(seed)
    length = rng.choice([1, 4, 7])
    vocab = _unique_words(min(26**length, rng.choice([3, 8, 30, 200])), length, seed)
    words = [rng.choice(vocab) for _ in range(rng.randint(0, 400))]
    if rng.random() < 0.5 and len(words) > 30:  # paste a copied run, as scrapers do
        i = rng.randrange(len(words) - 20)
        words[i:i] = words[: rng.randint(5, 20)]
    text = " ".join(words) or "x"
    got = repetition_stats(text, split_words(text), (2, 3, 4), range(5, 11))
    ref = _reference(text, split_words(text))
    for key, value in ref.items():
        assert got[key] == pytest.approx(value), key


_PIECES = ["the", "The", "of", "and", "Straße", "don't", "3.14", "x²", "²", "naïve", "ு",
           "தும", "_", "a_b", "#", "...", "…", "-", "•", "—", "2024", "state-of-the-art",
           "Ⅻ", "‍", " ", " ", " ", "\n", "\n", "\n\n", "\t", "  "]  # fmt: skip


def _plain_quality(text: str, words: list[str], stop: frozenset, bullets, all_lines: bool):
    """The quality statistics as Rae et al. define them, one token and one line at a time."""
    word = [w for w in words if regex.search(r"[\w\p{M}]", w)]
    lines = [ln.strip() for ln in text.splitlines()]
    lines = lines if all_lines else [ln for ln in lines if ln]
    n = len(words)
    return {
        "n_words": float(len(word)),
        "mean_word_length": sum(len(w) for w in word) / len(word) if word else 0.0,
        "hash_ratio": text.count("#") / n if n else 0.0,
        "ellipsis_ratio": (text.count("...") + text.count("…")) / n if n else 0.0,
        "bullet_lines_ratio": sum(ln.startswith(bullets) for ln in lines) / (len(lines) or 1),
        "ellipsis_lines_ratio": (
            sum(ln.endswith(("...", "…")) for ln in lines) / (len(lines) or 1)
        ),
        "alpha_words_ratio": (
            sum(1 for w in word if regex.search(r"[^\W\d_]", w)) / n if n else 0.0
        ),
        "stop_words": float(len({w.lower() for w in word} & stop)),
    }


def _plain_duplicates(parts: list[str]) -> tuple[int, int]:
    seen: set[str] = set()
    n = chars = 0
    for p in parts:
        if p in seen:
            n, chars = n + 1, chars + len(p)
        seen.add(p)
    return n, chars


@pytest.mark.parametrize("seed", range(40))
def test_fast_statistics_match_their_plain_definitions(seed):
    """The C-level shortcuts (str.isalpha before the regexes, str.split for lines, set sizes
    for duplicates) give what a token-by-token, line-by-line count gives, on text mixing
    scripts, marks, digits, symbols and blank lines (edges included: leading/trailing
    newlines, nothing at all)."""
    rng = random.Random(seed)
    text = "".join(rng.choice(_PIECES) for _ in range(rng.choice([0, 1, 5, 60, 400])))
    if seed % 5 == 0:
        text = "\n" + text + "\n\n"
    words = split_words(text)
    stop = frozenset(["the", "of", "and"])
    for all_lines in (False, True):
        got = quality_stats(text, words, stop, ("•", "-"), False, all_lines)
        assert got == _plain_quality(text, words, stop, ("•", "-"), all_lines)
    got = repetition_stats(text, words, (2,), (5,))
    size = len(text) or 1
    paras, lines = re.split(r"\n{2,}", text.strip()), re.split(r"\n+", text)
    (dp, dpc), (dl, dlc) = _plain_duplicates(paras), _plain_duplicates(lines)
    assert got["dup_para_frac"] == dp / len(paras)
    assert got["dup_para_char_frac"] == dpc / size
    assert got["dup_line_frac"] == dl / len(lines)
    assert got["dup_line_char_frac"] == dlc / size


def test_c4_rules_edit_lines_and_drop_documents():
    rules = RULES.model_copy(update={"rule_sets": ["c4"]})
    good = "\n".join(f"The {w} walked along the river bank today." for w in _unique_words(6))
    noisy = good + "\nPlease enable JavaScript to view this site.\nHome | Menu\nshort line."
    out = evaluate(noisy, "en", rules, checks(rules))
    assert out.failed == [] and out.text == good
    assert evaluate("Lorem ipsum dolor sit amet.\n" + good, "en", rules, checks(rules)).failed == [
        "c4.lorem_ipsum"
    ]
    code = good + "\nThe code reads { return the value of x; } in the end."
    assert failed(code, ["c4"]) == ["c4.curly_bracket"]
    assert failed("One sentence here is fine.", ["c4"]) == ["c4.too_few_sentences"]


def test_fineweb_rules():
    good = "\n".join(
        f"The {w} walked along the river bank and looked at the water today." for w in
        _unique_words(8)
    )  # fmt: skip
    assert failed(good, ["fineweb"]) == []
    short = "\n".join(_unique_words(10))
    assert failed(short, ["fineweb"]) == [
        "fineweb.line_punct",
        "fineweb.short_lines",
        "fineweb.list_ratio",
    ]
    dup = good + "\n" + good.splitlines()[0]
    assert failed(dup, ["fineweb"]) == ["fineweb.char_dup"]


def test_rules_report_every_broken_rule_in_order():
    text = "#1 …\n#2 …\n" * 3
    broken = failed(text)
    assert broken[0].startswith("gopher_repetition.")
    assert {"gopher_quality.short_doc", "gopher_quality.hash_ratio"} <= set(broken)
    assert len(broken) == len(set(broken)) > 4


def test_split_words_separates_punctuation():
    assert split_words("Don't stop-me now, it's 3.14... #1!") == [
        "Don't", "stop-me", "now", ",", "it's", "3.14", "...", "#", "1", "!",
    ]  # fmt: skip
    assert re.fullmatch(r"\w+", split_words("ünïcode wörds")[0])


def test_stop_words_are_counted_distinct():
    """Gopher (and datatrove) need two *different* words of the list: "the" twice is one."""
    from curate_pipeline.document.text.gopher import quality_stats
    from curate_pipeline.document.text.words import split_words

    stop = frozenset(["the", "be", "to", "of", "and", "that", "have", "with"])
    once = "The cat sat on the mat near the door"
    stats = quality_stats(once, split_words(once), stop, ("•",))
    assert stats["stop_words"] == 1.0
    two = "The cat sat on the mat and slept"
    assert quality_stats(two, split_words(two), stop, ("•",))["stop_words"] == 2.0


# Real sentences whose words carry combining marks (Mn/Mc): vowel signs and viramas in
# Tamil, Devanagari and Thai script, Thaana's vowel marks, Russian stress marks.
MARKED = {
    "ta": "தமிழ் மொழி உலகின் பழமையான மொழிகளில் ஒன்று",
    "hi": "हिन्दी भारत की राजभाषा है और इसे देवनागरी लिपि में लिखा जाता है",
    "dv": "ދިވެހިބަހީ ދިވެހިރާއްޖޭގެ ރަސްމީ ބަހެވެ",
    "th": "ภาษาไทย เป็น ภาษา ที่ มี ระดับ เสียง ของ คำ",
    "ru": "Ру́сский язы́к — оди́н из восточнославя́нских языко́в",
}


def test_words_keep_their_combining_marks():
    from curate_pipeline.document.quality.tokens import classifier_tokens
    from curate_pipeline.document.text.words import split_words

    for lang, text in MARKED.items():
        plain = [w for w in text.split() if w != "—"]
        assert [w for w in split_words(text) if w != "—"] == plain, lang
        assert classifier_tokens(text) == [w.lower() for w in plain], lang


# Decisions of datatrove 0.10.1 on small texts, recorded from its filters (bench/
# rules_datatrove.py in the anchor venv): the preset (conf/fineweb.yaml) must make them.
DATATROVE_DECISIONS = {
    "Hello world. This is a test.": {
        "gopher_repetition": "top_2_gram", "gopher_quality": "short_doc",
        "c4": "too_few_sentences", "fineweb": "short_lines",
    },
    "": {"gopher_repetition": "empty", "gopher_quality": "short_doc",
         "c4": "too_few_sentences", "fineweb": "empty"},
}  # fmt: skip


def test_the_fineweb_preset_makes_datatrove_decisions():
    from curate_pipeline.config import load_config

    preset = load_config(ROOT / "conf" / "fineweb.yaml").rules
    for text, expected in DATATROVE_DECISIONS.items():
        for name, rule in expected.items():
            got = failed(text, [name], rules=preset)
            assert got and got[0] == f"{name}.{rule}", (text, name, got)
    # the default keeps a short clean text's single 2-gram (the top n-gram must repeat)
    assert "gopher_repetition.top_2_gram" not in failed("Hello world. This is a test.",
                                                        ["gopher_repetition"])  # fmt: skip


def test_spacy_words_split_as_datatrove_does():
    from curate_pipeline.document.text.spacy_words import spacy_sentences, spacy_words

    assert spacy_words("Don't stop-the-art e.g. $5.00 it's\n\n3.14...") == [
        "Do", "n't", "stop", "-", "the", "-", "art", "e.g.", "$", "5.00", "it", "'s", "3.14",
        "...",
    ]  # fmt: skip
    assert spacy_sentences("One here. Two here! Three?") == 3
    assert spacy_sentences("") == 1
