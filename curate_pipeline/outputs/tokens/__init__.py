"""The token shards a trainer memory-maps, and the Megatron-LM indexed format."""
