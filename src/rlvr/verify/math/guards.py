"""Refuse inputs that could hang a C-level computation or blow memory.

The watchdog in :mod:`rlvr.verify.timeout` interrupts Python code, not one long C
call such as ``9**(9**(9**9))`` in GMP. These checks run before any evaluation.
"""

from __future__ import annotations

import math
import re

import sympy

from rlvr.errors import Refused

#: An answer span longer than this is compared as a string only.
MAX_SPAN_CHARS = 1_000
MAX_BRACE_DEPTH = 40
MAX_EXPONENT = 1_000  # for the plain-number fast path (1.5e300 style)
MAX_RESULT_DIGITS = 100_000  # a numeric power may not evaluate to more digits than this
MAX_INT_DIGITS = 400
MAX_FACTORIAL = 5_000
MAX_NODES = 2_000


def check_span(s: str) -> None:
    """Refuse spans that are too long, too deep or stack powers three high."""
    if len(s) > MAX_SPAN_CHARS:
        raise Refused(f"answer span of {len(s)} characters exceeds {MAX_SPAN_CHARS}")
    depth = peak = 0
    for c in s:
        if c == "{":
            depth += 1
            peak = max(peak, depth)
        elif c == "}":
            depth -= 1
    if peak > MAX_BRACE_DEPTH:
        raise Refused(f"braces nested {peak} deep (limit {MAX_BRACE_DEPTH})")
    if any(len(d) > MAX_INT_DIGITS for d in re.findall(r"\d+", s)):
        raise Refused(f"a number with more than {MAX_INT_DIGITS} digits")


def check_expr(expr: sympy.Basic) -> None:
    """Refuse parsed expressions whose evaluation could explode."""
    for n, node in enumerate(sympy.preorder_traversal(expr)):
        if n > MAX_NODES:
            raise Refused(f"expression has more than {MAX_NODES} nodes")
        if isinstance(node, sympy.Pow) and _log10_size(node) > MAX_RESULT_DIGITS:
            raise Refused(f"{str(node)[:40]} would have more than {MAX_RESULT_DIGITS} digits")
        elif isinstance(node, sympy.factorial | sympy.factorial2):
            arg = node.args[0]
            if arg.is_Number and arg > MAX_FACTORIAL:
                raise Refused(f"factorial of {arg} exceeds {MAX_FACTORIAL}!")


#: Digits of the largest value a variable takes where equivalence is checked at random points
#: (rationals up to 39/13, numerator and denominator: about 3.2 digits).
POINT_DIGITS = 3.2


def too_big_at_points(expr: sympy.Basic) -> bool:
    """Would substituting numbers for the variables build a power too large to compute?

    ``x^99999999`` passes :func:`check_expr` (it is symbolic), but at ``x = 37/13`` it is an exact
    rational of hundreds of millions of digits: one GMP call that no time limit interrupts.
    """
    return any(
        isinstance(node, sympy.Pow) and _log10_size(node, POINT_DIGITS) > MAX_RESULT_DIGITS
        for node in sympy.preorder_traversal(expr)
    )


def _log10_size(node: sympy.Basic, symbol_digits: float = 0.0) -> float:
    """Estimated number of digits of a numeric power tower; a variable counts ``symbol_digits``
    (0: anything symbolic is 0)."""
    if node.free_symbols and not isinstance(node, sympy.Pow):
        return symbol_digits
    if node.is_Number:
        if node.is_Integer:
            n = abs(int(node))
            return float(len(str(n))) if n > 10**15 else math.log10(n) if n > 1 else 0.0
        return math.log10(abs(float(node))) if node != 0 and abs(float(node)) > 1 else 0.0
    if isinstance(node, sympy.Pow):
        b, e = _log10_size(node.args[0], symbol_digits), _log10_size(node.args[1], symbol_digits)
        if e > 7:  # the exponent alone is above 10**7
            return math.inf if b > 0 else 0.0
        exp_value = abs(float(node.args[1])) if node.args[1].is_Number else 10**e
        return b * exp_value
    return 0.0
