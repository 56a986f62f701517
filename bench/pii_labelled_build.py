# ruff: noqa: E501 (the composed table: one string and its context a line)
"""Build the labelled PII set (bench/data/pii_labelled.jsonl) that bench/pii_bench.py scores.

Mined: every e-mail-, IPv4- and IPv6-like string in the real texts of ../shared/data (WCXB
and Scrapinghub ground-truth main content, Dolma's Common Crawl texts), with 160 characters
of its context, labelled by the definitions below (written for this set, sharing no code
with curate_pipeline/document/text/pii.py) and then read through by hand (OVERRIDES).
Composed: real texts hold few public IP addresses and no public IPv6 one, so the set adds
contexts of the kinds the web has (forum posts, server logs, configs, changelogs, docs,
product pages) around true addresses, and the look-alikes reported on held-out pages.

PII here: an e-mail address of a mailbox at a domain that is not reserved for examples
(RFC 2606: example.com/.net/.org, .example, .test, .invalid); a public IP address (IPv4
global, IPv6 global unicast), as FineWeb's recipe replaces. Not PII: versions, section
numbers, OIDs, paths, times, code (`A::B`), image names (`logo@2x.png`), package pins
(`module@v1.2.3`), URL credentials' user part before a private host, private and
documentation addresses.

    python bench/pii_labelled_build.py
"""

from __future__ import annotations

import glob
import ipaddress
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "data" / "pii_labelled.jsonl"

_EMAILISH = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_V4ISH = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_V6ISH = re.compile(r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}")
_RESERVED = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|net|org)|example|test|invalid|localhost)$")

# read through by hand: (kind, string) -> (pii?, why)
OVERRIDES = {
    ("email", "w1@e.com"): (False, "a Celery worker's node name"),
    ("email", "w2@e.com"): (False, "a Celery worker's node name"),
    ("email", "myname@adomain.nosuchtld"): (False, "an invented address, says the text"),
}


def _texts() -> list[tuple[str, str]]:
    out = []
    for p in sorted(glob.glob(str(DATA / "extraction/wcxb_dev/ground-truth/*.json"))):
        g = json.loads(Path(p).read_text())["ground_truth"]
        out.append((f"wcxb/{Path(p).stem}", g.get("main_content") or ""))
    aeb = json.loads((DATA / "extraction/scrapinghub_aeb/ground-truth.json").read_text())
    for k, v in sorted(aeb.items()):
        out.append((f"aeb/{k[:12]}", v.get("articleBody") or ""))
    from curate_pipeline.config import Config
    from curate_pipeline.document.extract import process_record
    from curate_pipeline.stages.read import read_file_rows

    cfg = Config()
    for p in sorted((DATA / "warc").glob("*.warc*")):
        if p.name.endswith((".wat", ".wet", ".wat.gz", ".wet.gz")):
            continue
        for row in read_file_rows(0, str(p), cfg):
            if row["reject_reason"] is None:
                doc = process_record(row, cfg.extract, cfg.read)
                if doc.get("text"):
                    out.append((f"warc/{p.name[:24]}@{row['warc_offset']}", doc["text"]))
    for p in sorted((DATA / "text").glob("dolma_*.jsonl")):
        for line in p.read_text().split("\n"):
            if line.strip():
                d = json.loads(line)
                out.append((f"dolma/{d['id']}", d["text"]))
    return out


def _label_email(s: str, before: str) -> tuple[bool, str]:
    local, domain = s.rsplit("@", 1)
    tld = domain.rsplit(".", 1)[-1]
    if not tld.isalpha():
        return False, "no top-level domain: a version pin or a host"
    if tld.lower() in ("png", "jpg", "jpeg", "gif", "svg", "webp", "js", "css"):
        return False, "a file name"
    if _RESERVED.search(domain.lower()):
        return False, "a domain reserved for examples"
    if before.endswith("/"):
        return False, "a message id in a URL path"
    if re.search(r"//[^\s/@]*$", before):
        return False, "a URL's user part"
    return True, "a mailbox"


