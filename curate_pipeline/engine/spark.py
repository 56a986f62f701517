"""The SparkSession: one per process, configured from the `spark` section of the config."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from curate_pipeline.config import Config
from curate_pipeline.engine import quiet as quiet_console
from curate_pipeline.location import hdfs_environment


def under_spark_submit() -> bool:
    """True when this Python process was started by spark-submit (it owns master and JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


ROOT = Path(__file__).resolve().parents[2]
DRIVER_OPTS = "spark.driver.extraJavaOptions"


def class_archive(cfg: Config) -> Path | None:
    """The JVM class-data-sharing archive to map, if configured, present and written by this
    Spark version's JVM (its `.spark` file says which: another version's classes do not map,
    and the JVM would warn at every start, as under `make test-versions`)."""
    import pyspark

    name = cfg.spark.class_archive
    if not name:
        return None
    p = Path(name).expanduser()
    for cand in (p,) if p.is_absolute() else (p, ROOT / p):
        if cand.is_file():
            made_by = archive_spark_version(cand)
            return cand.resolve() if made_by in (None, pyspark.__version__) else None
    return None


def archive_spark_version(archive: Path) -> str | None:
    """The pyspark version a class archive was written with (None: not recorded)."""
    stamp = archive.with_name(archive.name + ".spark")
    return stamp.read_text().strip() if stamp.is_file() else None


def launcher_settings() -> set[str]:
    """The keys spark-submit already set (its --conf flags, spark-defaults.conf, --executor-*
    options): the cluster's operator decides those, not our config's defaults. Empty when
    this process starts its own JVM."""
    if not under_spark_submit():
        return set()
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM (it exists already)
    return {k for k, _ in SparkConf().getAll()}


def store_environment(cfg: Config) -> dict[str, str]:
    """AWS_* variables for pyarrow.fs and boto3 from Hadoop's S3A settings
    (`spark.hadoop.fs.s3a.*`, given to spark-submit or in the config's `spark.conf`), set in
    this process where not set already, and returned so that executors get them too. A
    cluster configured the Hadoop way then needs no project-specific settings."""
    from curate_pipeline.location import s3a_environment

    settings = dict(cfg.spark.conf)
    if under_spark_submit():
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()
        settings.update(SparkConf().getAll())
    prefix = "spark.hadoop."
    env = s3a_environment({k[len(prefix) :]: v for k, v in settings.items()
                           if k.startswith(prefix + "fs.s3a.")})  # fmt: skip
    from curate_pipeline.location import PATIENCE_ENV

    env[PATIENCE_ENV] = f"{cfg.input.store_patience_s:g}"  # every request's patience
    for key, value in env.items():
        os.environ.setdefault(key, value)
    os.environ[PATIENCE_ENV] = env[PATIENCE_ENV]  # this run's, whatever an earlier one set
    return env


def config_settings(cfg: Config, local: bool) -> dict[str, str]:
    """The config's Spark settings for a session: `spark.local_conf` only in local mode (this
    machine's UI off and small-machine JVM never reach a cluster), `spark.conf` over them."""
    conf = {"spark.sql.execution.arrow.maxRecordsPerBatch": str(cfg.spark.arrow_batch_rows)}
    if local:
        conf.update(cfg.spark.local_conf)
    conf.update(cfg.spark.conf)
    return conf


def get_spark(
    cfg: Config, master: str | None = None, java_opts: str = "", quiet: bool = False
) -> SparkSession:
    """The session; `java_opts` are added to the driver JVM's options (local mode); `quiet`
    keeps Spark's notices a user cannot act on off the console (curate_pipeline/engine/quiet.py).

    The `spark.conf` settings of the config are defaults: under spark-submit, a key it set
    (--conf, spark-defaults.conf) wins, since builder settings would otherwise override it."""
    # (the run layer starts its heavy imports first: curate_pipeline/run/driver_preload.py)
    builder = SparkSession.builder.appName(cfg.spark.app_name)
    if master or not under_spark_submit():
        builder = builder.master(master or cfg.spark.master)
    local = (master or cfg.spark.master).startswith("local") and not under_spark_submit()
    if local:
        # Workers must run this interpreter (the venv's), not whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    conf = config_settings(cfg, local)
    if local:
        archive = class_archive(cfg)
        extra = f"-XX:SharedArchiveFile={archive}" if archive and not java_opts else ""
        if quiet:
            extra = f"{extra} {quiet_console.java_option()}".strip()
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # local mode binds loopback
        conf[DRIVER_OPTS] = " ".join(filter(None, [conf.get(DRIVER_OPTS), extra, java_opts]))
        conf.setdefault("spark.python.daemon.module", "curate_pipeline.run.worker_daemon")
    given = launcher_settings()
    for key, value in store_environment(cfg).items():  # executors reach the same stores
        conf.setdefault(f"spark.executorEnv.{key}", value)
    for key, value in hdfs_environment().items():  # libhdfs in executors' Python workers
        conf.setdefault(f"spark.executorEnv.{key}", value)
    for key, value in conf.items():
        if key not in given:
            builder = builder.config(key, value)
    with quiet_console.filtered_jvm_stderr(quiet and local):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def size_shuffles(spark: SparkSession, cfg: Config) -> int:
    """spark.sql.shuffle.partitions = shuffle_partitions_per_core x the cores the cluster can
    reach (engine/capacity.py), unless the config or spark-submit set it; returns the value in
    force."""
    from curate_pipeline.engine.capacity import capacity

    key = "spark.sql.shuffle.partitions"
    if key not in cfg.spark.conf and key not in launcher_settings():
        cores = capacity(spark, cfg.chunks.cores).cores
        spark.conf.set(key, str(cfg.spark.shuffle_partitions_per_core * max(1, cores)))
    return int(spark.conf.get(key))


# Loggers that print a failed task's whole Python and Java stack (several times over: the
# task, its writer, the stage, the job). The CLI reports the failure in one line instead.
TASK_FAILURE_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.util.Utils",
    "org.apache.spark.sql.execution.datasources.FileFormatWriter",
    "org.apache.spark.mapreduce.SparkHadoopMapReduceWriter",
    "org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter",
)


def quiet_task_failures(spark: SparkSession) -> None:
    """Turn off the loggers that repeat a failed task's stack traces on the console."""
    jvm = spark.sparkContext._jvm
    level = jvm.org.apache.logging.log4j.Level.OFF
    for name in TASK_FAILURE_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
