"""`curate pack OUT.tar.gz`: the job's Python environment as one archive that a cluster's
nodes unpack, the way Spark's "Python Package Management" docs prescribe (`--archives
OUT.tar.gz#env`, `spark.pyspark.python=./env/bin/python`).

The archive is built by a real packer, never a hand-rolled tar:

- `venv-pack` (the default): from a checkout, a fresh virtual environment with the package
  installed (not editable: venv-pack refuses those) and its run dependencies at the versions
  of requirements.lock; from an installed package (`pip install curate-pipeline` into a venv),
  that venv as it is. It does not carry the interpreter: every node needs the same Python
  minor version (the packed one's, printed) at the path the archive names (`--python-prefix`,
  e.g. `/usr` where nodes have /usr/bin/python3.11).
- `conda-pack`: packs a conda environment you made (`conda create -p ENV python=3.11`, then
  `ENV/bin/pip install -c requirements.lock .`), interpreter included, so nodes whose Python
  is another minor version (Dataproc's Spark 3.5 engine on GKE: Python 3.8) run it.

pyspark and py4j are left out by default (they are the package's `spark` extra): the cluster's
own Spark puts its pyspark first on the workers' path, and an archive copy of another version
would only be shipped and shadowed (`--with-pyspark` adds them, for nodes with a JVM but no
Spark Python). Models and the tokenizer are not packed: they travel with the job
(SparkContext.addFile). The archive's curate-pack.json records the CPU architecture and the
newest glibc its wheels need; the executor check compares them with each node's.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
INFO = "curate-pack.json"  # written into the environment: what it holds and how it was made


class PackError(RuntimeError):
    """The archive cannot be built as asked."""


@dataclass
class Packed:
    path: Path
    bytes: int
    python: str  # major.minor of the packed interpreter
    interpreter: str  # "carried" or the path nodes need
    tool: str

    def submit_lines(self, name: str = "env") -> list[str]:
        base = (f"--archives {self.path}#{name} "
                f"--conf spark.pyspark.python=./{name}/bin/python")  # fmt: skip
        return [
            "client deploy mode (the driver runs here, in this environment):",
            f"  spark-submit {base} --conf spark.pyspark.driver.python={sys.executable} "
            "jobs/curate.py --config CONF --input IN --output OUT",
            "cluster deploy mode (YARN, Kubernetes: the driver runs on a node from the archive):",
            f"  spark-submit --deploy-mode cluster {base} "
            f"--conf spark.pyspark.driver.python=./{name}/bin/python "
            "jobs/curate.py --config CONF --input IN --output OUT",
        ]


def from_checkout() -> bool:
    """Whether this package runs from a checkout of the project (else: installed)."""
    return (ROOT / "pyproject.toml").is_file() and (ROOT / "requirements.lock").is_file()


def _checkout() -> Path:
    if not from_checkout():
        raise PackError(
            f"{ROOT}: no pyproject.toml and requirements.lock here; curate pack builds the "
            "archive from a checkout of the project (git clone, then curate pack)"
        )
    return ROOT


def _missing_extras(extras: tuple[str, ...]) -> list[str]:
    """The requirements of these extras that this environment lacks."""
    from importlib import metadata

    from packaging.requirements import Requirement

    missing = []
    for text in metadata.requires("curate-pipeline") or []:
        req = Requirement(text)
        if req.marker and any(req.marker.evaluate({"extra": x}) for x in extras):
            try:
                metadata.version(req.name)
            except metadata.PackageNotFoundError:
                missing.append(req.name)
    return missing


def pack_installed(out: Path, extras: tuple[str, ...], with_pyspark: bool,
                   python_prefix: str | None) -> str:  # fmt: skip
    """The virtual environment this package is installed in, packed as it is (venv-pack's
    own use): pyspark and py4j left out unless asked for; returns its Python's version."""
    import venv_pack

    env = Path(sys.prefix)
    if not (env / "pyvenv.cfg").is_file():
        raise PackError(
            f"{env}: this Python is not a virtual environment; install the package into one "
            "(python -m venv ENV; ENV/bin/pip install curate-pipeline) and run ENV/bin/curate "
            "pack"
        )
    site = _site_packages(env)
    if _editable(site):
        raise PackError(f"{env}: editable installs {_editable(site)} cannot be packed")
    missing = _missing_extras(extras)
    if missing:
        wanted = ",".join(extras)
        raise PackError(f"{env} lacks {', '.join(missing)} for --extras {wanted}: pip install "
                        f"'curate-pipeline[{wanted}]' there first")  # fmt: skip
    rel = site.relative_to(env)
    filters = [] if with_pyspark else [
        ("exclude", f"{rel}/{name}{tail}") for name in ("pyspark", "py4j")
        for tail in ("/*", "-*.dist-info/*")
    ]  # fmt: skip
    version = _python_version(env / "bin" / "python")
    info = env / INFO
    before = info.read_bytes() if info.is_file() else None
    try:  # the record rides in the archive; the environment is left as it was
        _describe(env, "venv-pack (installed environment)", version, with_pyspark and
                  any(site.glob("pyspark-*.dist-info")))  # fmt: skip
        venv_pack.pack(prefix=str(env), output=str(out), force=True, filters=filters,
                       python_prefix=python_prefix, compress_level=4)  # fmt: skip
    finally:
        if before is None:
            info.unlink(missing_ok=True)
        else:
            info.write_bytes(before)
    return version