def _label_v4(s: str, text: str, a: int, b: int) -> tuple[bool, str]:
    if re.match(r"[\d.]", text[b : b + 1]) and text[b : b + 2] not in (". ", ".\n", "."):
        if re.match(r"\.\d", text[b : b + 2]):
            return False, "part of a longer dotted number"
    if a and re.match(r"[\w.\-]", text[a - 1]):
        return False, "part of a longer token"
    if a and text[a - 1] == "/" and text[a - 2 : a] != "//":
        return False, "a path segment"
    window = text[max(0, a - 30) : a].lower()
    if re.search(r"(version|release|section|§|chapter|build|firmware|openresty|wp|/)\s*$",
                 window):  # fmt: skip
        return False, "a version or a numbering"
    try:
        ip = ipaddress.IPv4Address(s)
    except ValueError:
        return False, "not an address"
    if ip.is_multicast:
        return False, "a multicast group"
    return (True, "a public address") if ip.is_global else (False, "a private or reserved one")


def _label_v6(s: str) -> tuple[bool, str]:
    try:
        ip = ipaddress.IPv6Address(s)
    except ValueError:
        return False, "not an address"
    if s.count(":") < 2 or not any(c.isdigit() for c in s):
        return False, "code or a word, not an address"
    if ip in ipaddress.ip_network("2000::/3") and ip.is_global:
        return True, "a public address"
    return False, "a private, documentation or reserved one"


def _window(text: str, a: int, b: int, target: str) -> str | None:
    ctx = text[max(0, a - 100) : b + 60]
    return ctx if ctx.count(target) == 1 else None


def mined() -> list[dict]:
    out, seen = [], set()
    for src, text in _texts():
        for kind, rx in (("email", _EMAILISH), ("ipv4", _V4ISH), ("ipv6", _V6ISH)):
            for m in rx.finditer(text):
                s, a, b = m.group(0), m.start(), m.end()
                if kind == "ipv6" and ("::" not in s and s.count(":") < 3):
                    continue  # times (12:30:45) are no candidates for anyone
                if (kind, s) in seen:
                    continue
                ctx = _window(text, a, b, s)
                if ctx is None:
                    continue
                seen.add((kind, s))
                if kind == "email":
                    pii, why = _label_email(s, text[max(0, a - 200) : a])
                elif kind == "ipv4":
                    pii, why = _label_v4(s, text, a, b)
                else:
                    pii, why = _label_v6(s)
                pii, why = OVERRIDES.get((kind, s), (pii, why))
                out.append({"kind": kind, "target": s, "context": " ".join(ctx.split()),
                            "pii": pii, "why": why, "origin": src})  # fmt: skip
    return out


