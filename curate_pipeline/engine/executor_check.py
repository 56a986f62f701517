"""Before the first chunk on a cluster, one task per executor core checks what the run needs
there, so that a node that cannot do the work says so in one line instead of failing chunk
after chunk hours later:

- its Python's minor version is the driver's (PySpark refuses a task otherwise; the refusal
  is turned into a line naming the executor),
- the package and the job's dependencies are installed (the versions the driver has; another
  version is a warning), the native ones import (a packed archive built for another CPU
  architecture or a newer glibc fails here), and an archive made by `curate pack` was made for
  this CPU and a glibc no newer than the node's,
- every input and output location answers with the executor's own credentials (one request
  each: a store's first input, the output's folder), and local paths exist there,
- the files the driver shipped (models, tokenizer) arrived.

Failures raise ExecutorCheckError: one line per problem, naming the executors and the fix.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

PACK_INFO = "curate-pack.json"  # written by `curate pack` into the environment it packs
# Native modules the documents pass imports: an archive for another CPU or glibc fails here
NATIVE = ("pyarrow", "numpy", "lxml", "fasttext", "resiliparse.parse.html", "regex")


class ExecutorCheckError(RuntimeError):
    """An executor cannot do the run's work; the message has one line per problem."""


@dataclass
class Wanted:
    """What the driver asks every executor to have."""

    python: str  # major.minor
    dists: dict[str, str] = field(default_factory=dict)  # distribution -> the driver's version
    locations: list[tuple[str, str]] = field(default_factory=list)  # (what, URI or path)
    files: list[str] = field(default_factory=list)  # SparkFiles names
    modules: list[str] = field(default_factory=list)  # the config's extra needs (config/needs.py)


def _glibc() -> tuple[int, int] | None:
    import platform

    lib, version = platform.libc_ver()
    if lib != "glibc" or not version:
        return None
    major, minor = (version.split(".") + ["0"])[:2]
    return int(major), int(minor)


def _open(uri: str):
    """pyarrow's filesystem for `uri` as resolved from it (region, endpoint, credentials)."""
    from pyarrow import fs as pafs

    return pafs.FileSystem.from_uri(uri)


def _file_info(uri: str):
    """One request for `uri`'s info with the SDK's own 3 tries (no endpoint or no credentials
    fail in seconds, not after the patience), then a store that throttles is waited out like
    every other request (curate_pipeline/backoff.py): SlowDown is no finding."""
    import time

    from curate_pipeline import backoff
    from curate_pipeline.location import patience_s

    deadline = time.monotonic() + patience_s()
    while True:
        try:
            filesystem, inner = _open(uri)
            return filesystem.get_file_info(inner)
        except OSError as e:
            if not backoff.is_throttle(e) or time.monotonic() >= deadline:
                raise
            time.sleep(5)


def _check_location(what: str, uri: str) -> str | None:
    """One request as this executor: a problem, or None."""
    import os

    from curate_pipeline.location import Location

    loc = Location.of(uri)
    if loc.is_local:
        if not os.path.exists(loc.uri):
            return (f"{what} {uri} does not exist there: executors do not see the driver's "
                    "disk; give a URI every node reaches (s3://, gs://, hdfs://) or a "
                    "folder every node mounts")  # fmt: skip
        return None
    from pyarrow import fs as pafs

    try:
        info = _file_info(loc.uri)
    except Exception as e:  # noqa: BLE001 (pyarrow: OSError, ArrowInvalid; credentials)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        return (
            f"{what} {uri} cannot be reached with this executor's credentials ({first}): give "
            "executors the store's settings (spark.hadoop.fs.s3a.* or spark.executorEnv.AWS_*, "
            "an instance profile, GOOGLE_APPLICATION_CREDENTIALS)"
        )
    if what == "input" and info.type == pafs.FileType.NotFound:
        return f"{what} {uri} is not there for this executor (its store answers: not found)"
    return None


