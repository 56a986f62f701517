"""PII formatting (FineWeb's last step, datatrove's PIIFormatter): e-mail addresses and public
IP addresses in kept text are replaced by fixed stand-ins.

- E-mail: datatrove's pattern (RFC 5322's local part, a dotted domain or a bracketed IP).
- IPv4 and IPv6: a candidate is replaced only when `ipaddress` calls it global: private,
  loopback, link-local, documentation (192.0.2.0/24, 2001:db8::/32 ...) and other reserved
  ranges are left alone; so is a dotted quad after "version", "v", "build" and the like, or
  inside a longer dotted number (1.2.3.4.5): version numbers, not addresses.
- Obfuscated forms ("name at example dot com") are left alone: matching them replaces ordinary
  prose too often.
Replacements are chosen by the match's place in its document (first, second, ...), cycling
through the configured stand-ins, so the output does not depend on the order documents were
processed (datatrove cycles one counter across documents).
"""

from __future__ import annotations

import ipaddress
import re

_EMAIL = re.compile(
    r"\b[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
    r"(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"|\[(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\])"
)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"
_IPV4 = re.compile(rf"(?<![\d.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\d]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_VERSION_BEFORE = re.compile(
    r"(?i)(?:\bv|\bver\.?|\bversion|\brelease|\bbuild|\bfirmware|\bupdate|\bkernel)\s*[:#]?\s*$"
)


def _public(candidate: str) -> bool:
    try:
        return ipaddress.ip_address(candidate).is_global
    except ValueError:
        return False


def redact(
    text: str, emails: tuple[str, ...], ips: tuple[str, ...], ipv6s: tuple[str, ...] = ()
) -> tuple[str, int, int]:
    """(text, e-mails replaced, IPs replaced); an empty stand-in tuple leaves that kind
    (IPv6 addresses take `ipv6s`, else `ips`)."""
    n_email = n_ip = 0
    if emails and "@" in text:

        def email(m: re.Match) -> str:
            nonlocal n_email
            n_email += 1
            return emails[(n_email - 1) % len(emails)]

        text = _EMAIL.sub(email, text)
    if ips:

        def ip(m: re.Match) -> str:
            nonlocal n_ip
            found = m.group(0)
            if not _public(found):
                return found
            if "." in found and _VERSION_BEFORE.search(text, 0, m.start()):
                return found
            n_ip += 1
            pool = ipv6s if ":" in found and ipv6s else ips
            return pool[(n_ip - 1) % len(pool)]

        if "." in text:
            text = _IPV4.sub(ip, text)
        if ":" in text:
            text = _IPV6.sub(ip, text)
    return text, n_email, n_ip
