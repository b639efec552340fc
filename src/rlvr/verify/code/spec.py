"""What a code task's gold is: a test specification, parsed once into a :class:`TestSpec`.

Accepted shapes (a dict, or the same as a JSON string; a plain non-JSON string is
taken as assert-style tests):

- assert tests, run after the solution (HumanEval: ``check(candidate)`` is called
  with ``entry_point``)::

      {"tests": "assert add(1, 2) == 3", "entry_point": "add", "prompt": "def add(a, b):\\n"}

- stdin/stdout cases (each run is a fresh sandbox)::

      {"cases": [{"input": "1 2\\n", "output": "3\\n"}], "float_tol": 1e-6}
      {"inputs": ["1 2\\n"], "outputs": ["3\\n"]}                       # APPS style

- a function and argument/result pairs::

      {"entry_point": "add", "cases": [{"args": [1, 2], "result": 3}]}
      {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]}           # APPS style

``language`` (default ``python``) and ``timeout`` (seconds for the whole item) may
be given in the spec too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TestSpec:
    """A parsed test specification (see the module docstring).

    Attributes:
        mode: ``assert``, ``io`` or ``call``.
        tests: assert-style test code.
        entry_point: the function under test.
        cases: io cases ``{"input", "output"}`` or call cases ``{"args", "kwargs", "result"}``.
        prompt: code to put before a completion that does not define ``entry_point`` itself.
        language: the language name.
        float_tol: tolerance for float outputs (0: exact, except a 1e-9 floor for floats).
        timeout: seconds for the whole item, overriding the verifier's default.
    """

    mode: str
    tests: str = ""
    entry_point: str | None = None
    cases: tuple[dict[str, Any], ...] = ()
    prompt: str = ""
    language: str = "python"
    float_tol: float = 0.0
    timeout: float | None = None


def parse_spec(gold: Any) -> TestSpec:
    """Parse a gold into a :class:`TestSpec`.

    Raises:
        ValueError: the gold is not a test specification (the verdict becomes ``bad_gold``).
    """
    if isinstance(gold, TestSpec):
        return gold
    if isinstance(gold, str):
        text = gold.strip()
        if not text:
            raise ValueError("empty test specification")
        if text[0] == "{":
            try:
                gold = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"test specification is not valid JSON: {e}") from None
        else:
            return TestSpec("assert", tests=gold)
    if not isinstance(gold, dict):
        raise ValueError(f"a test specification is a dict or JSON string, got {type(gold).__name__}")
    common: dict[str, Any] = {
        "entry_point": gold.get("entry_point") or gold.get("fn_name"),
        "prompt": str(gold.get("prompt") or ""),
        "language": str(gold.get("language") or "python"),
        "float_tol": float(gold.get("float_tol") or 0.0),
        "timeout": float(gold["timeout"]) if gold.get("timeout") else None,
    }
    if gold.get("tests") or gold.get("test"):
        return TestSpec("assert", tests=str(gold.get("tests") or gold.get("test")), **common)
    cases = gold.get("cases")
    if cases is None and "inputs" in gold and "outputs" in gold:
        ins, outs = gold["inputs"], gold["outputs"]
        if len(ins) != len(outs):
            raise ValueError(f"{len(ins)} inputs but {len(outs)} outputs")
        if common["entry_point"]:
            cases = [{"args": a if isinstance(a, list) else [a], "result": o} for a, o in zip(ins, outs)]
        else:
            cases = [{"input": i, "output": o} for i, o in zip(ins, outs)]
    if not cases or not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise ValueError("test specification has no tests, cases or inputs/outputs")
    if all("input" in c and "output" in c for c in cases):
        return TestSpec("io", cases=tuple(cases), **common)
    if common["entry_point"] and all("result" in c for c in cases):
        return TestSpec("call", cases=tuple(cases), **common)
    raise ValueError("cases must all be {input, output}, or {args, result} with an entry_point")