def probe(wanted_json: str) -> dict:
    """Run in an executor's Python worker: what it has and what is wrong (never raises)."""
    import os
    import platform
    import socket
    import sys
    from importlib import import_module, metadata
    from pathlib import Path

    wanted = Wanted(**json.loads(wanted_json))
    problems: list[str] = []
    warnings: list[str] = []
    python = "{}.{}".format(*sys.version_info[:2])
    if python != wanted.python:  # (PySpark refuses this before we run: kept for Python-only use)
        problems.append(f"Python {python} where the driver runs {wanted.python}")
    machine, glibc = platform.machine(), _glibc()
    info_file = Path(sys.prefix) / PACK_INFO
    if info_file.is_file():
        packed = json.loads(info_file.read_text())
        if packed.get("machine") and packed["machine"] != machine:
            problems.append(
                f"the archive ({sys.prefix}) was packed for {packed['machine']}, this node is "
                f"{machine}: run curate pack on a {machine} machine"
            )
        need = packed.get("glibc_min")
        if need and glibc and tuple(need) > glibc:
            problems.append(
                f"the archive's wheels need glibc {need[0]}.{need[1]}, this node has "
                f"{glibc[0]}.{glibc[1]}: pack on a machine with the nodes' OS, or pin older "
                "wheels"
            )
    for dist, version in sorted(wanted.dists.items()):
        try:
            have = metadata.version(dist)
        except metadata.PackageNotFoundError:
            problems.append(f"{dist} is not installed (the driver has {version})")
            continue
        if have != version:
            warnings.append(f"{dist} {have} (the driver has {version})")
    for name in NATIVE:
        try:
            import_module(name)
        except Exception as e:  # noqa: BLE001 (ImportError, OSError from a .so: wrong arch)
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            problems.append(f"cannot import {name}: {type(e).__name__}: {first}")
    from importlib.util import find_spec

    for name in wanted.modules:
        try:
            found = find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            problems.append(f"{name} is not installed, which the config needs (the "
                            "multilingual extra: curate pack --extras multilingual)")  # fmt: skip
    for what, uri in wanted.locations:
        problem = _check_location(what, uri)
        if problem:
            problems.append(problem)
    if wanted.files:
        from pyspark import SparkFiles

        for name in wanted.files:
            path = SparkFiles.get(name)
            if not os.path.exists(path):
                problems.append(
                    f"shipped file {name} did not arrive ({path}): the driver's file server "
                    "must be reachable from executors (spark.driver.host)"
                )
    return {"host": socket.gethostname(), "worker": os.getppid(), "python": python,
            "machine": machine, "problems": problems, "warnings": warnings}  # fmt: skip


def _probe_partition(wanted_json: str):
    def run(_: Iterator[int]) -> Iterator[str]:
        yield json.dumps(probe(wanted_json))

    return run


_VERSION = re.compile(r"Python in worker has different version:? ?\(?([\d., ]+?)\)? than "
                      r"that in driver:? ?([\d.]+)")  # fmt: skip
_WHERE = re.compile(r"\(TID \d+\) \(([^ )]+) executor ([^)]+)\)")
_MISSING = re.compile(r"(ModuleNotFoundError|ImportError): ([^\n]+)")


def _executor_hosts(sc) -> list[str]:
    """The hosts of the executors registered now. The status tracker lists the driver too:
    one entry on the driver's host is left out (the host set is right either way)."""
    try:
        hosts = [str(i.host()) for i in sc._jsc.sc().statusTracker().getExecutorInfos()]
    except Exception:  # noqa: BLE001 (py4j: a JVM API this Spark lacks)
        return []
    driver = sc.getConf().get("spark.driver.host")
    if driver in hosts:
        hosts.remove(driver)
    return sorted(set(hosts))


def _from_failure(text: str, hosts: list[str] = ()) -> str | None:
    """The one line a failed check job means, from Spark's task failure text (Spark 3.5
    names the task's executor there; 4.x only the Python error: then the executors' hosts)."""
    where = _WHERE.search(text)
    if where:
        at = f"executor {where.group(2)} on {where.group(1)}"
    elif hosts:
        more = f" and {len(hosts) - 3} more" if len(hosts) > 3 else ""
        at = f"executors on {', '.join(hosts[:3])}{more}"
    else:
        at = "the executors"
    v = _VERSION.search(text)
    if v:
        worker = ".".join(p.strip() for p in v.group(1).replace(",", ".").split(".")[:2])
        return (f"{at}: Python {worker} where the driver runs {v.group(2)}: give executors a "
                f"Python {v.group(2)} (spark.pyspark.python; curate pack --python-prefix names "
                "where the nodes have it, conda-pack carries one)")  # fmt: skip
    m = _MISSING.search(text)
    if m:
        return (f"{at}: {m.group(1)}: {m.group(2).strip()}: the package and its dependencies "
                "must reach executors (curate pack's archive with --archives and "
                "spark.pyspark.python, the platform's library install, or --py-files)")  # fmt: skip
    return None