def _run(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise PackError(f"{what} failed ({' '.join(cmd[:4])} ...):\n{tail}")


def _editable(site: Path) -> list[str]:
    """Distributions in `site` installed in editable mode (PEP 660 or egg-link)."""
    out = []
    for direct in site.glob("*.dist-info/direct_url.json"):
        info = json.loads(direct.read_text())
        if info.get("dir_info", {}).get("editable"):
            out.append(direct.parent.name)
    out += [p.name for p in site.glob("*.egg-link")]
    return out


def _site_packages(env: Path) -> Path:
    found = sorted(env.glob("lib/python3*/site-packages"))
    if not found:
        raise PackError(f"{env}: no lib/python3.*/site-packages: not a Python environment")
    return found[0]


def _python_version(python: Path) -> str:
    r = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                       capture_output=True, text=True, check=True)  # fmt: skip
    return r.stdout.strip()


_LEGACY_GLIBC = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def glibc_needed(site: Path) -> tuple[int, int] | None:
    """The newest glibc the installed wheels need: for each wheel the oldest of its manylinux
    tags (any one of them serves), over every wheel the newest (None: no manylinux wheel)."""
    import re

    newest: tuple[int, int] | None = None
    for wheel in site.glob("*.dist-info/WHEEL"):
        needs = []
        for line in wheel.read_text(errors="replace").splitlines():
            if not line.startswith("Tag:"):
                continue
            for plat in line.split("-")[-1].strip().split("."):
                m = re.match(r"manylinux_(\d+)_(\d+)_", plat)
                if m:
                    needs.append((int(m.group(1)), int(m.group(2))))
                elif plat.split("_")[0] in _LEGACY_GLIBC:
                    needs.append(_LEGACY_GLIBC[plat.split("_")[0]])
        if needs and (newest is None or min(needs) > newest):
            newest = min(needs)
    return newest


def _describe(env: Path, tool: str, python: str, with_pyspark: bool) -> None:
    """curate-pack.json in the environment: what it holds, and the CPU architecture and glibc
    its wheels were built for, which the executor check compares with each node's."""
    import platform
    from importlib import metadata

    (env / INFO).write_text(json.dumps({
        "package": "curate-pipeline", "version": metadata.version("curate-pipeline"),
        "tool": tool, "python": python, "pyspark_included": with_pyspark,
        "lock": "requirements.lock" if from_checkout() else "the installed environment",
        "machine": platform.machine(),
        "glibc_min": glibc_needed(_site_packages(env)),
    }, indent=2))  # fmt: skip


