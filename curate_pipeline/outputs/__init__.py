"""What a run publishes: mixture-weighted Parquet shards (`mixture/`), token shards and the
Megatron format (`tokens/`), the token budget, and the report."""
