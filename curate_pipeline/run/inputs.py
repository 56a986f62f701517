"""Turn the user's input arguments into an ordered list of input file paths.

An argument may be a WARC or ARC file, a text dataset file (JSONL, plain or gzipped, or
Parquet, with `id` and `text`), a directory (its `*.warc(.gz)`, `*.arc(.gz)`, WET/WAT,
`*.jsonl(.gz)` and `*.parquet` files), a glob, a Common Crawl listing (`*.paths` or
`*.paths.gz`, one path a line, relative lines resolved against a prefix), or a URL. The
order of the result is the crawl order: file index i in it is the high part of every
record's `crawl_pos`.
"""

from __future__ import annotations

import glob
import gzip
import io
import logging
import os
from pathlib import Path

from curate_pipeline.document.text_inputs import TEXT_SUFFIXES
from curate_pipeline.document.warc.streams import is_url, open_stream
from curate_pipeline.location import Location

# every input a folder is searched for: archives and text datasets (JSONL, Parquet)
INPUT_SUFFIXES = (".warc", ".warc.gz", ".wet", ".wet.gz", ".wat", ".wat.gz", ".arc", ".arc.gz",
                  *TEXT_SUFFIXES)  # fmt: skip
LISTING_SUFFIXES = (".paths", ".paths.gz")

log = logging.getLogger(__name__)


class InputError(ValueError):
    """An input argument that names nothing readable; the message names it."""


def _is_listing(path: str) -> bool:
    return path.endswith(LISTING_SUFFIXES)


def _store_root(path: str) -> str | None:
    """`s3://bucket/` of a listing in an object store (any scheme but http(s) and file)."""
    if not is_url(path) or path.startswith(("http://", "https://")):
        return None
    scheme, rest = path.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}/"


COMMON_CRAWL_HTTP = "https://data.commoncrawl.org/"  # what `auto` joins a local listing to


def read_listing(path: str, prefix: str) -> list[str]:
    """Paths named by a listing file, relative ones joined to `prefix` (`input.
    listing_prefix`), wherever the listing lies (a listing copied into gs://my-bucket/ can
    name Common Crawl's HTTPS endpoint or s3://commoncrawl/); `auto`: for a listing in an
    object store its own bucket (Common Crawl's `s3://commoncrawl/.../warc.paths.gz` names
    `crawl-data/...` keys of that bucket), else Common Crawl's HTTPS endpoint; empty: the
    listing's own folder."""
    try:
        with open_stream(path) as fh:
            raw = fh.read()
    except OSError as e:
        raise InputError(f"listing {path}: cannot be read: {e}") from e
    if path.endswith(".gz") or raw[:2] == b"\x1f\x8b":
        raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read()
    out = []
    root = _store_root(path)
    for line in raw.decode("utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if is_url(line) or line.startswith("/"):
            out.append(line)
        elif prefix == "auto":
            out.append((root or COMMON_CRAWL_HTTP) + line)
        elif prefix:
            out.append(prefix.rstrip("/") + "/" + line)
        else:
            # No prefix: relative to the listing's own folder.
            out.append(str(Path(path).parent / line))
    return out


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):  # a broken link, or a link loop
        return None


def archives_under(root: Path) -> list[str]:
    """Archive files under a directory, sorted; links to directories are followed once each.
    A broken link or a link loop with an archive name is kept: the run then names it in the
    ledger (read:unreadable_file) instead of skipping it without a word."""
    found: list[str] = []
    seen = {root.resolve()}
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as e:
            log.warning("input folder %s cannot be listed (%s): skipped", folder, e)
            continue
        for entry in entries:
            p = Path(entry.path)
            target = _resolved(p)
            if target is None:
                if p.name.endswith(INPUT_SUFFIXES):
                    found.append(str(p))  # unreadable: the ledger says why
                else:
                    log.warning("input %s is a broken link or a link loop: skipped", p)
            elif target.is_dir():
                if target in seen:
                    log.warning("input %s links to a folder already read (%s): skipped", p, target)
                else:
                    seen.add(target)
                    stack.append(p)
            elif p.name.endswith(INPUT_SUFFIXES):
                found.append(str(p))
    return sorted(found)


