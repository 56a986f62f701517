"""Stage `pii`: e-mail and public IP addresses in the text replaced
(curate_pipeline/document/text/pii.py),
a per-document step before tokenisation, so the tokens and shards hold the redacted text.
Each document gets `pii_emails` and `pii_ips`, the replacements made in it."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession

from curate_pipeline.config import Config
from curate_pipeline.document.text.pii import redact
from curate_pipeline.stages.step import DocumentStep, Stage, Verdict, each

PII_FIELDS = [pa.field("pii_emails", pa.int32()), pa.field("pii_ips", pa.int32())]


def pii_step(spark: SparkSession, cfg: Config) -> DocumentStep:  # noqa: ARG001 (no model)
    c = cfg.pii
    emails = tuple(c.email_replacements) if c.emails else ()
    ips = tuple(c.ip_replacements) if c.ips else ()
    ipv6s = tuple(c.ipv6_replacements) if c.ips else ()

    def format_pii(doc: dict) -> Verdict:
        doc["text"], doc["pii_emails"], doc["pii_ips"] = redact(
            doc["text"] or "", emails, ips, ipv6s, c.public_ips_only
        )
        return None  # rewrites, never drops

    return DocumentStep(PII_FIELDS, each(format_pii))


STAGE = Stage("pii", step=pii_step, enabled=lambda c: c.pii.enabled, passed=None)
