"""The size budget: a function of rlvr is at most :data:`FUNCTION_LINES` long and a class at most
:data:`CLASS_LINES`, outside :data:`ALLOWED`, whose entries may only shrink.

A unit past its budget does more than one thing; the allowlist records the ones that still do
(with the size each had when it was listed). It fails when a listed unit grows, when a new one
passes a budget, and when a listed one comes back under its budget or is gone (strike it off:
the list only shrinks). The layering is :mod:`tests.test_layers`'s.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rlvr"
FUNCTION_LINES = 80
CLASS_LINES = 400

#: ``"path:name": lines`` of the units over budget today; each may shrink, none may grow.
ALLOWED = {
    # classes: the TRL adapter (it once carried a redraw loop of its own; under 500 lines since issue 55)
    "integrations/trl/trainer.py:FailureAwareGRPOTrainer": 431,
    # functions
    "fine_tune.py:fine_tune": 150,
    "cli/sample.py:sample": 117,
    "config.py:_consistent": 129,
    "models/grouped_forward.py:_per_stream": 121,
    "integrations/trl/episodes.py:episode_of": 106,
    "traces/sample.py:sample_file": 102,
    "diagnostics/step.py:decide": 93,
    "verify/batch.py:run_batch": 99,
    "sampling/decode.py:_decode": 99,
    "integrations/trl/from_config.py:train_trl": 94,
    "sft.py:sft": 92,
    "verify/code/sandbox.py:_pump": 90,
    "cli/sft.py:sft": 88,
    "episodes/from_openenv.py:environment_class": 87,
    "verify/code/sandbox.py:start": 86,
}


def _sizes() -> dict[str, tuple[int, int]]:
    """``"path:name": (lines, budget)`` of every function and class of rlvr (nested ones included)."""
    out: dict[str, tuple[int, int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                budget = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                key = f"{path.relative_to(SRC)}:{node.name}"
                out[key] = max(out.get(key, (0, budget)), (lines, budget))
    return out


def test_no_unit_passes_its_budget_unless_listed() -> None:
    over = {k: n for k, (n, budget) in _sizes().items() if n > budget and k not in ALLOWED}
    assert not over, f"past the size budget (split them): {over}"


def test_listed_units_only_shrink() -> None:
    sizes = _sizes()
    grown = {k: (sizes[k][0], n) for k, n in ALLOWED.items() if k in sizes and sizes[k][0] > n}
    assert not grown, f"listed units grew (now, listed): {grown}"
    done = sorted(k for k in ALLOWED if k not in sizes or sizes[k][0] <= sizes[k][1])
    assert not done, f"back under budget or gone: strike them off ALLOWED: {done}"
