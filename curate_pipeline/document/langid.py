"""Language identification with a fastText model (lid.176, GlotLID): prediction and verdict."""

from __future__ import annotations

from collections.abc import Sequence

from curate_pipeline.config import LangIdConf

LABEL_PREFIX = "__label__"


def load_fasttext(path: str):
    import fasttext

    return fasttext.load_model(path)


def predict_languages(model, texts: Sequence[str]) -> list[tuple[str, float]]:
    """(language, probability) of each text. fastText reads one line, so newlines become
    spaces; predicting on a list is the batched call (and the one numpy 2 accepts)."""
    if not texts:
        return []
    labels, probs = model.predict([t.replace("\n", " ") for t in texts], k=1)
    out = []
    for lab, p in zip(labels, probs, strict=True):
        if not len(lab):
            out.append(("unknown", 0.0))
            continue
        out.append((lab[0].removeprefix(LABEL_PREFIX), min(1.0, float(p[0]))))
    return out


def language_verdict(
    lang: str, score: float, conf: LangIdConf, key: str | None = None,
    key_threshold: float | None = None,
) -> tuple[str, str] | None:  # fmt: skip
    """(reason, detail) for the ledger, or None when the document is kept. `key`: its
    per-language recipe, whose `key_threshold` (language_score) replaces langid.threshold."""
    threshold = conf.threshold if key_threshold is None else key_threshold
    if score < threshold:
        whose = f" ({key}'s language_score)" if key_threshold is not None else ""
        return "low_confidence", f"best guess {lang} {score:.3f} < {threshold:g}{whose}"
    if not (conf.keeps(lang) or (key is not None and conf.keeps(key))):
        return "not_kept", f"{lang} {score:.3f}"
    return None


VIEW_NAMES = {"page": "visible text", "main": "main-content text"}


def cheap_view(html: str, view: str = "main", chars: int = 10000) -> str:
    """A page's text in a few milliseconds, for the pre-filter: resiliparse's plain text of
    the main content (`main`) or of everything visible (`page`), its first `chars`."""
    from resiliparse.extract.html2text import extract_plain_text

    from curate_pipeline.document.extractors import check_nesting

    check_nesting(html)  # too deep: the view fails and decides nothing (the page is extracted)
    text = extract_plain_text(html, main_content=view == "main", alt_texts=False, links=False,
                              form_fields=False, noscript=False)  # fmt: skip
    return text[:chars]


def prefilter_verdict(lang: str, score: float, conf: LangIdConf) -> tuple[str, str] | None:
    """(reason, detail) when the cheap view is confidently in a language not kept."""
    if score >= conf.prefilter_threshold and not conf.keeps(lang):
        return "not_kept", (
            f"{lang} {score:.3f} on the page's {VIEW_NAMES[conf.prefilter_view]}, decided "
            f"before extraction (langid.prefilter_threshold {conf.prefilter_threshold:g})"
        )
    return None
