"""Spark engine plumbing: the session (`spark.py`), warm Python workers (`warmup.py`,
`worker_daemon.py`), the driver's early imports (`driver_preload.py`), the driver JVM's
class archive (`jvm_archive.py`), a local standalone cluster (`cluster.py`), the quiet
console (`quiet.py`) and model files shipped to executors (`models.py`). No curation logic
lives here."""
