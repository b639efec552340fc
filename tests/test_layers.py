"""The layering the docs promise (docs/concepts/layout.md), checked on the code's own imports.

Every ``import`` of rlvr by rlvr (at the top of a module or inside a function: both are arrows)
must point from a higher layer to a lower one, never across a layer or up; no files import each
other in a circle across folders; and the verifier core imports without torch.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rlvr"

#: From the bottom up; a unit may import its own modules and any unit of a lower layer.
LAYERS: list[list[str]] = [
    ["types", "errors", "encoding", "seeded"],
    ["registry"],
    ["config", "runtime"],
    ["data"],
    ["runs"],  # the run folder's files
    ["models"],
    ["verify"],  # (its judge can load a local model)
    ["rewards"],
    ["scoring", "decoding", "algo"],  # algo: the objective, pure
    ["diagnostics"],  # the failure step, engine-neutral
    ["episodes", "report"],
    ["sampling"],  # the decode loop, episodes' turns, greedy evaluation: every engine's
    ["setup"],  # one set-up of a run from its config, for every engine
    ["engine"],  # rlvr's own engine
    ["integrations", "traces", "sft", "plots"],
    ["pipeline", "demo", "fine_tune"],
    ["cli"],
    ["__main__", "rlvr"],  # the package's face and entry point
]
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _module(path: Path) -> str:
    return ".".join(("rlvr", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "rlvr"


def _imports() -> dict[str, set[str]]:
    """Every module of rlvr and the rlvr modules it imports (anywhere in it)."""
    out: dict[str, set[str]] = defaultdict(set)
    known = {_module(p) for p in SRC.rglob("*.py")}
    for path in SRC.rglob("*.py"):
        here = _module(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # ``from pkg import mod`` is an arrow to the module; ``from mod import name``, to mod
                subs = [f"{node.module}.{a.name}" for a in node.names]
                names = [s for s in subs if s in known] + ([node.module] if not all(s in known for s in subs) else [])
            else:
                continue
            out[here] |= {n for n in names if n in known and n != here}
    return out


def test_every_unit_has_a_layer() -> None:
    units = {_unit(_module(p)) for p in SRC.rglob("*.py")}
    assert units <= set(LAYER), f"units without a layer: {sorted(units - set(LAYER))}"


def test_no_import_points_up_or_across_a_layer() -> None:
    wrong = sorted(
        f"{a} -> {b}"
        for a, targets in _imports().items()
        for b in targets
        if _unit(a) != _unit(b) and LAYER[_unit(a)] <= LAYER[_unit(b)]
    )
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_no_circle_of_files_across_folders() -> None:
    graph = _imports()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in list(graph):
        if v not in index:
            visit(v)
    across = [c for c in circles if len({m.rsplit(".", 1)[0] for m in c}) > 1]
    assert not across, f"files importing each other across folders: {across}"


def test_the_verifier_core_imports_without_torch() -> None:
    """... nor the optional environment libraries (``rlvr[envs]``: verifiers, OpenEnv)."""
    code = (
        "import sys; import rlvr, rlvr.verify, rlvr.rewards, rlvr.config, rlvr.scoring, rlvr.runs, "
        "rlvr.diagnostics.causes, rlvr.registry, rlvr.verify.judge.judged; "
        "bad = sorted(m for m in ('torch', 'transformers', 'trl', 'verifiers', 'openenv') if m in sys.modules); "
        "print(bad); "
        "sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