# Composed: (kind, target, context, pii, why, genre). Public addresses are well-known
# resolvers' and real allocations' (Google, Cloudflare, Quad9, OpenDNS, Hurricane Electric,
# RIPE, Wikimedia); look-alikes are those seen on held-out pages.
COMPOSED = [
    (
        "ipv4",
        "8.8.4.4",
        "I changed the DNS on the router to 8.8.4.4 and the pages load again.",
        True,
        "forum",
    ),
    ("ipv4", "9.9.9.9", "nameserver 9.9.9.9\nnameserver 149.112.112.112", True, "config"),
    (
        "ipv4",
        "149.112.112.112",
        "Quad9's secondary resolver is 149.112.112.112, use it as a fallback.",
        True,
        "docs",
    ),
    (
        "ipv4",
        "208.67.222.222",
        "OpenDNS: set your primary DNS server to 208.67.222.222 in the adapter settings.",
        True,
        "docs",
    ),
    (
        "ipv4",
        "185.199.108.153",
        "A record: example-site.github.io -> 185.199.108.153 (GitHub Pages).",
        True,
        "docs",
    ),
    (
        "ipv4",
        "93.184.216.34",
        "$ ping site.org\nPING site.org (93.184.216.34): 56 data bytes",
        True,
        "log",
    ),
    (
        "ipv4",
        "66.249.66.1",
        '66.249.66.1 - - [12/Mar/2023:10:01:22 +0000] "GET /robots.txt HTTP/1.1" 200 68',
        True,
        "log",
    ),
    (
        "ipv4",
        "203.0.114.9",
        "Banned IP 203.0.114.9 after 5 failed SSH logins (fail2ban).",
        True,
        "log",
    ),
    ("ipv4", "81.2.69.160", "Reply from 81.2.69.160: bytes=32 time=24ms TTL=54", True, "log"),
    (
        "ipv4",
        "176.9.45.2",
        "My server's public IP is 176.9.45.2, can someone check if port 25 is blocked?",
        True,
        "forum",
    ),
    (
        "ipv4",
        "104.16.132.229",
        "curl -v https://api.service.io\n*   Trying 104.16.132.229:443...",
        True,
        "log",
    ),
    (
        "ipv4",
        "62.210.16.6",
        "Anonymous user (62.210.16.6) edited this page on 3 May.",
        True,
        "wiki",
    ),
    (
        "ipv4",
        "217.160.0.187",
        "Whois: inetnum 217.160.0.0 - 217.160.0.255, host 217.160.0.187 (1&1 IONOS)",
        True,
        "whois",
    ),
    ("ipv4", "45.33.32.156", "Nmap scan report for scanme.nmap.org (45.33.32.156)", True, "log"),
    (
        "ipv4",
        "198.41.0.4",
        "a.root-servers.net answers at 198.41.0.4 and 2001:503:ba3e::2:30.",
        True,
        "docs",
    ),
    (
        "ipv4",
        "31.13.71.36",
        "Connection to 31.13.71.36 port 443 [tcp/https] succeeded!",
        True,
        "log",
    ),
    (
        "ipv4",
        "52.95.110.1",
        "Allow inbound from 52.95.110.1/32 only (the office gateway).",
        True,
        "config",
    ),
    ("ipv4", "5.255.255.5", "IP-адрес сервера: 5.255.255.5, порт 8080.", True, "forum"),
    ("ipv4", "202.12.27.33", "我的服务器地址是202.12.27.33，请帮忙看看。", True, "forum"),
    ("ipv4", "77.88.55.242", "Server: 77.88.55.242 responded in 41 ms", True, "log"),
    (
        "ipv6",
        "2001:4860:4860::8888",
        "Google Public DNS over IPv6: 2001:4860:4860::8888 and 2001:4860:4860::8844.",
        True,
        "docs",
    ),
    (
        "ipv6",
        "2606:4700:4700::1111",
        "Set the IPv6 resolver to 2606:4700:4700::1111 in /etc/resolv.conf.",
        True,
        "docs",
    ),
    ("ipv6", "2620:fe::fe", "Quad9 answers on 2620:fe::fe as well.", True, "docs"),
    (
        "ipv6",
        "2001:470:1f0b:1da::2",
        "My HE tunnel endpoint is 2001:470:1f0b:1da::2, traffic stops after an hour.",
        True,
        "forum",
    ),
    (
        "ipv6",
        "2a00:1450:4001:82a::200e",
        "PING google.com(fra16s52-in-x0e.1e100.net (2a00:1450:4001:82a::200e)) 56 data bytes",
        True,
        "log",
    ),
    (
        "ipv6",
        "2a02:2e0:3fe:1001:302::",
        "Anonymous edit by 2a02:2e0:3fe:1001:302:: on 12 May",
        True,
        "wiki",
    ),
    (
        "ipv6",
        "2001:67c:2e8:22::c100:68b",
        "ripe.net has IPv6 address 2001:67c:2e8:22::c100:68b",
        True,
        "log",
    ),
    (
        "ipv6",
        "2620:0:862:ed1a::1",
        "Wikimedia's text cache: 2620:0:862:ed1a::1 (text-lb.eqiad)",
        True,
        "docs",
    ),
    (
        "ipv6",
        "2a03:2880:f12f:83:face:b00c:0:25de",
        "Trying 2a03:2880:f12f:83:face:b00c:0:25de...\nConnected.",
        True,
        "log",
    ),
    (
        "ipv6",
        "2600:1f18:24e6:b900:5a4c:8f3e:1d2a:9b7c",
        "Your IPv6 address: 2600:1F18:24E6:B900:5A4C:8F3E:1D2A:9B7C".lower(),
        True,
        "product",
    ),
    (
        "ipv6",
        "2001:503:ba3e::2:30",
        "a.root-servers.net answers at 198.41.0.4 and 2001:503:ba3e::2:30.",
        True,
        "docs",
    ),
    (
        "ipv6",
        "2404:6800:4003:c00::8a",
        "http://[2404:6800:4003:c00::8a]:80/ is reachable, https is not.",
        True,
        "forum",
    ),
    (
        "ipv6",
        "2001:41d0:8:e8ad::1",
        "Failed password for root from 2001:41d0:8:e8ad::1 port 50234 ssh2",
        True,
        "log",
    ),
    ("ipv6", "2a01:4f8:c17:b8f::2", "ListenAddress 2a01:4f8:c17:b8f::2", True, "config"),
    (
        "ipv6",
        "2604:a880:400:d1::7c2:d001",
        "Droplet IPv6: 2604:a880:400:d1::7c2:d001 gateway 2604:a880:400:d1::1",
        True,
        "product",
    ),
    ("ipv4", "1.0.0.1", "Cloudflare's second resolver, 1.0.0.1, answered in 9 ms.", True, "forum"),
    ("ipv4", "4.2.2.2", "Old habit: I still test with ping 4.2.2.2 first.", True, "forum"),
    ("ipv4", "64.6.64.6", "Verisign DNS (64.6.64.6) was shut down in 2022.", True, "docs"),
    ("ipv4", "80.80.80.80", "Freenom World used 80.80.80.80 as its resolver.", True, "docs"),
    ("ipv4", "151.101.1.69", "stackoverflow.com. 300 IN A 151.101.1.69", True, "log"),
    (
        "ipv4",
        "140.82.112.3",
        "git fetch: connect to 140.82.112.3 port 22: Connection timed out",
        True,
        "log",
    ),
    ("ipv4", "91.198.174.192", "X-Client-IP: 91.198.174.192", True, "log"),
    (
        "ipv4",
        "157.240.22.35",
        "Host facebook.com resolved to 157.240.22.35 from here.",
        True,
        "forum",
    ),
    (
        "ipv4",
        "172.217.16.142",
        "Tracing route to 172.217.16.142 over a maximum of 30 hops",
        True,
        "log",
    ),
    ("ipv4", "13.107.42.14", "Allow 13.107.42.14:443 in the firewall for Teams.", True, "config"),
    (
        "ipv4",
        "88.198.23.4",
        "server { listen 88.198.23.4:80; server_name blog.site; }",
        True,
        "config",
    ),
    (
        "ipv4",
        "195.8.215.68",
        "My VPS at 195.8.215.68 got blacklisted by Spamhaus yesterday.",
        True,
        "forum",
    ),
    ("ipv4", "41.204.224.1", "Our office in Nairobi exits via 41.204.224.1.", True, "forum"),
    ("ipv4", "200.160.2.3", "registro.br responde em 200.160.2.3.", True, "docs"),
    ("ipv4", "210.130.1.1", "NTP server: 210.130.1.1 (IIJ)", True, "config"),
    ("ipv6", "2a00:1450:4009:81f::200e", "AAAA 2a00:1450:4009:81f::200e", True, "log"),
    ("ipv6", "2620:119:35::35", "OpenDNS IPv6: 2620:119:35::35", True, "docs"),
    (
        "ipv6",
        "2001:4860:4860:0:0:0:0:8844",
        "full form 2001:4860:4860:0:0:0:0:8844 equals the short one",
        True,
        "docs",
    ),
    (
        "ipv6",
        "2001:0470:0000:0000:0000:0000:0000:0001",
        "HE's DNS: 2001:0470:0000:0000:0000:0000:0000:0001",
        True,
        "docs",
    ),
    ("ipv6", "2a01:7c8:aab5:4a2::1", "inet6 2a01:7c8:aab5:4a2::1/64 scope global", True, "log"),
    ("ipv6", "2001:1608:10:25::1c04:b12f", "DNS.WATCH: 2001:1608:10:25::1c04:b12f", True, "docs"),
    ("ipv6", "2604:4500::2a8a", "Our mail server 2604:4500::2a8a was listed again.", True, "forum"),
    (
        "ipv6",
        "2c0f:fb50:4003::1",
        "AfriNIC test host 2c0f:fb50:4003::1 answers pings.",
        True,
        "docs",
    ),
    ("ipv6", "2406:da18:94d:8201::1", "IPv6 地址：2406:da18:94d:8201::1", True, "forum"),
    (
        "ipv6",
        "2001:67c:1560:8003::14",
        "Connecting to ntp.ubuntu.com (2001:67c:1560:8003::14)",
        True,
        "log",
    ),
    ("ipv4", "21.0.3.1", "Chrome 21.0.3.1 beta is out.", False, "changelog"),
    ("ipv4", "4.0.3.2", "Android 4.0.3.2 on the old tablet.", False, "forum"),
    ("ipv4", "6.2.1.4", "§ 6.2.1.4 Exceptions", False, "docs"),
    ("ipv4", "3.2.1.0", "Chapter 3.2.1.0 introduces the model.", False, "docs"),
    ("ipv4", "20.1.2.3", "/opt/app/20.1.2.3/bin/start.sh", False, "docs"),
    ("ipv4", "5.6.7.8", "dotnet-sdk-5.6.7.8-linux-x64.tar.gz", False, "docs"),
    ("ipv4", "2.0.0.1", "Build 2.0.0.1 fixes the login bug.", False, "changelog"),
    ("ipv4", "16.4.1.3", "Firmware 16.4.1.3 for the printer is out.", False, "product"),
    ("ipv4", "1.1.1.2", "Table 1.1.1.2 lists the limits.", False, "docs"),
    ("ipv4", "172.16.0.5", "The NAS is at 172.16.0.5 on my LAN.", False, "forum"),
    ("ipv4", "100.64.0.1", "CGNAT gateway 100.64.0.1", False, "config"),
    ("ipv4", "240.0.0.1", "240.0.0.1 is in the reserved class E block.", False, "docs"),
    ("ipv6", "Foo::Bar", "call Foo::Bar() from the parent", False, "code"),
    ("ipv6", "Ba::Be", "The Ba::Be class is private.", False, "code"),
    ("ipv6", "ff02::1", "ping ff02::1%eth0 reaches every node on the link", False, "docs"),
    ("ipv6", "::ffff:0:0", "The mapped prefix ::ffff:0:0/96", False, "docs"),
    ("email", "avatar@2x.gif", "avatar@2x.gif", False, "code"),
    ("email", "vue@3.4.21", "yarn add vue@3.4.21", False, "code"),
    ("email", "mail@domain.example", "mail@domain.example is a placeholder", False, "docs"),
    (
        "email",
        "anna.kowalska@uni.wroc.pl",
        "Kontakt: dr Anna Kowalska, anna.kowalska@uni.wroc.pl, pok. 214.",
        True,
        "product",
    ),
    (
        "email",
        "j.smith+newsletter@gmail.com",
        "I signed up with j.smith+newsletter@gmail.com and never got the mail.",
        True,
        "forum",
    ),
    (
        "email",
        "SUPPORT@SHOP-ONLINE.DE",
        "Fragen? Schreiben Sie an SUPPORT@SHOP-ONLINE.DE.",
        True,
        "product",
    ),
    ("email", "tanaka@mail.co.jp", "連絡先：tanaka@mail.co.jp（田中）", True, "product"),
    (
        "email",
        "dev@xn--bcher-kva.ch",
        "Mail us at dev@xn--bcher-kva.ch for the source.",
        True,
        "product",
    ),
    # look-alikes seen on held-out pages
    (
        "ipv4",
        "17.0.4.1",
        "Safari 17.0.4.1 fixes the rendering bug on macOS Sonoma.",
        False,
        "changelog",
    ),
    ("ipv4", "115.0.2.1", "Crashes since Firefox 115.0.2.1 when opening PDFs.", False, "forum"),
    ("ipv4", "2.3.1.4", "as required by section 2.3.1.4 of the contract.", False, "docs"),
    (
        "ipv4",
        "3.10.2.1",
        "Download from /releases/3.10.2.1/installer.exe and run it.",
        False,
        "docs",
    ),
    ("ipv4", "4.2.1.7", "Upgrade to version 4.2.1.7 before the next release.", False, "changelog"),
    (
        "ipv4",
        "6.1.2.3",
        "Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/6.1.2.3 Safari/537.36",
        False,
        "log",
    ),
    (
        "ipv4",
        "1.2.3.4",
        "python-1.2.3.4.tar.gz is the last build that supports it.",
        False,
        "changelog",
    ),
    ("ipv4", "9.1.0.2", "v9.1.0.2 (2023-04-01): fixed a crash on start.", False, "changelog"),
    ("ipv4", "12.2.0.3", "iOS 12.2.0.3 is not supported any more.", False, "product"),
    ("ipv4", "1.3.6.1", "The OID 1.3.6.1.4.1.311 belongs to Microsoft.", False, "docs"),
    ("ipv4", "5.4.0.1", "Figure 5.4.0.1 shows the flow.", False, "docs"),
    ("ipv4", "192.168.1.100", "ssh admin:1234@192.168.1.100 then reboot the box.", False, "forum"),
    ("ipv4", "10.0.0.138", "Router login at http://10.0.0.138/ with admin/admin.", False, "forum"),
    ("ipv4", "2.16.8.1", "Firmware build 2.16.8.1 for the WR841N.", False, "product"),
    ("ipv4", "3.4.5.6", "See step 3.4.5.6 in the manual.", False, "docs"),
    ("ipv4", "1.0.0.2", "requests==2.31.0, urllib3 1.0.0.2-beta", False, "code"),
    ("ipv4", "8.0.2.1", "kernel 8.0.2.1-rc3 boots fine", False, "forum"),
    ("ipv4", "7.1.1.1", "Rule 7.1.1.1 applies to every member.", False, "docs"),
    ("ipv4", "11.4.2.7", "Release 11.4.2.7 notes: performance improvements.", False, "changelog"),
    (
        "ipv4",
        "203.0.113.7",
        "e.g. 203.0.113.7 (an address reserved for documentation)",
        False,
        "docs",
    ),
    ("ipv6", "A::B", "namespace alias: using A::B; then call A::B::run().", False, "code"),
    ("ipv6", "::a", "print *, arr(::a) ! every a-th element in Fortran", False, "code"),
    ("ipv6", "dead::beef", "The magic marker dead::beef shows up in the dump.", False, "forum"),
    ("ipv6", "std::", "Use std::vector instead of raw arrays.", False, "code"),
    ("ipv6", "fe80::1", "link-local fe80::1%eth0 is the gateway", False, "config"),
    ("ipv6", "2001:db8::42", "Example: 2001:db8::42 is reserved for documentation.", False, "docs"),
    ("ipv6", "::1", "bind to ::1 for localhost only", False, "config"),
    ("ipv6", "fd12:3456:789a::1", "ULA address fd12:3456:789a::1 on the LAN", False, "config"),
    ("ipv6", "Ab::Cd", "Fortran: call Ab::Cd(x)", False, "code"),
    ("ipv6", "bad::face", "Perl's bad::face module is deprecated.", False, "code"),
    ("ipv6", "cafe::", "class cafe:: is undefined", False, "code"),
    ("ipv6", "1::2", "Matrix slice m[1::2] takes every second row.", False, "code"),
    ("email", "logo@2x.png", '<img src="logo@2x.png" srcset="logo@3x.png 3x">', False, "code"),
    ("email", "icon@3x.webp", "assets/icon@3x.webp is missing from the build", False, "code"),
    ("email", "banner@2x.jpg", "Upload banner@2x.jpg for retina screens.", False, "product"),
    ("email", "lodash@4.17.21", "npm install lodash@4.17.21 --save", False, "code"),
    ("email", "react@18.2.0", "pin react@18.2.0 and react-dom@18.2.0", False, "code"),
    ("email", "node@20.11.1", "mise use node@20.11.1", False, "code"),
    (
        "email",
        "user@localhost",
        "git clone ssh://git@localhost/repo works, user@localhost does not",
        False,
        "code",
    ),
    (
        "email",
        "alice@example.net",
        "To: alice@example.net (a placeholder in the RFC)",
        False,
        "docs",
    ),
    ("email", "bob@mail.test", "Set MAIL_FROM=bob@mail.test in the test config.", False, "config"),
    ("email", "foo@bar.invalid", "an address like foo@bar.invalid never resolves", False, "docs"),
    (
        "email",
        "1234@192.168.1.100",
        "ssh admin:1234@192.168.1.100 then reboot the box.",
        False,
        "forum",
    ),
    (
        "email",
        "pass@db.internal.com",
        "postgres://app:pass@db.internal.com:5432/prod",
        False,
        "config",
    ),
]


def composed() -> list[dict]:
    out = []
    for kind, target, context, pii, genre in COMPOSED:
        assert context.count(target) >= 1, target
        out.append({"kind": kind, "target": target, "context": context, "pii": pii,
                    "why": "composed", "origin": f"composed/{genre}"})  # fmt: skip
    return out


def main() -> int:
    rows = mined() + composed()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w") as fh:
        for i, r in enumerate(rows):
            fh.write(json.dumps({"id": i, **r}, ensure_ascii=False) + "\n")
    by = {}
    for r in rows:
        k = (r["kind"], r["pii"])
        by[k] = by.get(k, 0) + 1
    print(f"{len(rows)} strings -> {OUT}: {sorted(by.items())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
