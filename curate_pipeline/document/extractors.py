"""The extractors a page's main text can come from: each a function (html, url) -> text or None.

Named candidates for the extraction strategies (curate_pipeline.document.extract_strategy). Each is
one library's own extraction with settings fixed here; none is hand-written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from itertools import accumulate

import trafilatura

Extractor = Callable[[str, str], "str | None"]


def trafilatura_default(html: str, url: str) -> str | None:
    # trafilatura's own defaults, comments and tables kept (conf/default.yaml: extract)
    return trafilatura.extract(
        html, url=url or None, output_format="txt", include_comments=True, include_tables=True,
        include_images=False, include_links=False, deduplicate=False, with_metadata=False,
    )  # fmt: skip


def trafilatura_fast(html: str, url: str) -> str | None:
    # trafilatura's own pass without its fallbacks (readability-lxml and jusText run and
    # compared on every page): about half its CPU
    return trafilatura.extract(
        html, url=url or None, output_format="txt", fast=True, include_comments=True,
        include_tables=True, include_images=False, include_links=False, deduplicate=False,
        with_metadata=False,
    )  # fmt: skip


def trafilatura_recall(html: str, url: str) -> str | None:
    return trafilatura.extract(
        html, url=url or None, output_format="txt", favor_recall=True, include_comments=True,
        include_tables=True, include_images=False, include_links=False, with_metadata=False,
    )  # fmt: skip


def trafilatura_precision(html: str, url: str) -> str | None:
    return trafilatura.extract(
        html, url=url or None, output_format="txt", favor_precision=True, include_comments=False,
        include_tables=True, include_images=False, include_links=False, with_metadata=False,
    )  # fmt: skip


# resiliparse's parser and main-content pass grow faster than linearly with nesting depth and
# run in C, where no time bound can interrupt them (10,000 nested divs: 1.4 s; 30,000: 32 s;
# 100,000: the process dies). Depth is bounded before any resiliparse call: a page with at most
# MAX_DEPTH opening tags cannot be deeper (one regex pass, in C); a page with more gets its
# depth counted (tags HTML closes implicitly, p/li/td/..., are not counted).
MAX_DEPTH = 3000  # 2,000 nested divs: 50 ms for main content
_NESTING = "div|span|font|section|article|table|ul|ol|a|b|i|em|strong|center|blockquote|form|nav"
_OPEN = re.compile(r"<(?:" + _NESTING + r")[\s>]", re.I)  # a literal first: fast
_TAG = re.compile(r"<(/?)(?:" + _NESTING + r")[\s>]", re.I)


class TooDeep(RecursionError):
    """A page nested too deeply for resiliparse (a RecursionError: the ledger's
    `extract_error` "document nested too deeply", like trafilatura's)."""


def check_nesting(html) -> None:
    if not isinstance(html, str) or html.count("<") <= MAX_DEPTH:
        return
    if len(_OPEN.findall(html)) <= MAX_DEPTH:
        return
    depth = max(accumulate(-1 if close else 1 for close in _TAG.findall(html)))
    if depth > MAX_DEPTH:
        raise TooDeep(f"{depth:,} elements deep (resiliparse's bound {MAX_DEPTH:,})")


def resiliparse_text(html, main: bool, comments: bool) -> str:
    """resiliparse's plain text of a page (or its parsed tree), block formatting kept."""
    from resiliparse.extract.html2text import extract_plain_text

    check_nesting(html)
    return extract_plain_text(
        html, preserve_formatting=True, main_content=main, list_bullets=True, alt_texts=False,
        links=False, form_fields=False, noscript=False, comments=comments,
    )  # fmt: skip


def resiliparse_main(html, url: str) -> str | None:  # noqa: ARG001
    # DCLM's extractor: resiliparse's main-content heuristics, block formatting kept
    return resiliparse_text(html, True, True)


def resiliparse_main_nocomments(html, url: str) -> str | None:  # noqa: ARG001
    return resiliparse_text(html, True, False)


def resiliparse_all(html, url: str) -> str | None:  # noqa: ARG001
    # every visible text of the page: listings and collections whose items are the content
    return resiliparse_text(html, False, True)


@lru_cache(maxsize=1)
def _all_stopwords() -> frozenset[str]:
    # jusText's stop lists of every language, as trafilatura's own jusText fallback builds them:
    # one list, so the extractor needs no language before extraction
    import justext

    words: set[str] = set()
    for lang in justext.get_stoplists():
        words |= justext.get_stoplist(lang)
    return frozenset(words)


def justext_all(html: str, url: str) -> str | None:  # noqa: ARG001
    import justext

    paragraphs = justext.justext(html, _all_stopwords())
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def readability(html: str, url: str) -> str | None:  # noqa: ARG001
    from readability import Document

    summary = Document(html).summary(html_partial=True)
    return resiliparse_text(summary, False, False)


def rs_trafilatura(html: str, url: str) -> str | None:
    # rs-trafilatura (Rust, PyPI): optional, its only wheel is for CPython 3.12 (docs/extraction.md)
    import rs_trafilatura as rs

    return rs.extract(html, url=url or None).main_content


EXTRACTORS: dict[str, Extractor] = {
    "trafilatura": trafilatura_default,
    "trafilatura_fast": trafilatura_fast,
    "trafilatura_recall": trafilatura_recall,
    "trafilatura_precision": trafilatura_precision,
    "resiliparse": resiliparse_main,
    "resiliparse_nocomments": resiliparse_main_nocomments,
    "resiliparse_all": resiliparse_all,
    "justext": justext_all,
    "readability": readability,
    "rs_trafilatura": rs_trafilatura,
}
