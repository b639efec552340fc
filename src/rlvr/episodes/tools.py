"""The built-in tools: ``calculator`` (exact arithmetic, nothing evaluated but numbers) and ``python``
(the policy's code in rlvr's code sandbox, with its limits).

Their failures are owned as the episode model says: an expression the calculator cannot read or a
division by zero, and code that raises, loops past its limit or prints garbage, are the *policy's*
results, returned to it as text (the episode goes on); a sandbox that cannot start is the
environment's (:class:`EnvCrash`, recorded as ``env_crash``).
"""

from __future__ import annotations

import ast
import operator
from fractions import Fraction
from typing import Any

from rlvr.episodes.clock import policy_time
from rlvr.errors import ConfigError
from rlvr.registry import Registry
from rlvr.verify.code import sandbox
from rlvr.verify.code.languages import get_language


class EnvCrash(RuntimeError):
    """The environment's session or sandbox died or could not be created (``env_crash``)."""


_BIN: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UN: dict[type, Any] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_DIGITS = 1000


#: Bits a numerator or denominator may hold (~1000 digits): every operand is at most this, so
#: every exact operation is bounded (a product has at most twice as many) and none holds the
#: interpreter lock past the tool's limit.
_MAX_BITS = int(_MAX_DIGITS * 3.33)


def _bits(x: Fraction) -> int:
    return max(x.numerator.bit_length(), x.denominator.bit_length())


def _bounded(x: Fraction) -> Fraction:
    if _bits(x) > _MAX_BITS:
        raise ValueError(f"a value of more than {_MAX_DIGITS} digits: too large to compute exactly")
    return x


def _fmt(x: Fraction) -> str:
    if x.denominator == 1:
        return str(x.numerator)
    return f"{x.numerator}/{x.denominator}"


def evaluate(expression: str) -> Fraction:
    """An arithmetic expression's exact value: numbers, ``+ - * / // % **`` and parentheses only.

    Raises:
        ValueError: anything else (names, calls, a power too large, division by zero), with why.
    """
    try:
        tree = ast.parse(expression.replace("^", "**").replace("×", "*").replace("÷", "/"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ValueError(f"cannot read {expression[:80]!r}: {type(e).__name__}") from None

    def ev(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return _bounded(Fraction(str(node.value)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UN:
            return _UN[type(node.op)](ev(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow):
                # the result's size is known before it is computed: |b| times the base's, whichever side
                # of 1 the base is (a numerator or a denominator grows alike); 0 and +-1 stay small
                if b.denominator != 1 or (
                    abs(b.numerator) > 1 and abs(a) not in (0, 1) and _bits(a) * abs(b.numerator) > _MAX_BITS
                ):
                    raise ValueError("the power is too large to compute exactly")
                if a == 0 and b < 0:
                    raise ValueError("division by zero")
                return a**b.numerator
            if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and b == 0:
                raise ValueError("division by zero")
            return _bounded(Fraction(_BIN[type(node.op)](a, b)))
        raise ValueError(f"only numbers and + - * / // % ** are allowed, not {type(node).__name__}")

    return ev(tree.body)


class Calculator:
    """The ``calculator`` tool."""

    def calculator(self, expression: str) -> str:
        """Evaluate an arithmetic expression exactly.

        Args:
            expression: numbers with + - * / // % ** and parentheses, e.g. "(1234 * 5678) + 9".
        """
        try:
            return _fmt(evaluate(expression))
        except ValueError as e:  # the policy's expression: its result, not the environment's fault
            return f"error: {e}"


class PythonTool:
    """The ``python`` tool: the policy's code in the code sandbox (no network, no host files)."""

    timeout_s: float = 5.0

    def python(self, code: str) -> str:
        """Run Python code and return what it printed.

        Args:
            code: a Python program; print the values you need.
        """

        with policy_time(self.timeout_s):  # the policy's program: its time is not the environment's
            run = sandbox.run(
                [get_language("python").run[0], "-I", "main.py"],
                {"main.py": code},
                limits=sandbox.Limits(wall_s=self.timeout_s),
            )
        if run.error:  # the sandbox itself could not run it: the environment's fault
            raise EnvCrash(run.error)
        if run.timed_out:
            return f"error: the program ran past {self.timeout_s:g}s and was stopped"
        out = run.stdout if run.returncode == 0 else (run.stdout + run.stderr)
        return out.strip()[-2000:] or ("(no output)" if run.returncode == 0 else f"exit status {run.returncode}")


#: Built-in tools by config name (``env.tools``).
TOOLS: Registry[type] = Registry("tool")
TOOLS.add("calculator", Calculator)
TOOLS.add("python", PythonTool)


def toolbox(names: list[str]) -> type:
    """An environment class offering the named built-in tools (``reset`` does nothing)."""
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise ConfigError(
            f"env.tools: unknown tool(s) {', '.join(map(repr, unknown))}; built in: "
            f"{', '.join(sorted(TOOLS))} (or env.environment: module:Class)"
        )

    def reset(self: Any, row: dict[str, Any]) -> None:
        return None

    return type("ToolBox", tuple(TOOLS[n] for n in names), {"reset": reset})
