"""A closed form's value, computed directly, with a bound on its error.

Comparing two answers that are numbers written as closed forms (``1 + 2i``, ``\\frac{3\\sqrt{3}}{4}``,
``11\\sqrt{2}``) needs their values. SymPy gets them by evaluating the parser's tree (``doit``) and
then ``N(x, 30)``: 100-450 us for one fresh span, most of an unequal verdict's time against such a
gold (a GRPO group is mostly unequal answers). :func:`closed_value` computes the same value from
the tree in one walk with mpmath at 200 bits, keeping a bound on the relative error of every node;
it answers only when that bound is far below what any comparison looks at (1e-30 relative), and
returns None otherwise (a sum that cancels to nothing or nearly, a huge power, a node it does not
know), leaving the value to SymPy. It knows numbers (integers, rationals), ``pi``, ``e``, ``i``,
sums, products and powers with a rational exponent, which is what the closed forms that answers
are written in are made of.

``tests/verify/math/test_numeric.py`` compares it with SymPy on generated trees.
"""

from __future__ import annotations

import cmath
from collections.abc import Mapping

import mpmath
import sympy

_CTX = mpmath.MPContext()  # ours: mpmath's global context is shared with every other user of it
_CTX.prec = 200
_U = 2.0 ** -(_CTX.prec - 4)  # the relative error of one operation, with room for complex ones
_MAX_REL = 1e-30  # answer only below this: comparisons look at 1e-15 at the finest
_MAX_EXP = 10_000  # a larger integer power is SymPy's (or the guards') business
_MAX_DENOMINATOR = 1_000
_LIMIT = 1e300  # beyond a double either way: SymPy decides
_HALF = sympy.Rational(1, 2)


class _Unsure(Exception):
    """The walk cannot vouch for a value (an unknown node, cancellation, a huge power)."""


def closed_value(x: sympy.Basic, point: Mapping[sympy.Basic, sympy.Rational] | None = None) -> complex | None:
    """The value of ``x`` as a complex double (its variables at ``point``: the random points at which
    two expressions are compared), or None when it cannot be vouched for here.

    Examples:
        >>> closed_value(sympy.Add(1, sympy.Mul(2, sympy.I, evaluate=False), evaluate=False))
        (1+2j)
        >>> closed_value(sympy.Symbol("x")) is None
        True
    """
    try:
        value, rel = _walk(x, point or {})
        out = complex(value)
    except (_Unsure, ZeroDivisionError, OverflowError, ValueError, RecursionError):
        return None
    if rel > _MAX_REL:
        return None
    size = abs(out)
    if not cmath.isfinite(out) or not 1 / _LIMIT < size < _LIMIT:
        return None
    return out


def _walk(x: sympy.Basic, point: Mapping[sympy.Basic, sympy.Rational]) -> tuple[mpmath.mpf | mpmath.mpc, float]:
    """(value, bound on its relative error)."""
    if x.is_Symbol:
        if (at := point.get(x)) is None:
            raise _Unsure
        x = at
    if x.is_Integer:
        n = int(x)
        return _CTX.mpf(n), (0.0 if abs(n) < 2**_CTX.prec else _U)
    if x.is_Rational:
        return _CTX.mpf(int(x.p)) / int(x.q), 2 * _U
    if x is sympy.pi:
        return _CTX.pi, _U
    if x is sympy.E:
        return _CTX.e, _U
    if x is sympy.I:
        return _CTX.mpc(0, 1), 0.0
    if isinstance(x, sympy.Add):
        terms = [_walk(a, point) for a in x.args]
        total = _CTX.fsum(v for v, _ in terms)
        size = abs(total)
        if not size:
            raise _Unsure  # cancelled to zero: exactly zero, or digits lost
        err = sum(abs(v) * r for v, r in terms) + _U * sum(abs(v) for v, _ in terms)
        return total, float(err / size) + _U
    if isinstance(x, sympy.Mul):
        value, rel = _CTX.mpf(1), 0.0
        for a in x.args:
            v, r = _walk(a, point)
            value *= v
            rel += r + _U
        return value, rel
    if isinstance(x, sympy.Pow):
        base, exp = x.args
        if not exp.is_Rational:
            raise _Unsure
        b, rb = _walk(base, point)
        if not b:
            if exp.is_positive:
                return _CTX.mpf(0), 0.0
            raise _Unsure  # 0 to a power <= 0: undefined (SymPy says zoo or nan)
        if exp.is_Integer:
            n = int(exp)
            if abs(n) > _MAX_EXP:
                raise _Unsure
            return b**n, abs(n) * (rb + _U) + _U
        if exp.q > _MAX_DENOMINATOR or abs(exp.p) > _MAX_EXP:
            raise _Unsure
        if isinstance(b, mpmath.mpc) and b.real < 0 and abs(b.imag) <= abs(b) * (rb + _U) * 1e6:
            raise _Unsure  # next to the branch cut: which side is the rounding's choice, not the value's
        if exp == _HALF:  # the commonest: sqrt, correctly rounded (principal branch for a negative base)
            return _CTX.sqrt(b), rb / 2 + 2 * _U
        # the principal branch, as SymPy's (-8)^(1/3) = 1 + sqrt(3) i; exp(e log b) adds |e log b| ulps
        e = abs(float(exp))
        rel = e * (rb + (abs(float(_CTX.log(abs(b)))) + 4) * _U) + 4 * _U
        return _CTX.power(b, _CTX.mpf(int(exp.p)) / int(exp.q)), rel
    raise _Unsure
