"""Open an input path as a sequential byte stream, never reading it whole.

Local paths use the OS; `http(s)://` streams with retries, exponential backoff and resume at
the byte already reached (Range requests, or skipping ahead when a server ignores Range);
every other scheme (`s3://`, `gs://`, `hdfs://`) goes through `pyarrow.fs`, which reads
credentials from the usual environment variables and config files.
"""

from __future__ import annotations

import io
import os
import time
import urllib.error
import urllib.request
from typing import BinaryIO

USER_AGENT = "curate-pipeline/0.1 (+https://github.com/; WARC reader)"


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


class HttpStream(io.RawIOBase):
    """A read-only stream over an HTTP(S) URL that survives dropped connections."""

    def __init__(
        self,
        url: str,
        retries: int = 5,
        backoff_s: float = 1.0,
        timeout_s: float = 60,
        start: int = 0,
    ):
        self.url = url
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.pos = start
        self.size: int | None = None  # total bytes, when the server says
        self._resp = None
        self._open()

    def _open(self) -> None:
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                req = urllib.request.Request(self.url, headers={"User-Agent": USER_AGENT})
                if self.pos:
                    req.add_header("Range", f"bytes={self.pos}-")
                resp = urllib.request.urlopen(req, timeout=self.timeout_s)  # noqa: S310
                if self.pos and resp.status == 200:
                    # The server ignored Range: skip to where we were.
                    _discard(resp, self.pos)
                self.size = _total_size(resp, self.size)
                self._resp = resp
                return
            except urllib.error.HTTPError as e:
                # 4xx other than throttling will not get better by retrying.
                if 400 <= e.code < 500 and e.code not in (408, 429):
                    raise OSError(f"{self.url}: HTTP {e.code} {e.reason}") from e
                last = e
            except (OSError, urllib.error.URLError) as e:
                last = e
            if attempt < self.retries:
                time.sleep(self.backoff_s * (2**attempt))
        raise OSError(f"{self.url}: unreachable after {self.retries + 1} attempts: {last}")

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        for attempt in range(self.retries + 1):
            try:
                n = self._resp.readinto(b)  # type: ignore[union-attr]
                if n == 0 and len(b) and self.size is not None and self.pos < self.size:
                    # http.client reports a dropped connection as a clean EOF.
                    raise OSError(f"connection closed at byte {self.pos} of {self.size}")
                self.pos += n
                return n
            except (OSError, urllib.error.URLError):
                if attempt >= self.retries:
                    raise
                time.sleep(self.backoff_s * (2**attempt))
                self._close_resp()
                self._open()
        return 0

    def _close_resp(self) -> None:
        if self._resp is not None:
            try:
                self._resp.close()
            except OSError:
                pass
            self._resp = None

    def close(self) -> None:
        self._close_resp()
        super().close()


def _total_size(resp, known: int | None) -> int | None:
    crange = resp.headers.get("Content-Range")  # "bytes 100-999/1000"
    if crange and "/" in crange and not crange.endswith("*"):
        return int(crange.rsplit("/", 1)[1])
    length = resp.headers.get("Content-Length")
    if resp.status == 200 and length and length.isdigit():
        return int(length)
    return known


def _discard(resp, n: int) -> None:
    while n > 0:
        chunk = resp.read(min(n, 1 << 20))
        if not chunk:
            raise OSError("stream ended while skipping to the resume offset")
        n -= len(chunk)


def open_stream(
    path: str, retries: int = 5, backoff_s: float = 1.0, timeout_s: float = 60, start: int = 0
) -> BinaryIO:
    """Open `path` for sequential reading from byte `start`, buffered."""
    if path.startswith(("http://", "https://")):
        raw = HttpStream(
            path, retries=retries, backoff_s=backoff_s, timeout_s=timeout_s, start=start
        )
        return io.BufferedReader(raw, buffer_size=1 << 20)  # type: ignore[return-value]
    if is_url(path):
        from pyarrow import fs as pafs

        filesystem, inner = pafs.FileSystem.from_uri(path)
        if start:
            f = filesystem.open_input_file(inner)
            f.seek(start)
            return f  # type: ignore[return-value]
        # compression=None: warcio reads the gzip members itself (offsets stay true).
        return filesystem.open_input_stream(inner, compression=None)  # type: ignore[return-value]
    fh = open(_local(path), "rb")  # noqa: SIM115
    if start:
        fh.seek(start)
    return fh


def file_size(path: str, timeout_s: float = 60) -> int | None:
    """Size in bytes, or None when it cannot be learnt cheaply (then the file is not split)."""
    try:
        if path.startswith(("http://", "https://")):
            req = urllib.request.Request(path, method="HEAD", headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310
                length = resp.headers.get("Content-Length")
                return int(length) if length and length.isdigit() else None
        if is_url(path):
            from pyarrow import fs as pafs

            filesystem, inner = pafs.FileSystem.from_uri(path)
            return filesystem.get_file_info(inner).size
        return os.path.getsize(_local(path))
    except (OSError, ValueError):
        return None
