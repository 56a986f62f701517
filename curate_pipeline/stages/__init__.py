"""The Spark stages: one module per stage (read, extract, langid, rules, quality,
decontamination, exact and near dedup, pii, tokenize), the registry listing them in order
(`registry.py`), the row schema and the Arrow batch plumbing they share."""
