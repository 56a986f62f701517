"""Locations: every place the pipeline reads or writes, as a URI resolved once to a filesystem.

A `Location` is a local absolute path or a URI (`s3://`, `gs://`, `hdfs://`, `abfs://`, ...;
`s3a://` is taken as `s3://`, `file:///abs` as `/abs`). Its filesystem is a `pyarrow.fs` one
(fsspec behind `pyarrow.fs.PyFileSystem` for a scheme pyarrow lacks), made once per process
and store, so the driver and every executor open the same place the same way, with the
store's standard credentials (`AWS_*`, `AWS_ENDPOINT_URL`, instance profiles, ...).

Object stores have no rename, append or lock, so nothing here needs one: a piece of work is
committed by writing its marker last (run/stage_store.py); `move` is a rename on a local disk
and a server-side copy then delete on a store; `create_exclusive` is the one atomic primitive
a lock needs (`O_EXCL` locally, `If-None-Match: *` on S3) and says when a store has none.
Locations are plain strings inside, so they pickle into Spark tasks as they are.
"""

from __future__ import annotations

import io
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs"}  # abfss: abfs over TLS
_fs_cache: dict[tuple[str, str], Any] = {}
_fs_lock = threading.Lock()


class NoExclusiveCreate(RuntimeError):
    """The store offers no atomic create-if-absent (needed for the run lock)."""


def conf_location(path: str, what: str, fix: str, folder: bool = False) -> Location:
    """A file (or folder) a config names: a URI as it is, else a local path from the working
    directory, then from the project root, then from the package (where conf/ is). Missing:
    FileNotFoundError naming the setting (`what`) and the fix."""
    if is_uri(path):
        loc = Location.of(path)
        if loc.is_dir() if folder else loc.is_file():
            return loc
    else:
        for cand in local_candidates(path):
            if cand.is_dir() if folder else cand.is_file():
                return Location.of(cand)
    raise FileNotFoundError(f"{what} {path} not found: {fix}")


def local_candidates(path: str) -> list[Path]:
    """Where a relative path a config names may be: the working directory, the project root
    of a checkout, the installed package (its presets' files: `conf/fineweb2/configs`)."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return [p]
    package = Path(__file__).resolve().parent
    return [p, package.parent / p, package / p]


def is_uri(text: str) -> bool:
    """A URI with a scheme other than file:// (a Windows drive letter is no scheme)."""
    head = text.split("://", 1)[0] if "://" in text else ""
    return bool(head) and head != "file" and len(head) > 1 and "/" not in head


