"""Spark engine plumbing: the session (`spark.py`), where Spark reads and writes
(`storage.py`, `parquet_source.py`), what differs between Spark versions (`compat.py`), the
cores work is sized for (`capacity.py`), a local standalone cluster (`cluster.py`), the quiet
console (`quiet.py`), progress (`progress.py`) and model files shipped to executors
(`models.py`). No curation logic lives here, and nothing here imports the stages, the run or
the outputs (tests/test_layers.py)."""
