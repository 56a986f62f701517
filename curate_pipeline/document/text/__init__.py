"""Per-document text logic with no Spark: word splitting and the filter rule sets."""
