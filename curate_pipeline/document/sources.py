"""Source rules: the first rule whose every given pattern matches names a document's source."""

from __future__ import annotations

import re
from functools import cached_property
from urllib.parse import urlsplit

from curate_pipeline.config import SourceRule


def _host(url: str | None) -> str:
    try:
        return (urlsplit(url).hostname or "") if url else ""
    except ValueError:  # e.g. http://[www.example.com]/: no host rule can match it
        return ""


class SourceMatcher:
    def __init__(self, rules: list[SourceRule], default: str):
        self.rules = rules
        self.default = default

    @cached_property
    def _compiled(self):
        return [
            (r.source, r.hosts, re.compile(r.url_regex) if r.url_regex else None,
             re.compile(r.path_regex) if r.path_regex else None)
            for r in self.rules
        ]  # fmt: skip

    def source(self, url: str | None, input_path: str | None) -> str:
        host = _host(url)
        for name, hosts, url_re, path_re in self._compiled:
            if hosts and not any(host == h or host.endswith("." + h) for h in hosts):
                continue
            if url_re and not (url and url_re.search(url)):
                continue
            if path_re and not (input_path and path_re.search(input_path)):
                continue
            return name
        return self.default
