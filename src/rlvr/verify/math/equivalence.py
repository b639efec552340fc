"""Decide whether two parsed answers are equal, and say how.

Order of tests, cheapest first: exact rationals; decimals against exact values to
6 significant digits (0.33 is not 1/3); structural SymPy equality; high-precision
numeric evaluation (closed forms); random-point evaluation to reject unequal
expressions fast, then ``simplify(a - b) == 0``. Equations are equal when their
``lhs - rhs`` differ by a non-zero constant factor; relations are compared as the
sets they define; tuples in order, solution lists as sets.
"""

from __future__ import annotations

import cmath
import random
import re
from functools import lru_cache
from typing import Any

import sympy

from rlvr.types import Method
from rlvr.verify.math import guards
from rlvr.verify.math.conventions import conventions
from rlvr.verify.math.numeric import closed_value
from rlvr.verify.math.parse import Alts, Expr, Items, Num, Power, Ratio, Residue, Text, Value

#: Relative tolerance when one side was written as a decimal (6 significant digits).
DECIMAL_RTOL = 1e-6
#: Relative tolerance for two exact closed forms evaluated to 30 digits.
EXACT_RTOL = 1e-20
_SAMPLES = 3
_PREC = 30


def _close(a: complex, b: complex, rtol: float) -> bool:
    if not (cmath.isfinite(a) and cmath.isfinite(b)):
        return a == b
    scale = max(abs(a), abs(b))
    return abs(a - b) <= rtol * scale if scale > 1e-12 else abs(a - b) <= 1e-12


def _numeric(x: sympy.Basic) -> complex | None:
    if isinstance(x, sympy.Rational):  # exact: the nearest double, as evaluating it would give
        try:
            return complex(int(x.p) / int(x.q))
        except OverflowError:
            pass
    return _evaluated(x)


@lru_cache(maxsize=4096)  # a gold's value is asked for once per completion of its group
def _evaluated(x: sympy.Basic) -> complex | None:
    if (direct := closed_value(x)) is not None:  # a closed form: no SymPy evaluation (rlvr.verify.math.numeric)
        return direct
    try:
        if _arithmetic(x):
            # the parser's tree is unevaluated: evaluated once, bottom up, it is a number or a small
            # closed form; evalf on the nested tree retries precision level by level (twenty nested
            # fractions: over 5 s, where this takes milliseconds). Only sums, products and powers:
            # a factorial or a binomial is evaluated numerically, never computed ((10^{10})!).
            x = x.doit()
        v = sympy.N(x, _PREC)
        if v.free_symbols or not v.is_number or v.has(sympy.zoo, sympy.nan):
            return None
        return complex(v)
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return None


def _arithmetic(x: sympy.Basic) -> bool:
    """Only sums, products and powers of numbers and constants (pi, e, i)."""
    return all(isinstance(n, sympy.Add | sympy.Mul | sympy.Pow) or n.is_Atom for n in sympy.preorder_traversal(x))


def _sym(v: Num) -> sympy.Rational:
    return sympy.Rational(v.value.numerator, v.value.denominator)


def _eq_num(a: Num, b: Num) -> bool:
    if a.value == b.value:
        return True
    if a.approx or b.approx:
        return _close(float(a.value), float(b.value), DECIMAL_RTOL)
    return False


_DISCRETE = (sympy.Sum, sympy.Product, sympy.factorial, sympy.binomial, sympy.floor, sympy.ceiling)


def _random_points(symbols: set[sympy.Symbol], seed: int, discrete: bool = False) -> list[dict[Any, Any]]:
    """Evaluation points: small integers for sums and factorials, awkward rationals otherwise."""
    rng = random.Random(seed)
    if discrete:
        return [{s: sympy.Integer(rng.randint(3, 9)) for s in symbols} for _ in range(_SAMPLES)]
    return [{s: sympy.Rational(rng.randint(11, 39), 13) for s in symbols} for _ in range(_SAMPLES)]


