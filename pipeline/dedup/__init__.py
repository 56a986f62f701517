"""Deduplication: exact (normalised-text fingerprints) and near (MinHash-LSH)."""