def build_venv(
    env: Path, python: str, extras: tuple[str, ...] = (), with_pyspark: bool = False
) -> None:
    """A fresh venv at `env` with the package installed (not editable) from the checkout."""
    root = _checkout()
    _run([python, "-m", "venv", str(env)], "creating the virtual environment")
    pip = [str(env / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    extras = (*extras, "spark") if with_pyspark else extras  # pyspark: the `spark` extra
    spec = f"{root}[{','.join(extras)}]" if extras else str(root)
    _run([*pip, "install", "--upgrade", "pip"], "upgrading pip (an old one fails on extras)")
    _run([*pip, "install", "--no-input", "-c", str(root / "requirements.lock"), spec],
         "installing the package and its run dependencies")  # fmt: skip
    site = _site_packages(env)
    if _editable(site):
        raise PackError(f"{env}: editable installs {_editable(site)} cannot be packed")


def pack(
    output: str | Path,
    tool: str = "venv-pack",
    python: str | None = None,
    python_prefix: str | None = None,
    conda_prefix: str | None = None,
    extras: tuple[str, ...] = (),
    with_pyspark: bool = False,
) -> Packed:
    out = Path(output).resolve()
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise PackError(f"{output}: name the archive *.tar.gz (spark-submit --archives "
                        "unpacks .tar.gz, .tgz, .zip)")  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    if tool == "venv-pack" and not from_checkout() and python is None:
        log.info("pack: packing the environment the package is installed in (%s)", sys.prefix)
        version = pack_installed(out, extras, with_pyspark, python_prefix)
        base = getattr(sys, "_base_executable", sys.executable)
        interpreter = (f"{python_prefix.rstrip('/')}/bin/python{version}" if python_prefix
                       else str(Path(base).resolve()))  # fmt: skip
    elif tool == "venv-pack":
        import venv_pack

        base = python or getattr(sys, "_base_executable", sys.executable)
        with tempfile.TemporaryDirectory(prefix="curate-pack-", dir=out.parent) as tmp:
            env = Path(tmp) / "env"
            log.info("pack: installing the package into a fresh venv (%s)", base)
            build_venv(env, base, extras, with_pyspark)
            version = _python_version(env / "bin" / "python")
            _describe(env, tool, version, with_pyspark)
            log.info("pack: writing %s with venv-pack", out)
            venv_pack.pack(prefix=str(env), output=str(out), force=True,
                           python_prefix=python_prefix, compress_level=4)  # fmt: skip
        # the venv's python links to its base interpreter, or to python_prefix's on nodes
        interpreter = (f"{python_prefix.rstrip('/')}/bin/python{version}" if python_prefix
                       else str(Path(base).resolve()))  # fmt: skip
    elif tool == "conda-pack":
        try:
            import conda_pack
        except ImportError as e:
            raise PackError("--tool conda-pack needs conda-pack (pip install conda-pack)") from e
        if not conda_prefix or not (Path(conda_prefix) / "conda-meta").is_dir():
            raise PackError(
                f"{conda_prefix or '(none given)'}: --conda-prefix must name a conda "
                "environment (conda create -p ENV python=3.11; ENV/bin/pip install -c "
                "requirements.lock .)"
            )
        env = Path(conda_prefix)
        site = _site_packages(env)
        if not list(site.glob("curate_pipeline-*.dist-info")) or _editable(site):
            raise PackError(f"{env}: install the package there, not editable: "
                            f"{env}/bin/pip install -c requirements.lock {ROOT}")  # fmt: skip
        version = _python_version(env / "bin" / "python")
        _describe(env, tool, version, any(site.glob("pyspark-*.dist-info")))
        conda_pack.pack(prefix=str(env), output=str(out), force=True)
        interpreter = "carried"
    else:
        raise PackError(f"--tool {tool}: use venv-pack or conda-pack")
    return Packed(out, out.stat().st_size, version, interpreter, tool)


def describe(packed: Packed) -> list[str]:
    size = packed.bytes / 2**20
    if packed.interpreter == "carried":
        where = f"Python {packed.python} carried in the archive"
    else:
        where = (f"not carried: every node needs Python {packed.python} at "
                 f"{packed.interpreter} (--python-prefix names another)")  # fmt: skip
    return [
        f"packed {packed.path} ({size:,.0f} MiB, {packed.tool}; {where})",
        *packed.submit_lines(),
        "models and the tokenizer travel with the job as before (config paths or URIs)",
    ]