def archives_in_store(prefix: str) -> list[str]:
    """The archive files under an object-store or HDFS folder (`s3://bucket/crawl/`), sorted."""
    try:
        found = [f.uri for f in Location.of(prefix).files() if f.name.endswith(INPUT_SUFFIXES)]
    except OSError as e:
        raise InputError(f"input {prefix}: cannot be listed: {e}") from e
    if not found:
        raise InputError(f"input {prefix}: holds no .warc(.gz), .arc(.gz), .jsonl(.gz) or "
                         ".parquet file")  # fmt: skip
    return found


def _absolute(path: str) -> str:
    if is_url(path):
        return path
    p = Path(path)
    return str(_resolved(p) or Path(os.path.abspath(p)))


def expand_inputs(args: list[str], listing_prefix: str) -> list[str]:
    """Expand input arguments into WARC paths, in argument order, sorted within a directory."""
    files: list[str] = []
    for arg in args:
        if arg.startswith("file:"):
            arg = Location.of(arg).uri  # file:///abs/x is /abs/x
        if _is_listing(arg):
            files.extend(read_listing(arg, listing_prefix))
        elif (
            is_url(arg)
            and not arg.startswith(("http://", "https://"))
            and not arg.endswith(INPUT_SUFFIXES)
        ):
            files.extend(archives_in_store(arg))
        elif is_url(arg):
            files.append(arg)
        elif any(ch in arg for ch in "*?["):
            matched = sorted(glob.glob(arg, recursive=True))
            if not matched:
                raise InputError(f"input {arg}: the pattern matches no file")
            files.extend(m for m in matched if Path(m).is_file())
        elif Path(arg).is_dir():
            found = archives_under(Path(arg))
            if not found:
                raise InputError(
                    f"input {arg}: the directory holds no .warc(.gz), .arc(.gz), .jsonl(.gz) "
                    "or .parquet file"
                )
            files.extend(found)
        elif Path(arg).is_file():
            files.append(arg)
        else:
            raise InputError(f"input {arg}: no such file, directory, listing or URL")
    if not files:
        raise InputError("no input files: pass --input PATH (file, directory, glob or listing)")
    return [_absolute(f) for f in files]


def input_stamps(files: list[str], threads: int = 16) -> dict[str, list]:
    """Each input's [bytes, mtime ns]: what says a file is the one a chunk read (its
    fingerprint) and that it is whole (`curate serve` takes a file once its stamp held for a
    cycle). A local file's from stat; a store's (s3, gs, hdfs, abfs) from one listing of its
    folder, folders listed side by side (a snapshot's 90,000 files lie in ~100 folders);
    http(s) URLs: [] (Common Crawl's files never change; a HEAD each would cost more than the
    check is worth). A file not found: []; the reader puts it in the ledger."""
    from concurrent.futures import ThreadPoolExecutor

    out: dict[str, list] = {}
    folders: dict[str, list[str]] = {}
    for f in files:
        if not is_url(f):
            try:
                st = os.stat(f.removeprefix("file://"))
            except OSError:
                out[f] = []
                continue
            out[f] = [st.st_size, st.st_mtime_ns]
        elif f.startswith(("http://", "https://")):
            out[f] = []
        else:
            folders.setdefault(f.rsplit("/", 1)[0], []).append(f)

    def listed(folder: str) -> dict[str, tuple[int, int | None]]:
        return Location.of(folder).stamps()

    with ThreadPoolExecutor(max(1, min(threads, len(folders)))) as pool:
        for names, found in zip(folders.values(), pool.map(listed, folders), strict=True):
            for f in names:
                stamp = found.get(f.rsplit("/", 1)[1])
                out[f] = list(stamp) if stamp else []
    return out