@dataclass(frozen=True)
class Location:
    uri: str  # "/abs/path" for a local place, else "scheme://authority/path"

    @classmethod
    def of(cls, text: str | os.PathLike | Location) -> Location:
        """A location from a path or URI. A scheme-less relative path is taken from the
        current directory (on a cluster, engine/storage.py qualifies it by Spark's default
        filesystem first)."""
        if isinstance(text, Location):
            return text
        text = os.fspath(text)
        if text.startswith("file:"):
            path = urlsplit(text).path or "/"
            return cls(str(Path(path).resolve()))
        if not is_uri(text):
            return cls(str(Path(text).expanduser().resolve()))
        scheme, rest = text.split("://", 1)
        scheme = _ALIASES.get(scheme.lower(), scheme.lower())
        return cls(f"{scheme}://{rest.rstrip('/')}" if rest.strip("/") else f"{scheme}://{rest}")

    # ---- names
    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0] if "://" in self.uri else "file"

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        return Location(self.uri.rstrip("/").rsplit("/", 1)[0] or "/")

    def __truediv__(self, name: str) -> Location:
        return Location(f"{self.uri.rstrip('/')}/{name.strip('/')}")

    def __str__(self) -> str:
        return self.uri

    def relative_to(self, base: Location) -> str:
        prefix = base.uri.rstrip("/") + "/"
        if not self.uri.startswith(prefix):
            raise ValueError(f"{self.uri} is not under {base.uri}")
        return self.uri[len(prefix) :]

    # ---- the filesystem
    def fs(self) -> tuple[Any, str]:
        """(pyarrow filesystem, path inside it); the filesystem is made once per process."""
        from pyarrow import fs as pafs

        if self.is_local:
            return _cached(("file", ""), pafs.LocalFileSystem), self.uri
        parts = urlsplit(self.uri)
        key = (self.scheme, parts.netloc)

        def make():
            import pyarrow as pa

            if self.scheme == "hdfs":
                _check_libhdfs_environment(self.uri)
            try:
                found = pafs.FileSystem.from_uri(self.uri)[0]
                return _patient(found) if self.scheme in ("s3", "gs") else found
            except pa.ArrowInvalid as e:
                if "nrecognized filesystem" not in str(e):
                    raise OSError(f"{self.uri}: {e}") from e
            except OSError as e:  # e.g. hdfs:// without libhdfs (HADOOP_HOME, CLASSPATH)
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise OSError(f"{self.uri}: cannot open its filesystem: {first}") from e
            import fsspec  # a scheme pyarrow does not know: fsspec's, if it has one

            try:
                handler = pafs.FSSpecHandler(fsspec.filesystem(self.scheme))
            except (ValueError, ImportError) as e:
                raise OSError(
                    f"{self.uri}: no filesystem for {self.scheme}:// in pyarrow or fsspec ({e})"
                ) from e
            return pafs.PyFileSystem(handler)

        filesystem = _cached(key, make)
        if self.scheme in ("s3", "gs"):
            inner = f"{parts.netloc}{parts.path}"
        elif self.scheme == "abfs":  # Azure's filesystem takes container/path
            inner = f"{parts.netloc.split('@', 1)[0]}{parts.path}"
        elif isinstance(filesystem, pafs.PyFileSystem):
            inner = self.uri
        else:
            inner = parts.path or "/"
        return filesystem, inner.rstrip("/") or "/"

    def _info(self):
        filesystem, path = self.fs()
        return filesystem.get_file_info(path)

    def exists(self) -> bool:
        from pyarrow import fs as pafs

        return self._info().type != pafs.FileType.NotFound

    def is_file(self) -> bool:
        from pyarrow import fs as pafs

        return self._info().type == pafs.FileType.File

    def is_dir(self) -> bool:
        from pyarrow import fs as pafs

        return self._info().type == pafs.FileType.Directory

    def size(self) -> int:
        return int(self._info().size)

    def mtime(self) -> float:
        """When this file was last written (seconds since the epoch); FileNotFoundError if
        it is not there."""
        mtime_ns = self._info().mtime_ns
        if mtime_ns is None:
            raise FileNotFoundError(self.uri)
        return mtime_ns / 1e9

    def mkdir(self) -> None:
        """A folder (object stores have none: a no-op there)."""
        filesystem, path = self.fs()
        filesystem.create_dir(path, recursive=True)

    def read_bytes(self) -> bytes:
        filesystem, path = self.fs()

        def whole() -> bytes:
            with filesystem.open_input_stream(path) as fh:
                return fh.read()

        return whole() if self.is_local else patiently(whole, store_key(self.uri))

    def read_text(self) -> str:
        return self.read_bytes().decode("utf-8")

    def write_bytes(self, data: bytes) -> None:
        """One whole write: readers see all of it or the file as it was (one PUT on an object
        store; on a local disk a temporary file beside it, then a rename over it)."""
        filesystem, path = self.fs()
        if self.is_local:
            self.parent.mkdir()
            tmp = f"{self.uri}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
            try:
                with open(tmp, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, self.uri)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            return
        with filesystem.open_output_stream(path) as fh:
            fh.write(data)

    def write_text(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8"))

    def open_input(self):
        """A random-access file; on a store one whose reads resume where a body was cut or a
        request refused, within the store's patience (_PatientInput)."""
        filesystem, path = self.fs()
        if self.is_local:
            return filesystem.open_input_file(path)
        return _PatientInput(lambda: filesystem.open_input_file(path), store_key(self.uri))

    def open_output(self):
        """A new file, streamed (a multipart upload on S3: visible only once closed)."""
        filesystem, path = self.fs()
        if self.is_local:
            self.parent.mkdir()
        return filesystem.open_output_stream(path)

    def files(self) -> Iterator[Location]:
        """Every file under this folder, at any depth, in name order (none if it is absent)."""
        return iter([f for f, _ in self.sized_files()])

    def sized_files(self) -> list[tuple[Location, int]]:
        """(file, bytes) of every file under this folder, in name order: one listing."""
        from pyarrow import fs as pafs

        filesystem, path = self.fs()
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
        except FileNotFoundError:
            return []
        base = self.uri.rstrip("/")
        out = []
        for info in infos:
            if info.type == pafs.FileType.File:
                rel = info.path[len(path.rstrip("/")) + 1 :] if path != "/" else info.path[1:]
                out.append((Location(f"{base}/{rel}"), int(info.size or 0)))
        return sorted(out, key=lambda f: f[0].uri)

    def stamps(self) -> dict[str, tuple[int, int | None]]:
        """(bytes, mtime in ns) of each file directly under this folder, by name: one listing
        (an S3 LIST returns both for 1,000 keys a request); none if the folder is absent."""
        from pyarrow import fs as pafs

        filesystem, path = self.fs()
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(path, recursive=False))
        except FileNotFoundError:
            return {}
        return {i.base_name: (int(i.size or 0), i.mtime_ns) for i in infos
                if i.type == pafs.FileType.File}  # fmt: skip

    def names(self) -> list[str]:
        """The names directly under this folder (files and folders; none if it is absent):
        one listing request on a store, whatever lies deeper."""
        from pyarrow import fs as pafs

        filesystem, path = self.fs()
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(path, recursive=False))
        except FileNotFoundError:
            return []
        return sorted(info.base_name for info in infos)

    def delete(self) -> None:
        """This file, or this folder and everything under it; nothing if absent."""
        from pyarrow import fs as pafs

        filesystem, path = self.fs()
        kind = filesystem.get_file_info(path).type
        if kind == pafs.FileType.Directory:
            filesystem.delete_dir(path)
        elif kind == pafs.FileType.File:
            filesystem.delete_file(path)
        elif not self.is_local:
            # an object store may hold keys under a prefix with no directory marker
            try:
                filesystem.delete_dir_contents(path, missing_dir_ok=True)
            except (FileNotFoundError, OSError):
                pass

    def move(self, dst: Location) -> None:
        """A rename on a local disk; a server-side copy then a delete on a store."""
        if self.is_local and dst.is_local:
            dst.parent.mkdir()
            os.replace(self.uri, dst.uri)
            return
        self.copy(dst)
        filesystem, path = self.fs()
        filesystem.delete_file(path)

    def copy(self, dst: Location) -> None:
        """A server-side copy within one store (on S3 a managed copy: parts of up to 5 GiB,
        so objects of any size), else streamed through this process."""
        filesystem, path = self.fs()
        dst_fs, dst_path = dst.fs()
        if dst.is_local:
            dst.parent.mkdir()
        if self.scheme == "s3" and dst.scheme == "s3":
            _s3_copy(self.uri, dst.uri)
            return
        if dst_fs is filesystem:
            filesystem.copy_file(path, dst_path)
            return
        with self.open_input() as src, dst.open_output() as out:
            while chunk := src.read(8 << 20):
                out.write(chunk)

    @property
    def can_lock(self) -> bool:
        """Whether `create_exclusive` is atomic here (a local disk, S3)."""
        return self.is_local or self.scheme == "s3"

    def create_exclusive(self, data: bytes) -> bool:
        """Write `data` only if nothing is there yet, atomically: True if this call created
        the file, False if it existed. NoExclusiveCreate where the store cannot promise it."""
        if self.is_local:
            # whole or not at all: the bytes go to a temporary file, flushed to the disk, then
            # a hard link makes them the target, which fails if it exists (O_EXCL then a write
            # would show an empty file to a reader, and to every reader after a crash)
            self.parent.mkdir()
            tmp = f"{self.uri}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
            try:
                with open(tmp, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                try:
                    os.link(tmp, self.uri)
                except FileExistsError:
                    return False
                except OSError:  # a filesystem without hard links: O_EXCL, then a rename
                    return _exclusive_without_links(self.uri, tmp)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            _fsync_dir(self.parent.uri)
            return True
        if self.scheme == "s3":
            return _s3_create_exclusive(self.uri, data)
        raise NoExclusiveCreate(
            f"{self.uri}: {self.scheme}:// offers no atomic create-if-absent through "
            "pyarrow.fs, so the output cannot be locked"
        )


def _fsync_dir(path: str) -> None:
    """The folder's entry for a new file, on the disk (a crash then cannot lose a commit)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _exclusive_without_links(target: str, tmp: str) -> bool:
    """Where hard links are refused (some network and FUSE filesystems): claim the name with
    O_EXCL, then rename the whole file over the claim, so a reader sees the empty claim at
    worst, never a part of the bytes (readers skip an undecodable record)."""
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    os.replace(tmp, target)
    return True


# How long a request to a store may keep failing (503 SlowDown, a reset, a timeout) before
# the task gives up and Spark retries it: Common Crawl reports SlowDown storms of minutes.
# input.store_patience_s sets it for the driver and the executors (engine/spark.py).
PATIENCE_ENV = "CURATE_STORE_PATIENCE_S"
DEFAULT_PATIENCE_S = 600.0
BACKOFF_CAP_S = 20.0  # the AWS SDKs' cap on one back-off (their standard retry mode)


def patience_s() -> float:
    try:
        return max(0.0, float(os.environ.get(PATIENCE_ENV, DEFAULT_PATIENCE_S)))
    except ValueError:
        return DEFAULT_PATIENCE_S


def retry_attempts() -> int:
    """Attempts that spread a request over the patience: the SDKs' back-off doubles from
    tens of milliseconds to BACKOFF_CAP_S, then stays there (~10 attempts to reach it)."""
    return 10 + int(patience_s() // BACKOFF_CAP_S)


def _patient(filesystem):
    """pyarrow's S3 or GCS filesystem as resolved from the URI (region, endpoint,
    credentials), retrying over the patience: on S3 the AWS SDK's standard strategy instead of
    its 3 attempts (a SlowDown storm failed listings after 12.5 s), on GCS its time limit."""
    from pyarrow import fs as pafs

    reconstruct, (kwargs,) = filesystem.__reduce__()
    if isinstance(filesystem, pafs.S3FileSystem):
        retry = pafs.AwsStandardS3RetryStrategy(max_attempts=retry_attempts())
        return reconstruct({**kwargs, "retry_strategy": retry})
    if "retry_time_limit" in kwargs:
        from datetime import timedelta

        return reconstruct({**kwargs, "retry_time_limit": timedelta(seconds=patience_s())})
    return filesystem


_GONE = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


def store_key(uri: str) -> str:
    """The store a location is on (scheme and bucket or host): what a shared back-off keys."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme else "file"