def wanted_for(inputs: list[str], output: str, files: list[str],
               modules: list[str] = ()) -> Wanted:  # fmt: skip
    """The check's request: the driver's Python and dependencies, the first input of each
    store (bucket or host) and each local folder's first input, the output, shipped files."""
    import sys
    from importlib import metadata
    from urllib.parse import urlsplit

    from packaging.requirements import Requirement

    dists: dict[str, str] = {}
    try:
        dists["curate-pipeline"] = metadata.version("curate-pipeline")
        for text in metadata.requires("curate-pipeline") or []:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue  # an extra's (pyspark is the cluster's)
            try:
                dists[req.name] = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                continue
    except metadata.PackageNotFoundError:  # run from a checkout on sys.path: nothing to compare
        pass
    seen, locations = set(), []
    for uri in inputs:
        if uri.startswith(("http://", "https://")):
            continue  # http(s): no credentials; the reader retries the network
        parts = urlsplit(uri)
        key = (parts.scheme, parts.netloc) if parts.scheme not in ("", "file") else ("file", "")
        if key not in seen:
            seen.add(key)
            locations.append(("input", uri))
    locations.append(("output", output))
    version = "{}.{}".format(*sys.version_info[:2])
    return Wanted(version, dists, locations, files, sorted(set(modules)))


def _failure_text(e: BaseException) -> str:
    """A failed job's whole text: PySpark raises the Python worker's error converted "from
    None", and the job's own message (which task, on which executor) is its __context__."""
    texts, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        texts.append(str(e))
        for attr in ("java_exception", "_origin"):
            java = getattr(e, attr, None)
            if java is not None:
                try:
                    texts.append(str(java.toString()))
                except Exception:  # noqa: BLE001 (the JVM may be gone)
                    pass
        e = e.__context__
    return "\n".join(texts)


def check_executors(spark, wanted: Wanted) -> list[dict]:
    """Run the probe in one task per core the executors have now; raise ExecutorCheckError
    naming every problem and the executors that have it; log version differences. Returns
    the probes (one per task)."""
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)
    sc.setJobDescription("executor check: Python, dependencies, stores, shipped files")
    try:
        check = _probe_partition(json.dumps(wanted.__dict__))
        rows = sc.parallelize(range(n), n).mapPartitions(check).collect()
    except Exception as e:
        line = _from_failure(_failure_text(e), _executor_hosts(sc))
        if line:
            raise ExecutorCheckError(line) from None
        raise
    finally:
        sc.setJobDescription(None)
    probes = [json.loads(r) for r in rows]
    by_problem: dict[str, set[str]] = {}
    for p in probes:
        for problem in p["problems"]:
            by_problem.setdefault(problem, set()).add(p["host"])
        for w in p["warnings"]:
            by_problem.setdefault("\0" + w, set()).add(p["host"])
    hosts = {p["host"] for p in probes}
    lines, notes = [], []
    for problem, where in sorted(by_problem.items()):
        at = f"executors on {', '.join(sorted(where)[:3])}" + (
            f" and {len(where) - 3} more" if len(where) > 3 else "")  # fmt: skip
        share = f" ({len(where)} of {len(hosts)} host(s))"
        (notes if problem.startswith("\0") else lines).append(
            f"{at}{share}: {problem.lstrip(chr(0))}"
        )
    for note in notes:
        log.warning("executor check: another version: %s", note)
    if lines:
        raise ExecutorCheckError("\n".join(lines))
    log.info("executor check: %d task(s) on %d host(s): Python %s, dependencies, %d location(s), "
             "%d shipped file(s) ok", len(probes), len(hosts), wanted.python,
             len(wanted.locations), len(wanted.files))  # fmt: skip
    return probes
