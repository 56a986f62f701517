"""curate-pipeline: web-crawl archives in, clean deduplicated mixture-weighted shards out.

The layers, bottom up (docs/architecture.md):
- `document/`: per-document logic, no Spark (archives, extraction, language ID, rules,
  quality, dedup keys and signatures, tokenizer, URL/PII/decontamination);
- `stages/`: the Spark stages, one module each, and the registry that lists them;
- `engine/`: Spark plumbing (session, warm workers, class archive, local cluster, models);
- `outputs/`: what a run publishes (mixture shards, token shards, budget, report);
- `run/`: the run (orchestration, chunks and markers, preflight, outcomes, lock);
- `examples/`: the data the project writes itself (sample WARC, demo, test corpora).
`config/` is read by all of them; `cli.py` is the `curate` command.
"""
