"""Arrow schemas of the rows passed between stages: the data contract between them.

A stage output holds every row that reached the stage: kept rows have `reject_reason` null,
rows this stage dropped carry `reject_stage`/`reject_reason`/`reject_detail`.
"""

from __future__ import annotations

import pyarrow as pa

REJECT_FIELDS = [
    pa.field("reject_stage", pa.string()),
    pa.field("reject_reason", pa.string()),
    pa.field("reject_detail", pa.string()),
]

_RECORD_META = [
    pa.field("doc_id", pa.string(), nullable=False),
    pa.field("url", pa.string()),
    pa.field("host", pa.string()),
    pa.field("warc_date", pa.string()),
    pa.field("warc_type", pa.string()),
    pa.field("warc_file", pa.string()),
    pa.field("warc_offset", pa.int64()),
    pa.field("crawl_pos", pa.int64()),
    pa.field("http_status", pa.int32()),
    pa.field("content_type", pa.string()),
    # a damaged stretch's length in file bytes (read:corrupt_file / unreadable_file rows)
    pa.field("skipped_bytes", pa.int64()),
    # a text input's fields other than id, text, url and date, as a JSON object
    pa.field("input_metadata", pa.string()),
]

# Output of the read stage: the raw payload of candidate pages.
RECORD_SCHEMA = pa.schema(
    _RECORD_META
    + [
        pa.field("transfer_encoding", pa.string()),
        pa.field("content_encoding", pa.string()),
        pa.field("payload", pa.binary()),
    ]
    + REJECT_FIELDS
)

# Output of the extract stage: decoded text.
DOC_SCHEMA = pa.schema(
    _RECORD_META
    + [
        pa.field("charset", pa.string()),
        # where the text came from: "balanced/trafilatura_recall" (strategy/extractor), or the
        # backend
        pa.field("extractor", pa.string()),
        pa.field("text", pa.string()),
        # its UTF-8 length after every per-document step (stages/arrow_batches.py text_bytes)
        pa.field("text_bytes", pa.int64()),
    ]
    + REJECT_FIELDS
)


def spark_schema(schema: pa.Schema):
    """The Spark StructType for an Arrow schema (pyspark imported lazily)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
