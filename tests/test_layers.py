"""The per-document layer stays free of Spark: its modules, and every pipeline module they
import (transitively), never import pyspark. (docs/architecture.md: the layers.)"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "curate_pipeline"

# Plain functions over bytes, strings and arrays: unit-testable without a SparkSession. The
# per-document layer is everything under curate_pipeline/document/; the config and the outputs' pure
# formulas and file formats are held to the same rule.
PER_DOCUMENT = sorted(str(p.relative_to(PKG)) for p in (PKG / "document").rglob("*.py")) + [
    *sorted(str(p.relative_to(PKG)) for p in (PKG / "config").glob("*.py")),
    "location.py", "outputs/budget.py", "outputs/tokens/shards.py",
    "outputs/tokens/megatron.py", "outputs/mixture/sampling.py",
]  # fmt: skip
# What the per-document layer may import from the package: itself, the config, locations.
DOCUMENT_MAY_IMPORT = (
    "curate_pipeline.document",
    "curate_pipeline.config",
    "curate_pipeline.location",
)


def _module_file(name: str) -> Path | None:
    if not name.startswith("curate_pipeline"):
        return None
    if name == "curate_pipeline":
        return PKG / "__init__.py"
    rel = Path(*name.split(".")[1:])
    for cand in (PKG / rel.with_suffix(".py"), PKG / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path: Path, top_level_only: bool = False) -> set[str]:
    """Every module a file imports, at any depth of the file (lazy imports too), or only its
    module-level imports (those run when it is imported)."""
    names: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_per_document_modules_never_reach_pyspark():
    offenders = []
    for rel in PER_DOCUMENT:
        start = PKG / rel
        assert start.is_file(), rel
        seen, todo = set(), [(start, [rel])]
        while todo:
            path, chain = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            for name in _imports(path):
                if name.split(".")[0] == "pyspark":
                    offenders.append(" -> ".join(chain) + f" imports {name}")
                f = _module_file(name)
                if f is not None and f not in seen:
                    todo.append((f, [*chain, str(f.relative_to(PKG))]))
    assert offenders == [], "\n".join(offenders)


def test_the_per_document_layer_imports_only_itself_and_the_config():
    wrong = []
    for path in sorted((PKG / "document").rglob("*.py")):
        for name in _imports(path):
            if name.split(".")[0] == "curate_pipeline" and _module_file(name) is not None:
                if not name.startswith(DOCUMENT_MAY_IMPORT):
                    wrong.append(f"{path.relative_to(PKG)} imports {name}")
    assert wrong == [], "\n".join(wrong)


def _cycles(graph: dict[Path, set[Path]]) -> list[str]:
    state: dict[Path, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node: Path, stack: list[Path]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                loop = stack[stack.index(dep) :] + [dep]
                cycles.append(" -> ".join(str(p.relative_to(PKG)) for p in loop))
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_no_import_cycles_between_modules():
    """Module-level imports form no cycle: every module can be imported first."""
    graph: dict[Path, set[Path]] = {}
    for path in PKG.rglob("*.py"):
        deps = {_module_file(n) for n in _imports(path, top_level_only=True)}
        graph[path] = {d for d in deps if d is not None and d != path}
    cycles = _cycles(graph)
    assert cycles == [], "\n".join(cycles)


# The floors, lowest first: a module imports (at any depth: lazy imports too) only modules on
# its own floor or below. The ground holds the config, locations, markers and the publishing
# of versions (outputs/publish: no Spark; the stages read the versions it commits); the
# per-document logic and the example-data writers stand on it; Spark plumbing (engine) on
# them; the stages on the engine; the outputs (mixture, report, explorer) on the stages; the
# run on everything; the CLI on top.
FLOORS = {"config": 0, "location.py": 0, "backoff.py": 0, "markers.py": 0, "outputs/publish": 0,
          "__init__.py": 0, "document": 1, "examples": 1, "engine": 2, "stages": 3, "outputs": 4,
          "run": 5, "cli.py": 6, "api.py": 6}  # fmt: skip


def _floor(path: Path) -> int:
    parts = path.relative_to(PKG).parts
    if "/".join(parts[:2]) in FLOORS:  # a room of a floor that stands on the ground
        return FLOORS["/".join(parts[:2])]
    top = parts[0]
    assert top in FLOORS, f"{top}: give it a floor in FLOORS"
    return FLOORS[top]


def _all_arrows() -> dict[Path, set[Path]]:
    graph: dict[Path, set[Path]] = {}
    for path in PKG.rglob("*.py"):
        deps = {_module_file(n) for n in _imports(path)}
        graph[path] = {d for d in deps if d is not None and d != path}
    return graph


def test_no_arrow_runs_up_the_floors():
    up = [f"{a.relative_to(PKG)} -> {b.relative_to(PKG)}"
          for a, deps in _all_arrows().items() for b in deps if _floor(b) > _floor(a)]  # fmt: skip
    assert up == [], "\n".join(sorted(up))


def test_no_cycles_even_through_lazy_imports():
    cycles = _cycles(_all_arrows())
    assert cycles == [], "\n".join(cycles)
