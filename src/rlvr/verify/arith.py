"""Safe arithmetic: evaluate ``+ - * / ^ **`` and parentheses over exact rationals.

Used wherever a model's own arithmetic must be checked (process-reward steps, the
countdown task) without ``eval``. Python's ``ast`` parses the text; only number
literals, the four operations, powers and unary signs are admitted, and every
power is size-checked *before* it is computed, so ``44**19**35`` is refused in
microseconds instead of hanging the process.
"""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction
from typing import cast

from rlvr.errors import Refused

MAX_DIGITS = 1_000  # refuse any intermediate result with more digits than this
MAX_CHARS = 500

_UNICODE_OPS = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-", "–": "-", "^": "**"})


def _digits(x: Fraction) -> float:
    """Approximate number of decimal digits of a rational's numerator and denominator."""
    n = max(abs(x.numerator), 1)
    return math.log10(n) + math.log10(max(x.denominator, 1))


def _pow(base: Fraction, exp: Fraction) -> Fraction:
    if exp.denominator != 1:
        raise Refused("non-integer exponent")
    e = exp.numerator
    if base == 0 and e < 0:
        raise ZeroDivisionError("0 to a negative power")
    if abs(base) not in (0, 1) and abs(e) * max(_digits(base), 0.1) > MAX_DIGITS:
        raise Refused(f"power with about {abs(e) * _digits(base):.0f} digits")
    return base**e


def _eval(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        return Fraction(str(value)) if isinstance(value, float) else Fraction(cast(int, value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        v = _eval(node.operand)
        return v if isinstance(node.op, ast.UAdd) else -v
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left), _eval(node.right)
        match node.op:
            case ast.Add():
                out = left + right
            case ast.Sub():
                out = left - right
            case ast.Mult():
                out = left * right
            case ast.Div():
                out = left / right  # ZeroDivisionError propagates: the caller decides
            case ast.Pow():
                out = _pow(left, right)
            case _:
                raise Refused(f"operator {type(node.op).__name__} is not arithmetic")
        if _digits(out) > MAX_DIGITS:
            raise Refused(f"result with more than {MAX_DIGITS} digits")
        return out
    raise Refused(f"{type(node).__name__} is not allowed in arithmetic")


def to_python_syntax(text: str) -> str:
    """Map the usual written operators (×, ÷, ^, \\times, \\cdot, thousands commas) to Python's."""
    s = text.translate(_UNICODE_OPS)
    s = s.replace(r"\times", "*").replace(r"\cdot", "*").replace(r"\div", "/")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)
    return s.replace("$", "").strip()


def evaluate(text: str) -> Fraction:
    """Evaluate an arithmetic expression exactly.

    Raises:
        Refused: the text is not plain arithmetic, or a result would be too large.
        ZeroDivisionError: division by zero.

    Examples:
        >>> evaluate("3 × (4 + 1) / 2")
        Fraction(15, 2)
    """
    s = to_python_syntax(text)
    if len(s) > MAX_CHARS:
        raise Refused(f"expression longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(s, mode="eval")
    except SyntaxError as e:
        raise Refused(f"not an arithmetic expression: {text[:40]!r}") from e
    return _eval(tree)


def try_evaluate(text: str) -> Fraction | None:
    """:func:`evaluate`, or ``None`` when the text is not evaluable arithmetic."""
    try:
        return evaluate(text)
    except (Refused, ZeroDivisionError, ValueError, RecursionError, OverflowError):
        return None