_UNDEFINED = (sympy.zoo, sympy.nan)
# what only doit() computes: an expression holding none of these is evaluated at a point by
# xreplace, which rebuilds it with the values in (subs + doit cost 3-8x more, most of an unequal
# verdict's time against a symbolic gold)
_HELD = (
    sympy.Integral,
    sympy.Derivative,
    sympy.Sum,
    sympy.Product,
    sympy.Limit,
    sympy.Subs,
    sympy.UnevaluatedExpr,
)


def _at(expr: sympy.Basic, point: dict[Any, Any]) -> sympy.Basic | None:
    """``expr`` at ``point``, evaluated; None where SymPy fails on it (a root of a huge negative integer
    sends it factoring, and its factoring raises ValueError on numbers past its reach)."""
    try:
        return expr.xreplace(point) if not expr.has(*_HELD) else expr.subs(point).doit()
    except (ValueError, TypeError, ArithmeticError):
        return None


def _value_at(expr: sympy.Basic, point: dict[Any, Any]) -> complex | None:
    """The value of ``expr`` at ``point``: from its tree directly when that can vouch for it (a
    polynomial at a rational point: no SymPy rebuild), else ``expr`` evaluated there by SymPy."""
    if (direct := closed_value(expr, point)) is not None:
        return direct
    at = _at(expr, point)
    return _numeric(at) if at is not None else None


def _eq_expr(a: sympy.Basic, b: sympy.Basic, approx: bool) -> tuple[bool, Method]:
    if a.has(*_UNDEFINED) or b.has(*_UNDEFINED):  # 1/0 equals nothing, not even another 1/0
        return False, Method.STRUCTURAL
    if a == b:
        return True, Method.STRUCTURAL
    if isinstance(a, sympy.Set) or isinstance(b, sympy.Set):
        return _eq_sets(a, b), Method.STRUCTURAL
    if isinstance(a, sympy.MatrixBase) or isinstance(b, sympy.MatrixBase):
        if not (isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase)) or a.shape != b.shape:
            return False, Method.STRUCTURAL
        return all(_eq_expr(x, y, approx)[0] for x, y in zip(a, b)), Method.STRUCTURAL
    if isinstance(a, sympy.Equality) and isinstance(b, sympy.Equality):
        return _eq_equations(a, b), Method.SYMBOLIC
    if isinstance(a, sympy.Equality) or isinstance(b, sympy.Equality):
        return False, Method.STRUCTURAL
    if isinstance(a, sympy.logic.boolalg.Boolean) or isinstance(b, sympy.logic.boolalg.Boolean):
        return False, Method.STRUCTURAL
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return False, Method.STRUCTURAL
    syms = a.free_symbols | b.free_symbols
    if syms and (guards.too_big_at_points(a) or guards.too_big_at_points(b)):
        return False, Method.STRUCTURAL  # not equal as written, and too large to evaluate at points
    if not syms:
        va, vb = _numeric(a), _numeric(b)
        if va is None or vb is None:
            return False, Method.NUMERIC
        return _close(va, vb, DECIMAL_RTOL if approx else 1e-15), Method.NUMERIC
    discrete = a.has(*_DISCRETE) or b.has(*_DISCRETE)
    agreed = 0
    for point in _random_points(syms, seed=len(syms), discrete=discrete):
        va, vb = _value_at(a, point), _value_at(b, point)
        if va is None or vb is None:
            continue
        if not _close(va, vb, 1e-9):
            return False, Method.NUMERIC
        agreed += 1
    if agreed == _SAMPLES:
        # Equal at every random point: an identity with overwhelming probability, and
        # far cheaper than simplify() (which we keep for points that did not evaluate).
        return True, Method.NUMERIC
    try:
        return sympy.simplify(a - b) == 0, Method.SYMBOLIC
    except (TypeError, ValueError, ArithmeticError, AttributeError, RecursionError):
        return False, Method.SYMBOLIC


