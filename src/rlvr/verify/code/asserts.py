"""Assert tests of the usual shape, compiled to calls whose results are judged outside the sandbox.

HumanEval's ``check(candidate)`` and MBPP's module-level asserts are mostly one call of the
function under test and one comparison with a literal::

    assert candidate([1, 2, 3]) == 6
    assert abs(candidate(1.33) - 0.33) < 1e-6
    assert math.isclose(area(2), 12.56, rel_tol=1e-3)
    assert set(common((1, 2), (2, 3))) == {2}
    assert not candidate("")          assert candidate(5) is True

:func:`compile_asserts` turns such tests into :class:`Check` records. The sandbox then only
*calls* the function and returns what it gave back, as plain data; :func:`evaluate` compares it
here, with the expected value never having entered the solution's process, so nothing the
solution does there can make a wrong answer pass. Tests with any other statement (loops,
helpers, assignments) return ``None`` and run in a sandbox of their own, apart from the program
(``_tests.py``).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlvr.verify.code._harness import _spread, plain, strict_equal


def _hashed(kind: type) -> Callable[[Any], Any]:
    """``set``/``frozenset`` over a returned value, refusing members crafted to share one hash (a
    set of them costs quadratic time to build, here in the verifier's own process)."""

    def build(value: Any) -> Any:
        items = list(value)
        _spread(items)
        return kind(items)

    return build


#: Builtins a test may wrap the result in; applied here, to plain data.
_WRAPPERS: dict[str, Callable[..., Any]] = {
    "set": _hashed(set),
    "frozenset": _hashed(frozenset),
    "sorted": sorted,
    "list": list,
    "tuple": tuple,
    "len": len,
    "abs": abs,
    "round": round,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "sum": sum,
    "min": min,
    "max": max,
}
_ORDER = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_MODULES = {"math"}


@dataclass(frozen=True)
class Check:
    """One compiled assert: call the function with ``args``/``kwargs``, then test the result.

    Attributes:
        kind: ``eq ne lt le gt ge in contains not_in not_contains truth not is is_not close
            isclose const``, or ``case`` (a function-call case: :func:`case_equal`); for ``lt``...
            the result is on the left (flipped when it was not).
        expected: the literal the result is compared with (``close``: the target value).
        wrappers: functions applied to the result, innermost first, each ``(name, extra args)``.
        tol: ``close``: the tolerance and whether it is strict (``<``); ``isclose``: its keywords.
        source: the assert as written, for failure reasons.
    """

    kind: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: Any = None
    wrappers: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    tol: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def calls(self) -> bool:
        """False for ``assert True``-style constants, which need no call."""
        return self.kind != "const"


class _NotCompilable(Exception):
    pass


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _NotCompilable from None


class _Compiler:
    def __init__(self, callees: set[str]) -> None:
        self.callees = callees

    def result(self, node: ast.expr) -> tuple[tuple[Any, ...], dict[str, Any], tuple[tuple[str, tuple[Any, ...]], ...]]:
        """``callee(literals...)``, possibly inside wrappers: its arguments and the wrappers."""
        wrappers: list[tuple[str, tuple[Any, ...]]] = []
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _WRAPPERS
            and node.func.id not in self.callees
        ):
            if not node.args or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise _NotCompilable
            wrappers.append((node.func.id, tuple(_literal(a) for a in node.args[1:])))
            node = node.args[0]
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.callees):
            raise _NotCompilable
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _NotCompilable
        args = tuple(_literal(a) for a in node.args)
        kwargs = {k.arg: _literal(k.value) for k in node.keywords if k.arg is not None}
        return args, kwargs, tuple(reversed(wrappers))

    def check(self, test: ast.expr, source: str) -> Check:
        if isinstance(test, ast.Constant):
            return Check("const", expected=bool(test.value), source=source)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            args, kwargs, wraps = self.result(test.operand)
            return Check("not", args, kwargs, wrappers=wraps, source=source)
        if isinstance(test, ast.Call):
            if (iso := self._isclose(test, source)) is not None:
                return iso
            args, kwargs, wraps = self.result(test)
            return Check("truth", args, kwargs, wrappers=wraps, source=source)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self._compare(test.left, test.ops[0], test.comparators[0], source)
        raise _NotCompilable

    def _isclose(self, test: ast.Call, source: str) -> Check | None:
        f = test.func
        named = (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id == "math"
            and f.attr == "isclose"
        ) or (isinstance(f, ast.Name) and f.id == "isclose")
        if not named:
            return None
        if len(test.args) != 2 or any(k.arg not in ("rel_tol", "abs_tol") for k in test.keywords):
            raise _NotCompilable
        tol = {str(k.arg): _literal(k.value) for k in test.keywords}
        for res, exp in ((test.args[0], test.args[1]), (test.args[1], test.args[0])):
            try:
                args, kwargs, wraps = self.result(res)
            except _NotCompilable:
                continue
            return Check("isclose", args, kwargs, _literal(exp), wraps, tol, source)
        raise _NotCompilable

    def _close(self, left: ast.expr, op: ast.cmpop, right: ast.expr, source: str) -> Check | None:
        """``abs(R - y) < tol`` (or ``math.fabs``, either order of the difference)."""
        if not isinstance(left, ast.Call):
            return None
        f = left.func
        is_abs = (isinstance(f, ast.Name) and f.id == "abs") or (
            isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "math" and f.attr == "fabs"
        )
        if not (
            is_abs
            and len(left.args) == 1
            and isinstance(left.args[0], ast.BinOp)
            and isinstance(left.args[0].op, ast.Sub)
            and type(op) in (ast.Lt, ast.LtE)
        ):
            return None
        diff = left.args[0]
        for res, exp in ((diff.left, diff.right), (diff.right, diff.left)):
            try:
                args, kwargs, wraps = self.result(res)
            except _NotCompilable:
                continue
            tol = {"tol": _literal(right), "strict": isinstance(op, ast.Lt)}
            return Check("close", args, kwargs, _literal(exp), wraps, tol, source)
        raise _NotCompilable

    def _compare(self, left: ast.expr, op: ast.cmpop, right: ast.expr, source: str) -> Check:
        if (close := self._close(left, op, right, source)) is not None:
            return close
        try:
            args, kwargs, wraps = self.result(left)
            other, flipped = right, False
        except _NotCompilable:
            args, kwargs, wraps = self.result(right)
            other, flipped = left, True
        expected = _literal(other)
        t = type(op)
        if t in (ast.Eq, ast.NotEq):
            kind = "eq" if t is ast.Eq else "ne"
        elif t in _ORDER:
            kind = _FLIP[_ORDER[t]] if flipped else _ORDER[t]
        elif t in (ast.In, ast.NotIn):
            # R in [..] tests membership of the result; x in R tests what the result contains
            kind = ("contains" if flipped else "in") if t is ast.In else ("not_contains" if flipped else "not_in")
        elif t in (ast.Is, ast.IsNot):
            if expected not in (True, False, None) or type(expected) not in (bool, type(None)):
                raise _NotCompilable  # identity with anything but a singleton depends on the interpreter
            kind = "is" if t is ast.Is else "is_not"
        else:
            raise _NotCompilable
        return Check(kind, args, kwargs, expected, wraps, source=source)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def compile_asserts(tests: str, entry_point: str | None) -> list[Check] | None:
    """The checks of an assert-style test file, or None when it is not entirely of the usual shape.

    Module-level asserts call the function by ``entry_point``; a ``def check(candidate)`` calls it
    by its parameter's name (HumanEval). Imports of ``math``, docstrings, ``pass`` and literal
    assignments (HumanEval's ``METADATA``) may stand beside them.

    Examples:
        >>> [c.kind for c in compile_asserts("assert f(2) == 4\\nassert not f(0)", "f")]
        ['eq', 'not']
    """
    if not entry_point or "." in entry_point:
        return None
    try:
        tree = ast.parse(tests)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    checks: list[Check] = []
    try:
        for node in tree.body:
            if isinstance(node, ast.Assert):
                checks.append(_Compiler({entry_point}).check(node.test, ast.unparse(node)[:160]))
            elif isinstance(node, ast.FunctionDef) and node.name == "check":
                params = [a.arg for a in node.args.args]
                if len(params) != 1 or node.decorator_list:
                    return None
                compiler = _Compiler({params[0]})
                for stmt in node.body:
                    if isinstance(stmt, ast.Assert):
                        checks.append(compiler.check(stmt.test, ast.unparse(stmt)[:160]))
                    elif not (_is_docstring(stmt) or isinstance(stmt, ast.Pass)):
                        return None
            elif isinstance(node, ast.Import) and all(a.name in _MODULES for a in node.names):
                continue
            elif isinstance(node, ast.ImportFrom) and node.module in _MODULES:
                continue
            elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
                _literal(node.value)
            elif not (_is_docstring(node) or isinstance(node, ast.Pass)):
                return None
    except _NotCompilable:
        return None
    return checks or None