def patiently(call, store: str = ""):
    """`call()`, again with jittered back-off while it fails with a transient OSError (a
    body cut short, a refused request past the SDK's retries), for up to the patience. A
    throttled failure (SlowDown, 503, 429) pauses every worker of this executor that asks
    `store` for as long (curate_pipeline/backoff.py); each attempt first waits out such a pause."""
    import random
    import time

    from curate_pipeline import backoff

    deadline, attempt = time.monotonic() + patience_s(), 0
    while True:
        backoff.wait_turn(store, deadline)
        try:
            return call()
        except _GONE:
            raise
        except OSError as e:
            if time.monotonic() >= deadline:
                raise
            delay = min(0.5 * 2**attempt * (0.5 + random.random()), BACKOFF_CAP_S)  # noqa: S311
            if backoff.is_throttle(e):
                backoff.note_throttle(store, delay)  # the executor's other workers wait too
            time.sleep(delay)
            attempt += 1


class _PatientInput(io.RawIOBase):
    """A store's file for random access (pyarrow takes it as a Python file: Parquet readers,
    token shards): a read that fails is retried at the same offset on a reopened file, within
    the patience (the AWS SDK does not retry a GetObject whose body was cut)."""

    def __init__(self, opener, store: str = ""):
        super().__init__()
        self._opener, self._store = opener, store
        self._f = patiently(opener, store)
        self._size = self._f.size()
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        return self._size

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read_at(self, n: int, offset: int) -> bytes:
        def once() -> bytes:
            try:
                return self._f.read_at(n, offset)
            except _GONE:
                raise
            except OSError:
                self._f = self._opener()  # a fresh connection for the next attempt
                raise

        return patiently(once, self._store)

    def read(self, n: int = -1) -> bytes:
        n = self._size - self._pos if n is None or n < 0 else min(n, self._size - self._pos)
        data = self.read_at(n, self._pos) if n > 0 else b""
        self._pos += len(data)
        return data

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


