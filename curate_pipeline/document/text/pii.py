"""PII formatting (FineWeb's last step, datatrove's PIIFormatter): e-mail addresses and IP
addresses in kept text are replaced by fixed stand-ins. What is replaced, and why the rest is
not (docs/pii.md has the measured precision and recall against datatrove's):

- E-mail: datatrove's pattern (RFC 5322's local part, a dotted domain or a bracketed IP), then
  three checks a match must pass. Its last label is a top-level domain: letters (or an `xn--`
  IDN) on the Public Suffix List, never digits (`admin:1234@192.168.1.100`,
  `module@v1.2.3`), an unknown name (`name@domain.nosuchtld`) or a file extension
  (`logo@2x.png`). It is not a URL's user part (`http://user:pass@host`). Its domain is not
  one reserved for examples (RFC 2606/6761: example.com/.net/.org, .example, .test,
  .invalid, .localhost): those name nobody.
- IPv4: a dotted quad standing alone: not inside a longer dotted run (1.3.6.1.4.1), not joined
  to a word or a hyphen (python3.11.2.1, pkg-1.2.3.4, 1.2.3.4-beta), not a path segment
  (/download/17.0.4.1/; a URL's host after `//` is an address), not after a word that makes
  it a version or a numbering (version, v, build, release, firmware, section, §, chapter,
  figure, table, step, rule, and product names: Firefox 115.0.2.1, iOS 17.0.4.1).
- IPv6: a valid address (`ipaddress`), with a digit and two groups at least or three groups
  (C++ `A::B`, Fortran `::a`, `dead::beef` are not addresses in text).
- Multicast groups (224.0.0.0/4) are nobody's host. Public only (`pii.public_ips_only`,
  FineWeb's setting): an IPv4 address `ipaddress` calls global, an IPv6 address in global
  unicast 2000::/3 (private, loopback, link-local, documentation and other reserved ranges
  stay: they identify no one).
- Obfuscated forms ("name at example dot com") are left alone: matching them replaces ordinary
  prose too often.
Replacements are chosen by the match's place in its document (first, second, ...), cycling
through the configured stand-ins, so the output does not depend on the order documents were
processed (datatrove cycles one counter across documents).
"""

from __future__ import annotations

import ipaddress
import re
from functools import cache

from tld import get_tld
from tld.utils import get_tld_names

_EMAIL = re.compile(
    # datatrove's, with an ASCII left edge for \b: text in Chinese runs into addresses
    r"(?<![A-Za-z0-9!#$%&'*+/=?^_`{|}~.-])[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
    r"(?P<domain>(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"|\[(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\])"
)
_TLD = re.compile(r"(?i)^(?:[a-z]{2,24}|xn--[a-z0-9-]{2,59})$")
# file extensions seen after `name@2x.`, `icon@3x.` ...: never e-mail domains in practice
_FILE_EXTENSIONS = frozenset(
    "png jpg jpeg gif svg webp avif bmp ico tif tiff heic css js mjs ts json xml html htm "
    "php asp aspx jsp pdf txt md csv zip gz tgz bz2 xz rar mp3 mp4 m4a webm ogg wav mov avi "
    "woff woff2 ttf otf eot map exe dll dmg apk deb rpm jar rb java".split()
)
_RESERVED_DOMAINS = ("example.com", "example.net", "example.org")
_RESERVED_TLDS = frozenset(("example", "test", "invalid", "localhost", "local"))
_URL_USER = re.compile(r"//[^\s/@]*$")  # what precedes a URL's user part

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"
# ASCII letters and digits only around it: text in Chinese or Japanese runs into addresses
_IPV4 = re.compile(
    rf"(?<![A-Za-z0-9_.\-])(?:{_OCTET}\.){{3}}{_OCTET}(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])"
)
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_NOT_AN_ADDRESS_BEFORE = re.compile(
    r"(?i)(?:\bv|\bver\.?|\bversions?|\breleases?|\bbuilds?|\bfirmware|\bupdates?|\bkernel"
    r"|\brev(?:ision)?\.?|\bpatch|\bsections?|\bsec\.|§|\bchapters?|\bch\.|\bclauses?"
    r"|\barticles?|\bart\.|\bfig(?:ure)?s?\.?|\btables?|\bsteps?|\bparts?|\bparagraphs?"
    r"|\bpara\.|\bappendix|\bitems?|\brules?|\bno\.|\bnumber|\bedition|\blevel|\boid"
    r"|\bfirefox|\bchrome|\bchromium|\bsafari|\bopera|\bios|\bipados|\bmacos|\bandroid"
    r"|\bwindows|\bjava|\bjdk|\bpython|\bphp|\bperl|\bruby|\bmysql|\bpostgres(?:ql)?"
    r"|\bnginx|\bapache|\btomcat|\bthunderbird|\bsdk|\bdriver|\bbios)"
    r"\s*[:#]?\s*\(?$"
)
_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")


