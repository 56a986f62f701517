"""The per-document layer stays free of Spark: its modules, and every pipeline module they
import (transitively), never import pyspark. (docs/architecture.md: the layers.)"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pipeline"

# Plain functions over bytes, strings and arrays: unit-testable without a SparkSession.
PER_DOCUMENT = [
    "warc/framing.py", "warc/arc.py", "warc/records.py", "warc/decode.py", "warc/splits.py",
    "extract.py", "langid.py", "url_filter.py",
    "text/words.py", "text/spacy_words.py", "text/gopher.py", "text/c4.py", "text/fineweb.py",
    "text/rules.py", "text/pii.py", "text/decontamination.py",
    "quality/tokens.py", "quality/naive_bayes.py", "quality/fasttext_backend.py",
    "quality/model.py",
    "dedup/normalize.py", "dedup/minhash.py",
    "tokens/tokenizer.py", "tokens/shards.py", "tokens/megatron.py",
    "budget.py", "config.py",
]  # fmt: skip


def _module_file(name: str) -> Path | None:
    if not name.startswith("pipeline"):
        return None
    rel = Path(*name.split(".")[1:])
    for cand in (PKG / rel.with_suffix(".py"), PKG / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth of the file (lazy imports too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
