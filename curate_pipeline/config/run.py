"""How a run executes: Spark, the inputs, chunks of the documents pass, the output location."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from curate_pipeline.config.base import _Section


class SparkConf(_Section):
    master: str = "local[2]"
    app_name: str = "curate"
    # Rows per Arrow batch handed to Python workers: HTML rows are ~100 KB, so keep it small.
    arrow_batch_rows: int = Field(64, ge=1)
    # Extra `spark.*` settings passed to the session builder as they are.
    conf: dict[str, str] = Field(default_factory=dict)
    # `spark.*` settings for local mode only, where this machine's driver JVM runs the tasks
    # (the UI off, the JVM tuned for a small machine); `conf` wins over them. A cluster gets
    # Spark's and its platform's own (the UI, the event log, the JIT and GC of a server).
    local_conf: dict[str, str] = Field(default_factory=dict)
    # Shuffle partitions of the corpus stages per core, unless spark.sql.shuffle.partitions
    # is set (in `conf` or by spark-submit): every core busy, each partition's narrow rows
    # small; adaptive execution merges partitions left small.
    shuffle_partitions_per_core: int = Field(2, ge=1)
    # Local mode: a class-data-sharing archive of the driver JVM (`make setup` writes it with
    # `curate jvm-archive`); it maps Spark's classes instead of loading them one by one.
    # Relative to the working directory, then the project root; missing = not used.
    class_archive: str | None = "build/spark-cds.jsa"
    # On a cluster, before the first chunk: one task per executor core checks its Python
    # version, the job's dependencies, the stores' credentials and the shipped models, and
    # the run stops with one line per problem (engine/executor_check.py). Local mode: skipped.
    executor_check: bool = True


class InputConf(_Section):
    # Inputs used when the command line gives no --input: files, dirs, globs, listings, URLs.
    paths: list[str] = Field(default_factory=list)
    # Relative lines of a `warc.paths(.gz)` listing are resolved against this prefix, wherever
    # the listing lies; `auto`: a listing in a bucket names keys of its own bucket, any
    # other Common Crawl's HTTPS endpoint (run/inputs.py read_listing).
    listing_prefix: str = "auto"
    # An input that cannot be opened or read: `fail` the run, or `record` it in the ledger.
    on_unreadable: Literal["fail", "record"] = "record"
    # With `record`: a run with more unreadable files than this fails at its end (ledger and
    # manifest written, exit 1). Network failures never count: they fail the task instead.
    max_unreadable_files: int = Field(10, ge=0)
    # Local inputs whose first bytes are read before Spark starts: a wrong one (a CSV, a PDF,
    # an empty file) stops the run at once where it would fail for it at its end.
    probe_files: int = Field(64, ge=0)
    # How long a request to an object store may keep failing (503 SlowDown, resets,
    # timeouts, reads cut short: retried with back-off, a read resumed at its offset) before
    # its task fails and Spark retries it: Common Crawl reports SlowDown storms of minutes.
    store_patience_s: float = Field(600.0, ge=0)
    http_retries: int = Field(5, ge=0)
    http_backoff_s: float = Field(1.0, ge=0)
    http_timeout_s: float = Field(60.0, gt=0)


class ChunksConf(_Section):
    # The inputs are cut into chunks in crawl order, each at most `files` files (0: no cap)
    # and `bytes` bytes (0: bytes_per_core x the cores; a file whose size is unknown counts
    # as file_bytes). A chunk's documents pass is one Spark job committed with its own
    # marker: a rerun redoes only the chunks without one, and inputs appended after the old
    # ones become new chunks. The first run's sizes are kept for its reruns (on any cluster).
    files: int = Field(0, ge=0)
    bytes: int = Field(0, ge=0)
    bytes_per_core: int = Field(1 << 30, ge=1)
    file_bytes: int = Field(1_200_000_000, ge=1)
    # Chunks in flight at once: the tail of one overlaps the next one's start.
    parallel: int = Field(2, ge=1)
    # The cores chunks, splits and shuffle partitions are sized for, first of all; 0: what
    # the cluster really has (its resource manager's figures, static executor instances),
    # never dynamic allocation's ceiling; refused where nothing says (engine/capacity.py).
    cores: int = Field(0, ge=0)


class OutputConf(_Section):
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"
    # Files of kept documents; 0 = as many as file_bytes makes (run/sizing.py).
    data_files: int = Field(0, ge=0)
    # Parquet bytes per file of data/ and rejected/, about: independent of cores and chunks.
    file_bytes: int = Field(512 << 20, ge=1 << 20)
    # rejected/ gets one file per core (its write reads the documents store's reject columns)
    # where files stay at least this big; else files of file_bytes.
    ledger_min_file_bytes: int = Field(32 << 20, ge=1 << 20)
    # How Spark reads and writes the output location: its own Hadoop connector where the
    # cluster has one for the scheme, else mapInArrow tasks over pyarrow.fs ("auto").
    spark_io: Literal["auto", "hadoop", "python"] = "auto"
    # The run lock's lease: a killed run's lock lapses this long after its last renewal.
    lock_lease_seconds: float = Field(300.0, ge=10)
    # gs://, hdfs://, abfs:// are locked through the cluster's Hadoop connector; where it has
    # none, a run there is refused unless this says only one run ever writes the output.
    single_writer: bool = False
    # Published versions kept (DIR/versions/; outputs/publish/versions.py): the current one and
    # the one before it at least, which a reader who opened it just before the switch still reads.
    keep_versions: int = Field(2, ge=2)
    # ... and every version younger than this (a training job or a reader may still be
    # reading it), and the one the dataset card names, whatever its age.
    keep_hours: float = Field(6.0, ge=0)
    # DIR/data/ and DIR/rejected/ as Delta Lake tables following each commit
    # (outputs/publish/delta.py): what Spark, DuckDB, Polars, Trino and pandas read
    delta: bool = True
    # the dataset card's license (a Hub license id): ODC-By, FineWeb's for Common Crawl text
    license: str = "odc-by"
    # A run whose inputs extend the current version's (same settings, code and models, the
    # earlier inputs unchanged) appends: only the new inputs' documents go through the corpus
    # stages, deduplicated against the current version's index; its files are listed, never
    # rewritten (run/increment.py; Delta Lake's append). false: every run a whole version.
    append: bool = True
    # A console line on the running pass or corpus step (done, rate, ETA) this often.
    progress_seconds: float = Field(10.0, gt=0)
