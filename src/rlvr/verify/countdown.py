"""The countdown verifier: does the answer expression reach the target with the given numbers?

The gold is JSON: ``{"target": 24, "numbers": [3, 4, 6, 1]}``. The answer is the
last ``<answer>`` block (or the last line) holding an arithmetic expression, possibly
written ``expr = target``. It is evaluated exactly with :mod:`rlvr.verify.arith`
(no ``eval``; ``44**19**35`` is refused in microseconds). Each given number may be
used at most once.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from fractions import Fraction

from rlvr.errors import Refused
from rlvr.types import Method, Status, Verdict
from rlvr.verify.arith import evaluate

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def _expression(completion: str) -> str | None:
    blocks = _ANSWER.findall(completion)
    if blocks:
        text = blocks[-1]
    else:
        lines = [ln for ln in completion.strip().splitlines() if ln.strip()]
        if not lines:
            return None
        text = lines[-1]
    text = text.strip().strip("$").strip()
    if "=" in text:  # "3*8 = 24": the expression is the left side
        text = text.split("=")[0]
    return text.strip() or None


def verify_countdown(completion: str, gold: str, timeout: float | None = None, **_: object) -> Verdict:
    """Verify a countdown answer (see the module docstring)."""
    try:
        spec = json.loads(gold)
        target, numbers = Fraction(spec["target"]), [int(x) for x in spec["numbers"]]
    except (ValueError, KeyError, TypeError):
        return Verdict(
            Status.BAD_GOLD,
            reason=f"gold must be JSON with target and numbers, got {gold[:60]!r}",
            gold=str(gold)[:200],
        )
    expr = _expression(completion)
    if expr is None or not re.search(r"\d", expr):
        return Verdict(Status.NO_ANSWER, reason="no expression found", gold=gold)
    if re.search(r"[^\d\s+\-*/().×÷]", expr):
        return Verdict(
            Status.NO_ANSWER, extracted=expr, reason="the answer is not a plain arithmetic expression", gold=gold
        )
    if "**" in expr:
        return Verdict(Status.WRONG, expr, Method.STRUCTURAL, "uses a power; only + - * / are allowed", gold)
    try:
        value = evaluate(expr)
    except ZeroDivisionError:
        return Verdict(Status.WRONG, expr, Method.NUMERIC, "division by zero", gold)
    except Refused as e:
        return Verdict(Status.NO_ANSWER, expr, reason=f"not evaluable: {e}", gold=gold)
    used = Counter(int(n) for n in re.findall(r"\d+", expr))
    extra = used - Counter(numbers)
    if extra:
        return Verdict(
            Status.WRONG,
            expr,
            Method.STRUCTURAL,
            f"uses numbers not available (or too often): {sorted(extra.elements())}",
            gold,
        )
    if value != target:
        return Verdict(Status.WRONG, expr, Method.NUMERIC, f"evaluates to {value}, not {target}", gold)
    return Verdict(Status.CORRECT, expr, Method.NUMERIC, f"reaches {target}", gold)
