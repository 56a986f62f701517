"""PII formatting (pipeline/document/text/pii.py) on real-looking text, and the stage in a run."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pipeline.config import PiiConf
from pipeline.document.text.pii import redact

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


@pytest.mark.spark
def test_the_stage_runs_before_tokens_and_counts_in_the_manifest(spark, cfg, sample_warc,
                                                                 tmp_path):  # fmt: skip
    from pipeline.run.orchestrate import run

    c = cfg.model_copy(deep=True)
    c.pii.enabled = True
    m = run(c, [str(sample_warc)], tmp_path / "out", spark)
    data = pq.read_table(tmp_path / "out" / "data").to_pylist()
    assert data and all("pii_emails" in d["metadata"] for d in data)
    emails = sum(d["metadata"]["pii_emails"] for d in data)
    assert m["pii"].get("emails_replaced", 0) == emails
