"""The regex filter (datatrove's RegexFilter): a document whose text matches one of the
configured patterns is dropped, the reason the pattern's name, the detail quoting the match.
Patterns are tried in the order the config lists them; the first match decides."""

from __future__ import annotations

import re
from collections.abc import Callable

from curate_pipeline.config import Config
from curate_pipeline.document.verdict import Drop, Verdict

QUOTE_CHARS = 80  # characters of the match quoted in the ledger's detail


def checker(cfg: Config) -> Callable[[dict], Verdict]:
    """The check of one document under `cfg.regex_filter`."""
    compiled = [(name, re.compile(p)) for name, p in cfg.regex_filter.patterns.items()]

    def check(doc: dict) -> Verdict:
        text = doc["text"] or ""
        for name, pattern in compiled:
            m = pattern.search(text)
            if m:
                quoted = " ".join(m.group(0).split())[:QUOTE_CHARS]
                return Drop(name, f"{quoted!r} at character {m.start()} (/{pattern.pattern}/)")
        return None

    return check
