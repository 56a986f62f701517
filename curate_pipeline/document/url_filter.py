"""The URL filter: a page's verdict from its URL alone, decided before extraction (a blocked
page costs no trafilatura time). Semantics of datatrove's URLFilter (FineWeb's first step),
with lists read from files the user names in `url_filter` (plain or gzipped, one entry a
line, `#` comments):

- an allowed domain (or a subdomain of one) passes whatever else matches;
- a blocked domain blocks itself and its subdomains (`url:blocked_domain`);
- a blocked URL blocks that URL, compared normalised: scheme and host lowercased, default
  port and fragment dropped, trailing slash of the path ignored (`url:blocked_url`);
- a banned word blocks when it is a whole token of the URL (tokens: lowercase runs of letters
  and digits) (`url:banned_word`);
- soft-banned words block at `soft_threshold` distinct tokens or more (`url:soft_banned`).
The ledger detail names the matching entry. No list ships with the project
(docs/configuration.md: URL filter, for where the usual ones come from and their format).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

_TOKENS = re.compile(r"[a-z0-9]+")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def read_list(path: str | Path) -> list[str]:
    """Entries of a list file: stripped, lowercased, no blanks, no `#` comments."""
    p = Path(path)
    raw = p.read_bytes()
    if p.suffix == ".gz" or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    out = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        line = line.split("#", 1)[0].strip().lower()
        if line:
            out.append(line)
    return out


def normalize_url(url: str) -> str:
    """Scheme and host lowercased, default port and fragment dropped, no trailing slash."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return url.strip().lower()
    scheme = parts.scheme.lower()
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def host_of(url: str) -> str:
    try:
        return (urlsplit(url.strip()).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


def _domain_hit(host: str, domains: frozenset[str]) -> str | None:
    """The entry of `domains` that is `host` or one of its parent domains."""
    while host:
        if host in domains:
            return host
        _, _, host = host.partition(".")
    return None


@dataclass(frozen=True)
class UrlFilter:
    blocked_domains: frozenset[str] = frozenset()
    blocked_urls: frozenset[str] = frozenset()
    banned_words: frozenset[str] = frozenset()
    soft_banned_words: frozenset[str] = frozenset()
    allowed_domains: frozenset[str] = frozenset()
    soft_threshold: int = 2

    def verdict(self, url: str | None) -> tuple[str, str] | None:
        """(reason, detail) when the URL is blocked, else None."""
        if not url:
            return None
        host = host_of(url)
        if self.allowed_domains and _domain_hit(host, self.allowed_domains):
            return None
        hit = _domain_hit(host, self.blocked_domains) if self.blocked_domains else None
        if hit:
            return "blocked_domain", hit
        if self.blocked_urls and normalize_url(url) in self.blocked_urls:
            return "blocked_url", normalize_url(url)
        if self.banned_words or self.soft_banned_words:
            tokens = set(_TOKENS.findall(url.lower()))
            banned = sorted(tokens & self.banned_words)
            if banned:
                return "banned_word", banned[0]
            soft = sorted(tokens & self.soft_banned_words)
            if len(soft) >= self.soft_threshold:
                return "soft_banned", ", ".join(soft)
        return None


LIST_KEYS = ("blocked_domains", "blocked_urls", "banned_words", "soft_banned_words",
             "allowed_domains")  # fmt: skip


def list_files(conf) -> dict[str, list[str]]:
    """The list files `conf` (UrlFilterConf) names, by config key; none when it is off."""
    return {k: list(getattr(conf, k)) for k in LIST_KEYS} if conf.enabled else {}


def list_digests(conf) -> dict[str, str]:
    """SHA-256 of each list file: what a chunk's extraction fingerprint includes."""
    return {p: hashlib.sha256(Path(p).read_bytes()).hexdigest()
            for paths in list_files(conf).values() for p in paths}  # fmt: skip


def load_url_filter(conf) -> UrlFilter | None:
    """The filter `conf` (UrlFilterConf) describes, or None when it is off or lists nothing."""
    if not conf.enabled:
        return None

    def entries(paths: list[str], normalise=None) -> frozenset[str]:
        out: set[str] = set()
        for p in paths:
            items = read_list(p)
            out.update(map(normalise, items) if normalise else items)
        return frozenset(out)

    return UrlFilter(
        blocked_domains=entries(conf.blocked_domains, lambda d: d.rstrip(".")),
        blocked_urls=entries(conf.blocked_urls, normalize_url),
        banned_words=entries(conf.banned_words),
        soft_banned_words=entries(conf.soft_banned_words),
        allowed_domains=entries(conf.allowed_domains, lambda d: d.rstrip(".")),
        soft_threshold=conf.soft_threshold,
    )
