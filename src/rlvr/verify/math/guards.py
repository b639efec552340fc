"""Refuse inputs that could hang a C-level computation or blow memory.

The watchdog in :mod:`rlvr.verify.timeout` interrupts Python code, not one long C
call such as ``9**(9**(9**9))`` in GMP. These checks run before any evaluation.
"""

from __future__ import annotations

import re

import sympy

from rlvr.errors import Refused

#: An answer span longer than this is compared as a string only.
MAX_SPAN_CHARS = 1_000
MAX_BRACE_DEPTH = 40
MAX_EXPONENT = 1_000
MAX_INT_DIGITS = 400
MAX_FACTORIAL = 200
MAX_NODES = 2_000

_STACKED_POWERS = re.compile(r"\^\s*\{?[^{}^]*\^\s*\{?[^{}^]*\^")


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
    if _STACKED_POWERS.search(s):
        raise Refused("a tower of three or more powers cannot be evaluated safely")
    if any(len(d) > MAX_INT_DIGITS for d in re.findall(r"\d+", s)):
        raise Refused(f"a number with more than {MAX_INT_DIGITS} digits")


def check_expr(expr: sympy.Basic) -> None:
    """Refuse parsed expressions whose evaluation could explode."""
    for n, node in enumerate(sympy.preorder_traversal(expr)):
        if n > MAX_NODES:
            raise Refused(f"expression has more than {MAX_NODES} nodes")
        if isinstance(node, sympy.Pow):
            base, exp = node.args
            if exp.is_Number and abs(exp) > MAX_EXPONENT and not (base.is_Number and abs(base) in (0, 1)):
                raise Refused(f"exponent {exp} exceeds {MAX_EXPONENT}")
            if exp.is_Pow and exp.args[0].is_Number and exp.args[1].is_Number:
                raise Refused("a tower of powers cannot be evaluated safely")
        elif isinstance(node, sympy.factorial | sympy.factorial2):
            arg = node.args[0]
            if arg.is_Number and arg > MAX_FACTORIAL:
                raise Refused(f"factorial of {arg} exceeds {MAX_FACTORIAL}!")