def _eq_equations(a: sympy.Equality, b: sympy.Equality) -> bool:
    da, db = a.lhs - a.rhs, b.lhs - b.rhs
    syms = da.free_symbols | db.free_symbols
    if not syms:
        return False
    ratios = []
    discrete = da.has(*_DISCRETE) or db.has(*_DISCRETE)
    for p in _random_points(syms, seed=3, discrete=discrete):
        va, vb = _value_at(da, p), _value_at(db, p)
        if va is None or vb is None:
            continue
        if abs(vb) < 1e-12:
            if abs(va) > 1e-12:
                return False
            continue
        ratios.append(va / vb)
    if not ratios:
        return False
    r0 = ratios[0]
    return abs(r0) > 1e-12 and all(_close(r, r0, 1e-9) for r in ratios)


def _eq_sets(a: sympy.Basic, b: sympy.Basic) -> bool:
    if not (isinstance(a, sympy.Set) and isinstance(b, sympy.Set)):
        return False
    if isinstance(a, sympy.Interval) and isinstance(b, sympy.Interval):
        return (
            a.left_open == b.left_open
            and a.right_open == b.right_open
            and _eq_expr(a.start, b.start, False)[0]
            and _eq_expr(a.end, b.end, False)[0]
        )
    if type(a) is not type(b):
        try:
            return bool(a.symmetric_difference(b).is_empty)
        except Exception:  # SymPy's set algebra raises assorted errors on odd sets
            return False
    if isinstance(a, sympy.Union | sympy.FiniteSet):
        return len(a.args) == len(b.args) and all(
            any(_eq_sets(x, y) if isinstance(x, sympy.Set) else _eq_expr(x, y, False)[0] for y in b.args)
            for x in a.args
        )
    return a == b


def _as_expr(v: Value) -> tuple[sympy.Basic, bool] | None:
    if isinstance(v, Num):
        return _sym(v), v.approx
    if isinstance(v, Expr):
        return v.expr, False
    return None


def unevaluated(g_alts: Alts, p_alts: Alts, span: str) -> bool:
    """Whether the prediction (read as ``p_alts`` from ``span``) is a computation left undone.

    Against a gold that is a number, an answer such as ``4 - 1``, ``2^{10}`` or ``12/2`` (numbers and
    operations, no unknowns, a rational value; a fraction whose value is a whole number) restates the
    computation the problem asked for: SymPy finds it equal to the gold, so a policy that copies
    the question's expression into its answer would be paid for every problem without doing any
    (seen: SmolLM2-135M on reasoning-gym's ``chain_sum`` learned it within 400 GRPO steps).
    Reduced fractions, decimals, percentages and scientific notation are numbers and are not
    affected; neither are golds that are expressions (``2\\sqrt{2}``), whose predictions are
    compared by value as before.
    """
    if not g_alts or not all(isinstance(g, Num) for g in g_alts) or not p_alts:
        return False
    if all(isinstance(p, Num) for p in p_alts):  # parsing evaluated a/b: read what was written
        m = _FRACTION.fullmatch(span.strip())
        return (
            m is not None
            and int(m.group(1) or m.group(2)) not in (0, 1)
            and all(p.value.denominator == 1 for p in p_alts if isinstance(p, Num))
        )
    return all(
        isinstance(p, Expr) and isinstance(p.expr, sympy.Expr) and not p.expr.free_symbols and bool(p.expr.is_rational)
        for p in p_alts
    )


_FRACTION = re.compile(r"[-+]?\s*(?:\d+\s*/\s*(\d+)|\\[dt]?frac\s*\{\s*[-+]?\d+\s*\}\s*\{\s*(\d+)\s*\})")


