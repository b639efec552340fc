"""Every name of rlvr that a benchmark (or an example) imports exists: a move inside the package that
leaves a benchmark importing the old place fails here, not months later in ``make bench-check``
(which goes on past a benchmark that fails, so a broken one only shows as a missing figure)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("examples/**/*.py")])
#: Fallbacks a benchmark keeps on purpose, to measure an older tree (``--against``): ``try`` branches.
OPTIONAL = {"rlvr.verify.code.verifier.verify_code_batch", "rlvr.verify.code.languages.get_language"}


#: Engines with an environment of their own: a module over one is read, not imported, where it is missing.
ENGINES = {"verl"}


def _defined(module: str) -> set[str]:
    """The names ``module``'s source defines at its top level (read, not imported)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return set()
    names: set[str] = set()
    for node in ast.parse(Path(spec.origin).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _wanted(path: Path) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of every ``from rlvr... import name`` in the script."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "rlvr":
            out += [(node.lineno, node.module or "", a.name) for a in node.names]
    return out


@pytest.mark.parametrize("path", SCRIPTS, ids=[str(p.relative_to(ROOT)) for p in SCRIPTS])
def test_what_a_benchmark_imports_from_rlvr_exists(path: Path) -> None:
    missing = []
    for line, module, name in _wanted(path):
        if f"{module}.{name}" in OPTIONAL:
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            if getattr(e, "name", None) in ENGINES and name in _defined(module):
                continue  # a module over an engine this environment lacks (verl's: .venv-verl runs it)
            missing.append(f"line {line}: {module} ({e})")
            continue
        if not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"line {line}: {module}.{name}")
    assert not missing, f"{path.relative_to(ROOT)} imports what rlvr no longer has: {missing}"