def boto3_config():
    """botocore's client settings: adaptive retries (back-off plus a client-side rate that
    slows when the store throttles) over the patience."""
    from botocore.config import Config

    return Config(retries={"mode": "adaptive", "max_attempts": retry_attempts()},
                  connect_timeout=30, read_timeout=120)  # fmt: skip


# Hadoop's S3A settings and the AWS variables pyarrow.fs and boto3 read for the same thing.
_S3A_ENV = {"fs.s3a.access.key": "AWS_ACCESS_KEY_ID", "fs.s3a.secret.key": "AWS_SECRET_ACCESS_KEY",
            "fs.s3a.session.token": "AWS_SESSION_TOKEN",
            "fs.s3a.endpoint.region": "AWS_REGION"}  # fmt: skip


def s3a_environment(s3a: dict[str, str]) -> dict[str, str]:
    """The AWS_* variables equivalent to Hadoop `fs.s3a.*` settings (keys without the
    `spark.hadoop.` prefix): a cluster configured for S3A reaches the same store from Python."""
    env = {var: s3a[key] for key, var in _S3A_ENV.items() if s3a.get(key)}
    endpoint = s3a.get("fs.s3a.endpoint")
    if endpoint:
        if "://" not in endpoint:
            ssl = s3a.get("fs.s3a.connection.ssl.enabled", "true").strip().lower() != "false"
            endpoint = ("https://" if ssl else "http://") + endpoint
        env["AWS_ENDPOINT_URL"] = endpoint
    if "AWS_REGION" in env:
        env["AWS_DEFAULT_REGION"] = env["AWS_REGION"]
    return env


