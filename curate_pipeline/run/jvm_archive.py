"""`curate jvm-archive`: a class-data-sharing (CDS) archive of the driver JVM for local mode.

Spark's driver loads some 15,000 classes at start-up and on its first jobs. A dynamic CDS
archive (JDK 13+) records the classes a real run loaded and lets later JVMs map them in one
go. It is written when the JVM exits normally, so the training run is a child process: it
curates the project's sample WARC with `-XX:ArchiveClassesAtExit` and stops its session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from curate_pipeline.config import load_config


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"


def maps(archive: Path) -> bool:
    """Does a JVM start with this archive mapped? A damaged one makes it crash; the crash
    report goes to a scratch folder, not the working directory."""
    with tempfile.TemporaryDirectory() as scratch:
        cmd = [java(), f"-XX:SharedArchiveFile={archive}",
               f"-XX:ErrorFile={scratch}/hs_err_%p.log", "-version"]  # fmt: skip
        return subprocess.run(cmd, cwd=scratch, capture_output=True).returncode == 0


def build_archive(output: str | Path, config: str | Path | None = None) -> Path | None:
    """Write the archive to `output`; None (and a message) when this JVM cannot.

    The JVM writes the archive as it exits; a cut one (a killed run, a full disk) would make
    every later JVM that maps it crash. So it is written beside `output`, mapped once by a
    test JVM, and only then renamed into place.
    """
    out = Path(output).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    tmp = out.with_name(out.name + ".partial")
    tmp.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "curate_pipeline.run.jvm_archive", str(tmp), str(config or "")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    made = proc.returncode == 0 and tmp.is_file()
    if not made or not maps(tmp):
        tmp.unlink(missing_ok=True)
        why = "\n".join((proc.stderr or proc.stdout).splitlines()[-5:]) if not made else (
            "the written archive does not map (a JVM given it crashes)")  # fmt: skip
        print(f"curate: no JVM class archive written (runs work without it):\n{why}")
        return None
    tmp.rename(out)
    import pyspark

    out.with_name(out.name + ".spark").write_text(pyspark.__version__ + "\n")
    return out


def _train(output: str, config: str) -> None:
    from curate_pipeline.engine.spark import get_spark
    from curate_pipeline.examples.sample import write_sample_warc
    from curate_pipeline.run.orchestrate import run

    cfg = load_config(config or None)
    cfg.spark.master = "local[2]"
    with tempfile.TemporaryDirectory() as tmp:
        warc = Path(tmp) / "sample.warc.gz"
        write_sample_warc(warc)
        spark = get_spark(cfg, java_opts=f"-XX:ArchiveClassesAtExit={output} -Xlog:cds=off",
                          quiet=True)  # fmt: skip
        try:
            run(cfg, [str(warc)], Path(tmp) / "out", spark)
        finally:
            spark.stop()  # the JVM exits normally and writes the archive


if __name__ == "__main__":
    _train(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
