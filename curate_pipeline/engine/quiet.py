"""A quiet console: the run's own lines, and Spark's only when they mean something.

A local run otherwise prints lines a user cannot act on: the JVM's "Using incubator modules",
Spark's "Using Spark's default log4j profile", the loopback-hostname warning, Hadoop's
NativeCodeLoader, the truncated-plan notice, py4j's "Closing down clientserver connection",
matplotlib's font-cache notice. `curate --verbose` keeps all of them.

- Spark's logging (local mode): a log4j2 configuration at WARN with those loggers at ERROR,
  given to the driver JVM; and SPARK_LOCAL_IP=127.0.0.1 (local mode binds to loopback anyway).
- The JVM's own stderr lines: the driver JVM is started with its stderr on a pipe that a
  thread forwards, line by line, to the real stderr, minus the launcher's notices.
- Python loggers: py4j and matplotlib's font manager at WARNING / ERROR.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOG4J2 = """\
# curate's quiet console (curate_pipeline/engine/quiet.py); `curate --verbose` uses Spark's own
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
logger.stringutils.name = org.apache.spark.sql.catalyst.util.SparkStringUtils
logger.stringutils.level = error
logger.stringutils2.name = org.apache.spark.util.SparkStringUtils
logger.stringutils2.level = error
"""

# Lines the JVM launcher prints before any logging is set up.
JVM_NOISE = ("WARNING: Using incubator modules", "Using Spark's default log4j profile")


def log4j2_file() -> Path:
    digest = hashlib.sha256(LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"curate-log4j2-{digest}.properties"
    if not path.is_file():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J2)
        tmp.replace(path)
    return path


def java_option() -> str:
    return f"-Dlog4j2.configurationFile=file:{log4j2_file()}"


def quiet_python_loggers() -> None:
    logging.getLogger("py4j").setLevel(logging.WARNING)
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)


def _forward(read_fd: int, out_fd: int) -> None:
    with os.fdopen(read_fd, "rb", buffering=0) as src:
        pending = b""
        while chunk := src.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace")
                if not text.startswith(JVM_NOISE):
                    os.write(out_fd, line + b"\n")
        if pending:
            os.write(out_fd, pending)


@contextmanager
def filtered_jvm_stderr(enabled: bool = True) -> Iterator[None]:
    """While the block starts the JVM, its stderr (inherited fd 2) is a pipe read by a thread
    that drops the launcher's notices; this process's own fd 2 is restored afterwards."""
    if not enabled:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        read_fd, write_fd = os.pipe()
    except OSError:  # no fd 2 to filter (an embedding host): leave it
        yield
        return
    os.dup2(write_fd, 2)
    os.close(write_fd)
    threading.Thread(target=_forward, args=(read_fd, os.dup(saved)), daemon=True,
                     name="jvm-stderr").start()  # fmt: skip
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