LIBHDFS_FIX = (
    "pyarrow opens hdfs:// through libhdfs, which needs HADOOP_HOME and the Hadoop jars on "
    "CLASSPATH (CLASSPATH=$(hadoop classpath --glob)) in every process that reads or writes "
    "it: set both on the driver; curate passes them to executors as spark.executorEnv.HADOOP_HOME"
    " and spark.executorEnv.CLASSPATH (or set those yourself where nodes differ)"
)


def _check_libhdfs_environment(uri: str) -> None:
    """hdfs:// needs HADOOP_HOME and Hadoop's jars on CLASSPATH in this process: a message
    naming them, instead of libhdfs's JVM errors."""
    missing = [v for v in ("HADOOP_HOME", "CLASSPATH") if not os.environ.get(v)]
    if not missing and "hadoop" not in os.environ["CLASSPATH"].lower():
        missing = ["CLASSPATH (holds no Hadoop jar)"]
    if missing:
        raise OSError(f"{uri}: {' and '.join(missing)} not set in this process (pid "
                      f"{os.getpid()}): {LIBHDFS_FIX}")  # fmt: skip


def hdfs_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """HADOOP_HOME, CLASSPATH (Hadoop's jars, from `hadoop classpath --glob` when this
    process has HADOOP_HOME but no such CLASSPATH) and ARROW_LIBHDFS_DIR, as this process has
    them: what executors need to open hdfs:// with libhdfs (engine/spark.py passes them on)."""
    import subprocess

    env = dict(os.environ if env is None else env)
    home = env.get("HADOOP_HOME")
    if not home:
        return {}
    out = {"HADOOP_HOME": home}
    classpath = env.get("CLASSPATH", "")
    if "hadoop" not in classpath.lower():
        hadoop = Path(home) / "bin" / "hadoop"
        if hadoop.is_file():
            r = subprocess.run([str(hadoop), "classpath", "--glob"], capture_output=True,
                               text=True, timeout=60, env=env)  # fmt: skip
            if r.returncode == 0 and r.stdout.strip():
                classpath = r.stdout.strip().splitlines()[-1]
    if classpath:
        out["CLASSPATH"] = classpath
    if env.get("ARROW_LIBHDFS_DIR"):
        out["ARROW_LIBHDFS_DIR"] = env["ARROW_LIBHDFS_DIR"]
    return out


