"""Features of a page and of candidate extractions, for the extraction chooser.

Cheap by construction (one regex pass over the markup, a few over each text: well under a
millisecond on a median page) so that routing costs little beside the extractors it saves.
Page features say what kind of page it is (tag counts, forum/listing/product markup hints in
class and id names, schema.org types, the URL's shape); text features say what an extractor
kept (length, lines, punctuation, how much of the page's visible text, overlap with another
extractor). The same functions feed training (bench/extract_chooser_train.py) and inference
(pipeline.document.extract_strategy), so the two cannot drift.
"""

from __future__ import annotations

import math
import re
from collections import Counter

TAGS = (
    "a", "p", "li", "div", "table", "tr", "td", "article", "main", "form", "input", "h1", "h2",
    "h3", "img", "script", "pre", "code", "section", "ul", "span", "br", "button", "time",
    "blockquote", "nav", "aside", "footer", "header", "dl", "select", "textarea", "iframe",
)  # fmt: skip
# the markup scanned, lower-cased: all of it up to 100,000 characters, else the first and the
# middle 50,000 (the head's schema.org and og:type, the body's class names; inline scripts
# can fill a whole prefix). Case-insensitive patterns cost ~4x; a 1.8 MB page took 71 ms whole.
SCAN_CHARS = 100_000
_TAG = re.compile(r"<(" + "|".join(sorted(TAGS, key=len, reverse=True)) + r")[\s>/]")
# class and id values; each pattern starts with a literal, which `re` scans for fast
_CLASS = re.compile(r"""class\s*=\s*["']([^"']{1,200})""")
_ID = re.compile(r""" id\s*=\s*["']([^"']{1,200})""")
# markup hints of page types where extractors disagree most (forums, listings, products, docs)
HINTS = {
    "comment": ("comment",),
    "post": ("post", "reply", "thread", "topic", "message", "forum"),
    "product": ("product", "price", "cart", "sku", "add-to", "variant", "review"),
    "listing": ("listing", "card", "grid", "tile", "result", "teaser", "pagination"),
    "article": ("article", "entry", "story", "blog", "content", "body"),
    "docs": ("doc", "toc", "sidebar", "api", "highlight", "syntax"),
    "nav": ("nav", "menu", "breadcrumb", "footer", "header"),
}
_HINT_OF = {w: hint for hint, words in HINTS.items() for w in words}
_HINT_WORDS = re.compile("|".join(sorted(map(re.escape, _HINT_OF), key=len, reverse=True)))
# schema.org types as they appear in microdata (schema.org/Product) and JSON-LD ("@type":
# "Product"), over the whole page (a product's JSON-LD often sits past any window): patterns
# that start with a literal are fast (2 ms on a 1.8 MB page)
_MICRODATA = re.compile(r"schema\.org/(\w+)")
_JSON_LD = re.compile(r'"@type"\s*:\s*\[?\s*"(\w+)"')
SCHEMA_TYPES = {
    "article": ("Article", "NewsArticle", "BlogPosting", "Report"),
    "product": ("Product", "Offer", "AggregateRating"),
    "forum": ("DiscussionForumPosting", "Comment", "QAPage", "Question", "Answer"),
    "list": ("ItemList", "CollectionPage", "SearchResultsPage", "BreadcrumbList"),
}
_OG_TYPE = re.compile(r"og:type\"?\s+content=\"(\w+)")
_URL_HINTS = {
    "u_forum": ("forum", "thread", "topic", "community", "discuss", "question"),
    "u_product": ("product", "/p/", "shop", "store", "item"),
    "u_list": ("category", "tag/", "/tags", "search", "collections", "archive", "page/"),
    "u_docs": ("docs", "doc/", "documentation", "manual", "api", "reference", "guide"),
    "u_article": ("blog", "news", "article", "/20", "post"),
}


def page_features(html: str, url: str) -> dict[str, float]:
    """Markup features of a page (its HTML as decoded)."""
    f: dict[str, float] = {"html_kb": math.log1p(len(html) / 1024)}
    half, mid = SCAN_CHARS // 2, len(html) // 2
    scan = (html if len(html) <= SCAN_CHARS else html[:half] + html[mid : mid + half]).lower()
    tags = Counter(_TAG.findall(scan))
    total = sum(tags.values()) or 1
    for t in TAGS:
        f[f"t_{t}"] = math.log1p(tags[t])
    f["t_share_a"] = tags["a"] / total
    f["t_share_li"] = tags["li"] / total
    f["t_share_p"] = tags["p"] / total
    f["t_share_div"] = tags["div"] / total
    f["t_share_td"] = tags["td"] / total
    # the distinct class and id tokens (a few hundred), so the hint pattern runs on little text
    names = " ".join(set(" ".join(_CLASS.findall(scan) + _ID.findall(scan)).split()))
    hits = Counter(_HINT_OF[w] for w in _HINT_WORDS.findall(names))
    for hint in HINTS:
        f[f"h_{hint}"] = math.log1p(hits[hint])
    found = {w.lower() for w in _MICRODATA.findall(html) + _JSON_LD.findall(html)}
    found.update(_OG_TYPE.findall(scan))
    for kind, words in SCHEMA_TYPES.items():
        f[f"s_{kind}"] = float(any(w.lower() in found for w in words))
    low = (url or "").lower()
    for hint, words in _URL_HINTS.items():
        f[hint] = float(any(w in low for w in words))
    path = low.split("://", 1)[-1].split("?", 1)[0]
    f["u_depth"] = float(path.rstrip("/").count("/"))
    f["u_query"] = float("?" in low)
    return f


class Words:
    """An output's words, lowercased, found once for the text and the overlap features."""

    __slots__ = ("text", "set", "n")

    def __init__(self, text: str | None):
        self.text = text or ""
        words = self.text.lower().split()  # str.split: ~5x cheaper than a word regex
        self.n = len(words)
        self.set = frozenset(words)


_END_CHARS = frozenset(".!?。！？:;…\"')]")
_BULLETS = frozenset("•*-·")


def text_features(w: Words, prefix: str, visible: Words | None = None) -> dict[str, float]:
    """What one extractor kept: size, shape, and its share of the page's visible text."""
    text = w.text
    lines = [ln for ln in (x.strip() for x in text.split("\n")) if ln]
    n = max(1, len(lines))
    f = {
        f"{prefix}_chars": math.log1p(len(text)),
        f"{prefix}_words": math.log1p(w.n),
        f"{prefix}_lines": math.log1p(len(lines)),
        f"{prefix}_line_len": math.log1p(len(text) / n),
        f"{prefix}_punct_lines": sum(1 for ln in lines if ln[-1] in _END_CHARS) / n,
        f"{prefix}_short_lines": sum(1 for ln in lines if len(ln) < 30) / n,
        f"{prefix}_bullets": sum(1 for ln in lines if ln[0] in _BULLETS) / n,
        f"{prefix}_empty": float(not lines),
    }
    if visible is not None:
        f[f"{prefix}_of_visible"] = len(text) / max(1, len(visible.text))
    return f


def overlap_features(a: Words, b: Words, name: str) -> dict[str, float]:
    """How far two extractions agree: the share of each one's distinct words the other has."""
    common = len(a.set & b.set)
    return {
        f"o_{name}_ab": common / max(1, len(a.set)),
        f"o_{name}_ba": common / max(1, len(b.set)),
    }