def _wrapped(check: Check, value: Any) -> Any:
    for name, extra in check.wrappers:
        value = _WRAPPERS[name](value, *extra)
    return value


def _number(x: Any) -> bool:
    return type(x) in (int, float)


def _member(x: Any, container: Any) -> bool:
    if type(container) is str:
        return type(x) is str and x in container
    if type(container) is dict:
        return plain(x) and any(strict_equal(x, k) for k in container)
    if type(container) in (list, tuple, set, frozenset):
        return any(strict_equal(x, v) for v in container)
    return False


def evaluate(check: Check, returned: Any) -> tuple[bool, str]:
    """Judge one check on the plain value the function returned: ``(passed, why not)``.

    Never raises: the value came from untrusted code (an integer too large for ``isclose``'s
    float, a comparison that overflows) and a check it breaks is a check it failed."""
    try:
        return _evaluate(check, returned)
    except Exception as e:
        return False, f"{check.source}: {type(e).__name__} comparing the returned value"


def _evaluate(check: Check, returned: Any) -> tuple[bool, str]:
    if check.kind == "const":
        return bool(check.expected), "" if check.expected else f"failed: {check.source}"
    try:
        r = _wrapped(check, returned)
    except Exception as err:  # sorted() of mixed types, len() of a number...
        return False, f"{check.source}: {type(err).__name__} on the returned value"
    e, k = check.expected, check.kind
    if k == "eq":
        ok = strict_equal(r, e)
    elif k == "ne":
        ok = not strict_equal(r, e)
    elif k in _FLIP:
        ok = ((_number(r) and _number(e)) or (type(r) is type(e) and type(r) in (str, tuple, list))) and {
            "lt": r < e,
            "le": r <= e,
            "gt": r > e,
            "ge": r >= e,
        }[k]
    elif k in ("in", "not_in"):
        ok = _member(r, e) == (k == "in")
    elif k in ("contains", "not_contains"):
        ok = _member(e, r) == (k == "contains")
    elif k in ("truth", "not"):
        ok = bool(r) == (k == "truth")
    elif k in ("is", "is_not"):
        ok = (r is e) == (k == "is")
    elif k == "close":
        diff = abs(r - e) if _number(r) and _number(e) else math.inf
        ok = diff < check.tol["tol"] if check.tol["strict"] else diff <= check.tol["tol"]
    elif k == "isclose":
        ok = _number(r) and _number(e) and math.isclose(r, e, **check.tol)
    elif k == "case":
        ok = case_equal(r, e, check.tol.get("tol") or 0.0)
    else:  # pragma: no cover - every kind the compiler makes is handled above
        raise ValueError(f"unknown check kind {k!r}")
    return bool(ok), "" if ok else f"failed: {check.source} (returned {_short(returned)})"


def case_equal(got: Any, want: Any, tol: float = 0.0) -> bool:
    """A function-call case's equality: plain types; an expected float within ``tol`` (1e-9 at least),
    an expected integer exactly (the tolerance, the spec's ``float_tol``, belongs to the expected
    value's type, never to the program's: a float near a large integer is not it)."""
    if isinstance(want, bool) or want is None:
        return type(got) is type(want) and got == want
    if _number(want):
        if not _number(got):
            return False
        if isinstance(want, float):
            return math.isclose(got, want, rel_tol=tol or 1e-9, abs_tol=tol or 1e-9)
        return got == want  # int against int or float: Python compares them exactly
    if isinstance(want, list | tuple):  # JSON specs cannot tell a tuple from a list
        return (
            type(got) in (list, tuple)
            and len(got) == len(want)
            and all(case_equal(g, w, tol) for g, w in zip(got, want))
        )
    if isinstance(want, dict):
        return type(got) is dict and set(got) == set(want) and all(case_equal(got[k], want[k], tol) for k in want)
    return strict_equal(got, want)


def _short(x: Any) -> str:
    s = repr(x)
    return s if len(s) <= 80 else s[:77] + "..."
