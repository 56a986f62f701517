"""PII formatting (curate_pipeline/document/text/pii.py) on real-looking text, and the stage in a
run."""

from __future__ import annotations

import pytest
from run_outputs import version_rows

from curate_pipeline.config import PiiConf
from curate_pipeline.document.text.pii import redact

C = PiiConf()
E, IPS, IPS6 = tuple(C.email_replacements), tuple(C.ip_replacements), tuple(C.ipv6_replacements)


def _r(text: str) -> tuple[str, int, int]:
    return redact(text, E, IPS, IPS6)


def test_emails_are_replaced_in_order_including_inside_links():
    text = ("Questions? Write to maria.gonzalez@uni-hamburg.de or, for press, "
            "<a href=\"mailto:press+eu@newsroom.example.co.uk\">the press office</a>.")  # fmt: skip
    out, n_email, n_ip = _r(text)
    assert (n_email, n_ip) == (2, 0)
    assert "maria.gonzalez" not in out and "press+eu" not in out
    assert "email@example.com" in out and "mailto:firstname.lastname@example.org" in out


def test_public_ips_go_private_and_documentation_ranges_stay():
    text = ("Our resolver at 8.8.8.8 timed out; the router (192.168.0.1), localhost "
            "127.0.0.1, the docs' 203.0.113.7 and 2001:db8::42 are examples. Public v6: "
            "2606:4700:4700::1111. Visit http://93.184.216.34/index.html.")  # fmt: skip
    out, n_email, n_ip = _r(text)
    assert n_ip == 3
    for kept in ("192.168.0.1", "127.0.0.1", "203.0.113.7", "2001:db8::42"):
        assert kept in out
    for gone in ("8.8.8.8", "2606:4700:4700::1111", "93.184.216.34"):
        assert gone not in out
    assert "2001:db8::1" in out  # an IPv6 stand-in for the IPv6 address


def test_version_numbers_times_and_obfuscations_are_left_alone():
    text = (
        "Upgrade to version 4.2.1.7 (build 10.0.19041.1); firmware v2.3.4.5 is older. "
        "The meeting is at 12:30:45. Reach me at john at example dot com."
    )
    assert _r(text) == (text, 0, 0)


def test_same_text_same_output():
    text = "a@b.org c@d.org 8.8.8.8 1.1.1.1 9.9.9.9"
    assert _r(text) == _r(text)
    assert _r(text)[0].split() == [E[0], E[1], IPS[0], IPS[1], IPS[2]]


def test_look_alikes_seen_on_held_out_pages_stay():
    text = (
        "Safari 17.0.4.1 and Firefox 115.0.2.1 fail; see section 2.3.1.4 and "
        "/releases/3.10.2.1/setup.exe. In C++ write A::B, in Fortran arr(::a); the marker "
        'dead::beef. <img src="logo@2x.png"> ssh admin:1234@192.168.1.100, '
        "go get example.com/mod@v1.2.3, lore.kernel.org/r/Pine.LNX.4.58@ppc970.osdl.org, "
        "alice@example.net, foo@bar.invalid, 224.0.0.251 (mDNS)."
    )
    assert _r(text) == (text, 0, 0)


def test_true_addresses_in_their_notations_are_found():
    text = (
        "Mail anna.kowalska@uni.wroc.pl or show@no-priors.com.Sarah Guo writes; "
        "网站地图fyzw88@126.com; "
        "IPv6 2001:4860:4860::8888, [2404:6800:4003:c00::8a]:80, 2001:0470:0000:0000:0000:0000:"
        "0000:0001; IPv4 我的服务器地址是202.12.27.33，and 66.249.66.1 - - [12/Mar/2023]."
    )
    out, n_email, n_ip = _r(text)
    assert (n_email, n_ip) == (3, 5), out
    assert ".Sarah Guo" in out and "网站地图email@example.com" in out


def test_every_address_when_the_recipe_says_so():
    text = "router 192.168.0.1, docs 2001:db8::42, public 8.8.8.8, code A::B"
    out, _, n_ip = redact(text, E, IPS, IPS6, public_only=False)
    assert n_ip == 3 and "A::B" in out and "192.168.0.1" not in out


def test_the_labelled_set_precision_and_recall():
    """bench/data/pii_labelled.jsonl (bench/pii_bench.py: datatrove's PIIFormatter scores
    P 0.671 / R 0.848 on it): precision at least 0.99, recall at least datatrove's."""
    import json
    from pathlib import Path

    path = Path(__file__).parents[1] / "bench" / "data" / "pii_labelled.jsonl"
    rows = [json.loads(line) for line in path.read_text().split("\n") if line]
    assert len(rows) >= 300
    tp = fp = fn = 0
    for r in rows:
        replaced = r["target"] not in _r(r["context"])[0]
        tp += replaced and r["pii"]
        fp += replaced and not r["pii"]
        fn += not replaced and r["pii"]
    assert tp / (tp + fp) >= 0.99 and tp / (tp + fn) >= 0.848, (tp, fp, fn)


@pytest.mark.spark
def test_the_stage_runs_before_tokens_and_counts_in_the_manifest(spark, cfg, sample_warc,
                                                                 tmp_path):  # fmt: skip
    from curate_pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.pii.enabled = True
    m = run(c, [str(sample_warc)], tmp_path / "out", spark)
    data = version_rows(tmp_path / "out", "data")
    assert data and all("pii_emails" in d["metadata"] for d in data)
    emails = sum(d["metadata"]["pii_emails"] for d in data)
    assert m["pii"].get("emails_replaced", 0) == emails
