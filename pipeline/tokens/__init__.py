"""Tokenisation and the token shards a trainer memory-maps."""
