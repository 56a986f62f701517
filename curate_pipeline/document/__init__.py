"""Per-document logic: plain functions over bytes, strings and arrays, no Spark (a test keeps
it so): reading archives (`warc/`), extraction, language ID, URL filter, text rules, PII and
decontamination (`text/`), the quality classifier (`quality/`), dedup keys and signatures
(`dedup/`), source rules and the tokenizer."""