def _cached(key: tuple[str, str], make):
    with _fs_lock:
        filesystem = _fs_cache.get(key)
        if filesystem is None:
            filesystem = _fs_cache[key] = make()
        return filesystem


def _s3_copy(src: str, dst: str) -> None:
    """A server-side S3 copy through boto3's managed transfer: one CopyObject up to its
    threshold, UploadPartCopy parts beyond (a single CopyObject stops at 5 GiB)."""
    import boto3

    a, b = urlsplit(src), urlsplit(dst)
    client = _cached(("boto3-s3", ""), lambda: boto3.client("s3", config=boto3_config()))
    client.copy({"Bucket": a.netloc, "Key": a.path.lstrip("/")}, b.netloc, b.path.lstrip("/"))


_conditional: dict[tuple[str, str], bool] = {}


def check_conditional_create(folder: Location) -> None:
    """Whether the store really refuses a second create of one key (S3's `If-None-Match: *`),
    asked once per endpoint and bucket: a probe key under `folder` created twice, the second
    time refused, then deleted. MinIO before 2024, several S3 gateways and Ceph RGW (which
    added conditional PUT in 2025) accept the header and overwrite: there no lock and no
    version number is safe. NoExclusiveCreate naming the store when it does not refuse."""
    if folder.scheme != "s3":
        return
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
    key = (endpoint, urlsplit(folder.uri).netloc)
    if key not in _conditional:
        probe = folder / f"_probe-{uuid.uuid4().hex[:12]}"
        try:
            first = probe.create_exclusive(b"first")
            second = probe.create_exclusive(b"second")
        finally:
            probe.delete()
        _conditional[key] = first and not second
    if not _conditional[key]:
        raise NoExclusiveCreate(
            f"{folder.uri}: the store ({endpoint or 'AWS S3'}, bucket {key[1]}) accepted a "
            "second create of one key with If-None-Match: * (it ignores conditional writes), "
            "so it can neither lock the output nor refuse a stale writer's commit"
        )


def _s3_create_exclusive(uri: str, data: bytes) -> bool:
    """S3's conditional write (`If-None-Match: *`, 412 when the key exists), through boto3,
    which reads the same credentials and AWS_ENDPOINT_URL as pyarrow."""
    import boto3
    from botocore.exceptions import ClientError

    parts = urlsplit(uri)
    client = _cached(("boto3-s3", ""), lambda: boto3.client("s3", config=boto3_config()))
    try:
        client.put_object(Bucket=parts.netloc, Key=parts.path.lstrip("/"), Body=data,
                          IfNoneMatch="*")  # fmt: skip
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code in ("PreconditionFailed", "ConditionalRequestConflict") or e.response.get(
            "ResponseMetadata", {}
        ).get("HTTPStatusCode") in (409, 412):
            return False
        raise
    return True