def equal_values(g: Value, p: Value) -> tuple[bool, Method]:
    """Compare one reading of the gold with one reading of the prediction."""
    if isinstance(g, Items) and len(g.items) == 1:
        return equal_alts(g.items[0], (p,))
    if isinstance(p, Items) and len(p.items) == 1:
        return equal_alts((g,), p.items[0])
    if isinstance(g, Num) and isinstance(p, Num):
        return _eq_num(g, p), Method.NUMERIC
    if isinstance(g, Ratio | Residue) or isinstance(p, Ratio | Residue):
        return _eq_convention(g, p), Method.STRUCTURAL
    if isinstance(g, Power) or isinstance(p, Power):  # never evaluated: equal powers have equal parts
        return g == p, Method.STRUCTURAL
    if isinstance(g, Text) or isinstance(p, Text):
        if isinstance(g, Text) and isinstance(p, Text):
            return g.text == p.text, Method.STRING
        return False, Method.STRING
    if isinstance(g, Items) and isinstance(p, Items):
        return _eq_items(g, p), Method.STRUCTURAL
    for many, one in ((g, p), (p, g)):
        if isinstance(many, Items) and isinstance(one, Expr) and isinstance(one.expr, sympy.FiniteSet):
            listed = Items(tuple((Expr(x),) for x in one.expr.args), ordered=False)  # {1} \cup {2} is {1, 2}
            return _eq_items(many, listed), Method.STRUCTURAL
        if isinstance(many, Items) and not many.ordered:
            # {a, a'} equals b when every listed form is b ("15 39/40, or 639/40")
            return all(equal_alts(x, (one,))[0] for x in many.items), Method.STRUCTURAL
    for items, other in ((g, p), (p, g)):
        if isinstance(items, Items) and items.ordered and isinstance(other, Expr):
            return _eq_vector(items, other), Method.STRUCTURAL
    if isinstance(g, Items) or isinstance(p, Items):
        return False, Method.STRUCTURAL
    ga, pa = _as_expr(g), _as_expr(p)
    if ga is None or pa is None:
        return False, Method.STRUCTURAL
    return _eq_expr(ga[0], pa[0], ga[1] or pa[1])


def _eq_vector(items: Items, matrix: Expr) -> bool:
    """A tuple against a one-column or one-row matrix: a vector written two ways, entry by entry."""
    m = matrix.expr
    if not isinstance(m, sympy.MatrixBase) or 1 not in m.shape or len(m) != len(items.items):
        return False
    return all(equal_alts(entry, (Expr(cell),))[0] for entry, cell in zip(items.items, m))


def _eq_convention(g: Value, p: Value) -> bool:
    """A ratio or a residue class against a value (:mod:`rlvr.verify.math.conventions`)."""
    chosen = conventions()
    if isinstance(g, Ratio) and isinstance(p, Ratio):
        return not g.clock and g.value == p.value  # a time as a gold is read as written (its Text)
    if isinstance(g, Residue) and isinstance(p, Residue):
        return g == p
    for left, right in ((g, p), (p, g)):
        if isinstance(left, Ratio) and isinstance(right, Num):
            return chosen.ratio_as_fraction and not left.clock and _eq_num(Num(left.value), right)
        if isinstance(left, Residue) and isinstance(right, Num):
            v = right.value
            return chosen.remainder_as_residue and v.denominator == 1 and 0 <= v < left.modulus and v == left.residue
    return False


def _eq_items(g: Items, p: Items) -> bool:
    if g.ordered or p.ordered:
        return len(g.items) == len(p.items) and all(equal_alts(x, y)[0] for x, y in zip(g.items, p.items))
    # Solution lists compare as sets: each side's every element is found in the other.
    return all(any(equal_alts(x, y)[0] for y in p.items) for x in g.items) and all(
        any(equal_alts(x, y)[0] for x in g.items) for y in p.items
    )


def equal_alts(gold: Alts, pred: Alts) -> tuple[bool, Method]:
    """True when some reading of the gold equals some reading of the prediction."""
    method = Method.NONE
    for g in gold:
        for p in pred:
            ok, m = equal_values(g, p)
            if ok:
                return True, m
            if method is Method.NONE:
                method = m
    return False, method