@cache
def _suffix_list() -> None:
    """Load the Public Suffix List once, loudly: `get_tld(fail_silently=True)` would also
    swallow a missing list, and every address would then stay (an environment failure
    turned into per-document verdicts)."""
    get_tld_names(fail_silently=False)


def _known_tld(domain: str) -> bool:
    tld = domain.rsplit(".", 1)[-1].lower()
    if not _TLD.match(tld) or tld in _FILE_EXTENSIONS or tld in _RESERVED_TLDS:
        return False
    # no such top-level domain: the Public Suffix List (bundled by `tld`) decides
    return get_tld("http://" + domain, fail_silently=True) is not None


def _email_end(text: str, m: re.Match) -> int:
    """Where the e-mail address the match starts with ends (0: it is none). A domain that
    runs into the next sentence (`a@b.com.Next`) is cut back to its last real TLD."""
    local, domain = m.group(0)[: m.start("domain") - m.start() - 1], m.group("domain")
    if "/" in local:
        return 0  # a URL's path (lore.kernel.org/<message-id>@host): no mailbox
    if not domain.startswith("["):
        labels = domain.split(".")
        while len(labels) >= 2 and not _known_tld(".".join(labels)):
            labels.pop()
        if len(labels) < 2:
            return 0
        domain = ".".join(labels)
        low = domain.lower()
        if any(low == d or low.endswith("." + d) for d in _RESERVED_DOMAINS):
            return 0
    if _URL_USER.search(text, max(0, m.start() - 200), m.start()) is not None:
        return 0
    return m.start("domain") + len(domain)


def _is_ipv4(text: str, m: re.Match, public_only: bool) -> bool:
    start = m.start()
    if start and text[start - 1] == "/" and text[max(0, start - 2) : start] != "//":
        return False  # a path segment: /download/17.0.4.1/
    if _NOT_AN_ADDRESS_BEFORE.search(text, max(0, start - 40), start):
        return False
    try:
        ip = ipaddress.IPv4Address(m.group(0))
    except ValueError:
        return False  # leading zeros: 01.02.03.04
    if ip.is_multicast:
        return False  # a group (224.0.0.0/4), no one's host
    return ip.is_global or not public_only


def _is_ipv6(found: str, public_only: bool) -> bool:
    groups = [g for g in found.split(":") if g]
    has_digit = any(ch.isdigit() for ch in found)
    if len(groups) < 3 and not (len(groups) >= 2 and has_digit):
        return False
    try:
        ip = ipaddress.IPv6Address(found)
    except ValueError:
        return False
    return not public_only or (ip in _GLOBAL_UNICAST and ip.is_global)


def redact(
    text: str,
    emails: tuple[str, ...],
    ips: tuple[str, ...],
    ipv6s: tuple[str, ...] = (),
    public_only: bool = True,
) -> tuple[str, int, int]:
    """(text, e-mails replaced, IPs replaced); an empty stand-in tuple leaves that kind
    (IPv6 addresses take `ipv6s`, else `ips`)."""
    n_email = n_ip = 0
    if emails and "@" in text:
        _suffix_list()
        source = text

        def email(m: re.Match) -> str:
            nonlocal n_email
            end = _email_end(source, m)
            if not end:
                return m.group(0)
            n_email += 1
            return emails[(n_email - 1) % len(emails)] + source[end : m.end()]

        text = _EMAIL.sub(email, text)
    if ips:

        def stand_in(v6: bool) -> str:
            nonlocal n_ip
            n_ip += 1
            pool = ipv6s if v6 and ipv6s else ips
            return pool[(n_ip - 1) % len(pool)]

        if "." in text:
            source = text
            text = _IPV4.sub(
                lambda m: stand_in(False) if _is_ipv4(source, m, public_only) else m.group(0),
                text,
            )
        if ":" in text:
            text = _IPV6.sub(
                lambda m: stand_in(True) if _is_ipv6(m.group(0), public_only) else m.group(0),
                text,
            )
    return text, n_email, n_ip
