"""Deduplication keys: exact (normalised-text fingerprints) and near (MinHash signatures)."""
