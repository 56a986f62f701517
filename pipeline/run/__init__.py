"""The run: checks before Spark (`preflight.py`), inputs, the documents pass in chunks with
their markers (`chunks.py`, `stage_store.py`), the stage chain and the manifest
(`orchestrate.py`), the counts (`outcomes.py`), the output lock, and quality training."""
