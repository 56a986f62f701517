"""Mixture weights: how often each source is seen, and the shards written from them."""
