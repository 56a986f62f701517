"""The run: checks before Spark (`preflight.py`), inputs, the documents pass in chunks with
their markers (`chunks.py`, `stage_store.py`), the stage chain and the manifest
(`orchestrate.py`), the counts (`outcomes.py`), the output lock, quality training, warm
Python workers (`warmup.py`, `worker_daemon.py`), the driver's early imports
(`driver_preload.py`), the driver JVM's class archive (`jvm_archive.py`) and `curate pack`."""
