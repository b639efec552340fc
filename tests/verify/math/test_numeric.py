"""A closed form's value computed directly (rlvr.verify.math.numeric) is SymPy's value, or none."""

from __future__ import annotations

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.verify.math.numeric import closed_value

_ATOMS = st.sampled_from(
    [
        sympy.Integer(0),
        sympy.Integer(1),
        sympy.Integer(-1),
        sympy.Integer(2),
        sympy.Integer(-8),
        sympy.Integer(10**30),
        sympy.Integer(-(3**200)),
        sympy.Rational(1, 3),
        sympy.Rational(-7, 12),
        sympy.Rational(10**40, 3),
        sympy.pi,
        sympy.E,
        sympy.I,
    ]
) | st.integers(-50, 50).map(sympy.Integer)
_EXPONENTS = st.sampled_from(
    [sympy.Integer(n) for n in (-3, -1, 0, 2, 3, 7, 40)]
    + [sympy.Rational(p, q) for p, q in ((1, 2), (1, 3), (2, 3), (-1, 2), (5, 4), (-7, 6))]
)


def _trees(children: st.SearchStrategy[sympy.Basic]) -> st.SearchStrategy[sympy.Basic]:
    pairs = st.lists(children, min_size=2, max_size=3)
    return st.one_of(
        pairs.map(lambda xs: sympy.Add(*xs, evaluate=False)),
        pairs.map(lambda xs: sympy.Mul(*xs, evaluate=False)),
        st.tuples(children, _EXPONENTS).map(lambda be: sympy.Pow(*be, evaluate=False)),
    )


_EXPRS = st.recursive(_ATOMS, _trees, max_leaves=8)


def _sympys(x: sympy.Basic) -> complex | None:
    """What the comparison computed before: the tree evaluated, then 30 digits."""
    v = sympy.N(x.doit(), 30)
    if v.free_symbols or not v.is_number or v.has(sympy.zoo, sympy.nan):
        return None
    return complex(v)


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(_EXPRS)
def test_a_closed_forms_value_is_sympys_or_left_to_sympy(x: sympy.Basic) -> None:
    """Sums, products and powers of integers, rationals, pi, e and i (cancelling sums, huge and tiny
    values, negative bases under roots included): the very double SymPy gives, or None."""
    got = closed_value(x)
    if got is None:
        return
    want = _sympys(x)
    assert want is not None, (x, got)
    # the same double, up to residues far below what any comparison sees (a cancelled imaginary part
    # is 1e-61 here, 1e-43 there)
    assert abs(got - want) <= 1e-15 * abs(want), (x, got, want)


def test_it_answers_for_the_closed_forms_answers_are_written_in() -> None:
    """Not None where it matters: the spans a gold of MATH is most often (checked against SymPy above)."""
    half, third = sympy.Rational(1, 2), sympy.Rational(1, 3)
    forms = [
        sympy.Add(1, sympy.Mul(2, sympy.I, evaluate=False), evaluate=False),  # 1 + 2i
        sympy.Mul(11, sympy.Pow(2, half, evaluate=False), evaluate=False),  # 11 sqrt 2
        sympy.Mul(sympy.Pow(12, -1, evaluate=False), sympy.pi, evaluate=False),  # pi / 12
        sympy.Pow(-8, third, evaluate=False),  # the principal cube root, as SymPy's
        sympy.Add(3, sympy.Mul(-2, sympy.Pow(2, half, evaluate=False), evaluate=False), evaluate=False),
    ]
    assert all(closed_value(f) is not None for f in forms)
    assert closed_value(forms[3]) == complex(sympy.N(sympy.Pow(-8, third), 30))


def test_what_it_cannot_vouch_for_is_left_to_sympy() -> None:
    x = sympy.Symbol("x")
    sqrt2 = sympy.Pow(2, sympy.Rational(1, 2), evaluate=False)
    assert closed_value(x) is None  # a variable
    assert closed_value(sympy.sin(1)) is None  # a function it does not know
    assert closed_value(sympy.Add(sqrt2, sympy.Mul(-1, sqrt2, evaluate=False), evaluate=False)) is None  # 0
    big = sympy.Integer(10**40)
    assert closed_value(sympy.Add(big, 1, -big, evaluate=False)) is None  # digits lost to cancellation
    assert closed_value(sympy.Pow(0, -1, evaluate=False)) is None  # 1/0
    assert closed_value(sympy.Pow(2, 10**6, evaluate=False)) is None  # a power too large to trust here


def test_a_root_of_a_value_next_to_the_branch_cut_is_sympys_or_none() -> None:
    """((1 + sqrt(3) i) / 2)^3 is exactly -1; computed, its imaginary part is a residue whose sign the
    rounding picks, and a cube root's principal branch turns on that sign: the value is SymPy's (which
    evaluates the same way) or left to SymPy, never the other branch."""
    sqrt3 = sympy.Pow(3, sympy.Rational(1, 2), evaluate=False)
    for sign in (1, -1):  # w and its conjugate: the residues of their cubes have opposite signs
        w = sympy.Add(1, sympy.Mul(sign, sqrt3, sympy.I, evaluate=False), evaluate=False)
        base = sympy.Pow(sympy.Mul(w, sympy.Rational(1, 2), evaluate=False), 3, evaluate=False)
        root = sympy.Pow(base, sympy.Rational(1, 3), evaluate=False)
        got, want = closed_value(root), _sympys(root)
        assert want is not None and (got is None or abs(got - want) <= 1e-15 * abs(want)), (sign, got, want)


_X, _Y = sympy.symbols("x y")
_WITH_VARIABLES = st.recursive(_ATOMS | st.sampled_from([_X, _Y]), _trees, max_leaves=8)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_WITH_VARIABLES, st.sampled_from([{_X: sympy.Rational(17, 13), _Y: sympy.Rational(-29, 13)}, {_X: 4, _Y: 7}]))
def test_a_value_at_a_random_point_is_sympys_at_that_point_or_left_to_sympy(x: sympy.Basic, point: dict) -> None:
    """Where two expressions are compared (their values at random points), the tree's value with the
    point put in is SymPy's value of the expression rebuilt at the point."""
    from rlvr.verify.math.equivalence import _at, _numeric

    point = {k: sympy.sympify(v) for k, v in point.items()}
    got = closed_value(x, point)
    at = _at(x, point)
    if got is None or at is None:  # left to SymPy, or beyond what SymPy can evaluate there: nothing to hold
        return
    want = _numeric(at)
    assert want is not None and abs(got - want) <= 1e-15 * abs(want), (x, got, want)


def test_values_beyond_a_double_are_left_to_sympy() -> None:
    big, tiny = sympy.Pow(10, 400, evaluate=False), sympy.Pow(10, -400, evaluate=False)
    assert closed_value(big) is None and closed_value(tiny) is None
    assert closed_value(sympy.Mul(big, sympy.Pow(10, -399, evaluate=False), evaluate=False)) == 10
