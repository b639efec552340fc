"""Every name of rlvr that a benchmark (or an example) imports exists: a move inside the package that
leaves a benchmark importing the old place fails here, not months later in ``make bench-check``
(which goes on past a benchmark that fails, so a broken one only shows as a missing figure)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("examples/**/*.py")])
#: Fallbacks a benchmark keeps on purpose, to measure an older tree (``--against``): ``try`` branches.
OPTIONAL = {"rlvr.verify.code.verifier.verify_code_batch", "rlvr.verify.code.languages.get_language"}


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
            missing.append(f"line {line}: {module} ({e})")
            continue
        if not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"line {line}: {module}.{name}")
    assert not missing, f"{path.relative_to(ROOT)} imports what rlvr no longer has: {missing}"
