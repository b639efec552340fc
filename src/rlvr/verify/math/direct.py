"""The commonest symbolic answers built node by node, as the LaTeX parser would build them.

latex2sympy2_extended parses with ANTLR's Python runtime: a millisecond or more for a short
symbolic span (``\\frac{5\\pi^2}{4}``: 2 ms), most of the time a real solution's verdict takes when
its answer is one. Two shapes make up most of those spans, and each is built here directly, node
by node, with the converter's own rules (unevaluated products and powers, flattening as its
``add_flat`` / ``mul_flat`` flatten, a difference as ``-1`` times the term, a number subtracted or
negated as its negative, a fraction of integers as a ``Rational``):

* :func:`polynomial`: integer coefficients, one-letter variables, integer powers (``2x^2 - 3xy + 1``);
* :func:`closed_form`: integers (also in a base, ``52_8``), ``\\pi``, ``\\sqrt{...}``,
  ``\\frac{...}{...}``, powers, and the sums, differences, products and quotients of them
  (``3 + 2\\sqrt{2}``, ``-\\frac{\\pi}{6}``).

and one SymPy object built directly as SymPy would build it:

* :func:`interval`: ``sympy.Interval(a, b, ...)`` whose endpoints are numbers in order, the order
  decided from their values (SymPy asks its assumptions system: 35 ms for
  ``[\\frac{\\pi^2}{8}, \\frac{5\\pi^2}{4}]`` in a fresh worker, most of an interval gold's reading).
* :func:`union_of`: ``sympy.Union`` of such intervals that neither overlap nor touch at a closed end
  (``(0,9) \\cup (9,36)``: 1.6 ms of SymPy's set simplification in a fresh worker).

Each gives the very SymPy object the parser (or SymPy) gives, node for node (the unevaluated
structure matters to the "restated computation" rules); a builder returns None for a span it does
not take, and the span goes to the parser. ``tests/verify/math/test_parse_stages.py`` compares
them with the parser on generated spans and MATH-500's answers, and :func:`interval` with
``sympy.Interval`` on every pair of a set of awkward endpoints.
"""

from __future__ import annotations

import itertools
import math
import re

import sympy
from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
from sympy.core.basic import Basic

from rlvr.verify.math.numeric import closed_value

_POLY_TERM = re.compile(r"([+-]?)(\d*)((?:[a-cf-zA-CF-HJ-Z](?:\^(?:\d|\{\d+\}))?)*)")
_POLY_FACTOR = re.compile(r"([a-zA-Z])(?:\^\{?(\d+)\}?)?")
# Letter runs the parser's lexer reads as words, not products (found by parsing
# every run of up to three letters both ways).
_POLY_WORDS = re.compile(r"or|tr|inf|lcm|pct")


def polynomial(s: str) -> sympy.Basic | None:
    """``2x^2 - 3xy + 1``: integer coefficients, one-letter variables, integer powers.

    The commonest symbolic gold and the slowest for the LaTeX parser (full-context
    prediction on every ``x^k +``). Spans of numbers alone, and the letters the parser
    reads otherwise (``d`` starts a differential, ``e`` is Euler's number, ``I`` the
    imaginary unit) and runs of more than three letters (words) go to the parser.

    Examples:
        >>> sympy.srepr(polynomial("3x^2 - 1"))
        "Add(Mul(Integer(3), Pow(Symbol('x'), Integer(2))), Integer(-1))"
    """
    if not any(c.isalpha() for c in s) or re.search(r"\d\s+\d", s):
        return None
    text = s.replace(" ", "")
    terms: list[sympy.Basic] = []
    pos = 0
    while pos < len(text):
        m = _POLY_TERM.match(text, pos)
        sign, digits, letters = m.groups() if m else ("", "", "")
        if not m or not (digits or letters) or (terms and not sign):
            return None
        if len(digits) > 1 and digits.startswith("0"):
            return None
        factors = _POLY_FACTOR.findall(letters)
        if len(factors) > 3 or _POLY_WORDS.search(letters):
            return None  # a word, or what the lexer reads as one
        parts: list[sympy.Basic] = [sympy.Integer(int(digits))] if digits else []
        for v, k in factors:
            sym = sympy.Symbol(v.lower())
            parts.append(sympy.Pow(sym, sympy.Integer(int(k)), evaluate=False) if k else sym)
        term = parts[0] if len(parts) == 1 else sympy.Mul(*parts, evaluate=False)
        if sign == "-":
            if isinstance(term, sympy.Number):
                term = -term
            else:
                args = term.args if isinstance(term, sympy.Mul) else (term,)
                term = sympy.Mul(sympy.Integer(-1), *args, evaluate=False)
        terms.append(term)
        pos = m.end()
    return terms[0] if len(terms) == 1 else sympy.Add(*terms, evaluate=False)


_POLY_QUOTIENT = re.compile(r"\\frac\{([^{}\\]+)\}\{([1-9]\d*)\}")
_POLY_PRODUCT = re.compile(r"\(([^()\\]+)\)\(([^()\\]+)\)")


def polynomial_quotient_or_product(text: str) -> sympy.Basic | None:
    """``\\frac{11+9a}{20}`` (a polynomial over an integer) and ``(a+5)(b+2)`` (two sums multiplied),
    from latex2sympy2_extended's normalised text, built as the parser builds them: an unevaluated
    product of the numerator and the denominator's ``Pow(n, -1)``, or of the two sums. The polynomials are
    :func:`polynomial`'s; anything else goes to the parser.

    Examples:
        >>> sympy.srepr(polynomial_quotient_or_product(r"\\frac{3a}{4}"))
        "Mul(Pow(Integer(4), Integer(-1)), Mul(Integer(3), Symbol('a')))"
    """
    if m := _POLY_QUOTIENT.fullmatch(text.strip()):
        top = polynomial(m.group(1))
        if top is None:
            return None
        below = sympy.Pow(sympy.Integer(int(m.group(2))), sympy.Integer(-1), evaluate=False)
        return sympy.Mul(top, below, evaluate=False)
    if m := _POLY_PRODUCT.fullmatch(text.strip()):
        left, right = polynomial(m.group(1)), polynomial(m.group(2))
        if not (isinstance(left, sympy.Add) and isinstance(right, sympy.Add)):
            return None  # a monomial factor: the parser flattens it into the product
        return sympy.Mul(left, right, evaluate=False)
    return None


_TRIG_OF_LETTER = re.compile(r"\\(sin|cos|tan|cot|sec|csc)\s*([a-df-hj-z])")


def trig_of_letter(text: str) -> sympy.Basic | None:
    """``\\cot x``: a trigonometric function of one lower-case letter (not ``e`` or ``i``, which the
    parser reads as constants), as the parser builds it: the SymPy function applied to the symbol.

    Examples:
        >>> trig_of_letter(r"\\cot x")
        cot(x)
    """
    if m := _TRIG_OF_LETTER.fullmatch(text.strip()):
        return getattr(sympy, m.group(1))(sympy.Symbol(m.group(2)))
    return None


# The tokens of a closed form, after latex2sympy2_extended's normalisation (\dfrac -> \frac,
# \sqrt2 -> \sqrt{2}). A digit after an unbraced power is refused below (the parser reads ``x^12``
# as ``x^1`` times 2), as are digits apart (``2 3``) and everything not listed.
_TOKEN = re.compile(r"\s*(?:(\d+)|\\(frac|sqrt|pi|cdot|times)(?![a-zA-Z])|([-+^{}/_]))")
_FLAT = _Latex2Sympy()  # add_flat / mul_flat: the converter's own flattening, which reads no state


class _Refused(Exception):
    """A shape this builder does not take: the span goes to the parser."""


class _Reader:
    """Recursive descent over the parser's grammar for the shapes above (``additive`` > ``mp`` >
    ``unary`` > a list of ``exp`` multiplied implicitly > ``comp``), converting as the converter's
    ``convert_add`` / ``convert_mp`` / ``convert_unary`` / ``convert_postfix_list`` /
    ``convert_exp`` / ``convert_frac`` / ``FUNC_SQRT`` do."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, kind: str, text: str | None = None) -> str:
        k, t = self.peek()
        if k != kind or (text is not None and t != text):
            raise _Refused
        self.at += 1
        return t

    def additive(self) -> sympy.Basic:
        lh = self.mp()
        while self.peek() in (("op", "+"), ("op", "-")):
            sub = self.take("op") == "-"
            rh = self.mp()
            if sub:
                rh = -rh if rh.func.is_Number else _FLAT.mul_flat(-1, rh)
            lh = _FLAT.add_flat(lh, rh)
        return lh

    def mp(self) -> sympy.Basic:
        lh = self.unary()
        while (nxt := self.peek()) in (("cmd", "cdot"), ("cmd", "times"), ("op", "/")):
            self.at += 1
            rh = self.unary()
            if nxt[1] != "/":
                lh = _FLAT.mul_flat(lh, rh)
            elif lh.is_Integer and rh.is_Integer:
                lh = sympy.Rational(lh, rh)
            else:
                lh = sympy.Mul(lh, sympy.Pow(rh, -1, evaluate=False), evaluate=False)
        return lh

    def unary(self) -> sympy.Basic:
        if self.peek() == ("op", "+"):
            self.at += 1
            return self.unary()
        if self.peek() == ("op", "-"):
            self.at += 1
            inner = self.unary()
            return -inner if inner.func.is_Number else _FLAT.mul_flat(-1, inner)
        factors = [self.exp()]
        while self.peek()[0] in ("num", "cmd") and self.peek()[1] not in ("cdot", "times"):
            if factors and self.peek()[0] == "num" and self._ends_in_number(factors[-1]):
                raise _Refused  # digits apart ("2 3"): the lexer's business, not ours
            factors.append(self.exp())
        return self._postfix_list(factors)

    @staticmethod
    def _ends_in_number(expr: sympy.Basic) -> bool:
        return bool(expr.is_Number)

    def _postfix_list(self, factors: list[sympy.Basic]) -> sympy.Basic:
        res = factors[0]
        if len(factors) == 1:
            return res
        rh = self._postfix_list(factors[1:])
        if res.is_Integer and rh.is_Rational and rh.p > 0 and rh.q > 0:  # a mixed number, 2 \frac{1}{2}
            return sympy.Rational(res * rh.q - rh.p if res < 0 else res * rh.q + rh.p, rh.q)
        return _FLAT.mul_flat(res, rh)

    def exp(self) -> sympy.Basic:
        base = self.comp()
        while self.peek() == ("op", "^"):
            self.at += 1
            if self.peek() == ("op", "{"):
                self.at += 1
                exponent = self.additive()
                self.take("op", "}")
            else:
                digits = self.take("num")
                if len(digits) != 1:
                    raise _Refused  # x^12 is x^1 times 2 to the parser
                exponent = sympy.Integer(int(digits))
            base = sympy.Pow(base, exponent, evaluate=False)
        return base

    def comp(self) -> sympy.Basic:
        kind, text = self.peek()
        if kind == "num":
            self.at += 1
            if self.peek() == ("op", "_"):  # a base, 52_8 or 4210_{5}: the parser keeps the digits
                self.at += 1
                if self.peek() == ("op", "{"):
                    self._braced()
                elif len(self.take("num")) != 1:
                    raise _Refused
            return sympy.Integer(int(text))
        if (kind, text) == ("cmd", "pi"):
            self.at += 1
            return sympy.pi
        if (kind, text) == ("cmd", "sqrt"):
            self.at += 1
            return sympy.Pow(self._braced(), sympy.S.Half, evaluate=False)
        if (kind, text) == ("cmd", "frac"):
            self.at += 1
            top, bot = self._braced(), self._braced()
            if top.is_Integer and bot.is_Integer:
                return sympy.Rational(top, bot)
            return sympy.Mul(top, sympy.Pow(bot, -1, evaluate=False), evaluate=False)
        raise _Refused

    def _braced(self) -> sympy.Basic:
        self.take("op", "{")
        inner = self.additive()
        self.take("op", "}")
        return inner


def closed_form(text: str) -> sympy.Basic | None:
    """``3 + 2\\sqrt{2}``, ``-\\frac{\\pi}{6}``, ``\\frac{5\\pi^2}{4}``: integers, ``\\pi``, square
    roots, fractions, powers and their arithmetic, from latex2sympy2_extended's normalised text.

    Examples:
        >>> sympy.srepr(closed_form(r"2\\sqrt{5}"))
        'Mul(Integer(2), Pow(Integer(5), Rational(1, 2)))'
        >>> closed_form(r"\\sqrt[3]{2}") is None  # not a shape of this builder: the parser's
        True
    """
    if not ("_" in text or ("\\" in text and ("\\pi" in text or "\\sqrt" in text or "\\frac" in text))):
        return None  # numbers alone take the number path; letters, the polynomial's or the parser's
    tokens: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        num, cmd, op = m.groups()
        if num is not None and len(num) > 1 and num.startswith("0"):
            return None  # a leading zero
        tokens.append(("num", num) if num is not None else ("cmd", cmd) if cmd is not None else ("op", op))
        pos = m.end()
    if re.search(r"\d\s+\d", text):
        return None
    reader = _Reader(tokens)
    try:
        expr = reader.additive()
        reader.take("end")
    except (_Refused, ZeroDivisionError):
        return None
    return expr


_ORDER_MARGIN = 1e-20  # relative: endpoints closer than this are left to SymPy (they may be equal)


def _value(x: sympy.Basic) -> float | None:
    """An endpoint's value when it is a real number (inf for oo), else None."""
    if x is sympy.S.Infinity or x is sympy.S.NegativeInfinity:
        return math.inf if x is sympy.S.Infinity else -math.inf
    if not isinstance(x, sympy.Expr) or not x.is_number:
        return None
    if not x.is_Rational and (direct := closed_value(x)) is not None and direct.imag == 0:
        return direct.real  # the closed form's value from its tree (numeric.py), as evalf would round it
    v = x if x.is_Rational else x.evalf(30)
    if not isinstance(v, sympy.Rational | sympy.Float):
        return None  # complex, or not evaluated
    try:
        return float(v)
    except OverflowError:  # beyond a float: SymPy decides
        return None


def _order(a: sympy.Basic, b: sympy.Basic) -> int | None:
    """-1 when ``a < b`` and 1 when ``a > b`` is plain from their values (rationals compared exactly,
    other numbers at 30 digits, never two that may be equal); None otherwise (equal, too close to
    tell, not real numbers)."""
    va, vb = _value(a), _value(b)
    if va is None or vb is None:
        return None
    if a.is_Rational and b.is_Rational:
        return -1 if a < b else 1 if b < a else None
    if math.isinf(va) or math.isinf(vb):
        return -1 if va < vb else 1 if vb < va else None
    margin = _ORDER_MARGIN * max(abs(va), abs(vb), 1.0)
    return -1 if vb - va > margin else 1 if va - vb > margin else None


def interval(a: sympy.Basic, b: sympy.Basic, left_open: bool = False, right_open: bool = False) -> sympy.Basic:
    """``sympy.Interval(a, b, left_open, right_open)``, built directly when ``a < b`` (or ``b < a``:
    empty) is plain from their values (rationals compared exactly, other numbers at 30 digits, never
    two that may be equal); otherwise SymPy's own constructor decides (a point, symbols, complex).

    Examples:
        >>> interval(sympy.Integer(-1), sympy.oo, left_open=True)
        Interval.open(-1, oo)
    """
    order = _order(a, b)
    if order == 1:  # (3, \frac{\pi}{2}): no real number lies between
        return sympy.S.EmptySet
    if order != -1:
        return sympy.Interval(a, b, left_open=left_open, right_open=right_open)
    lo, hi = left_open or a is sympy.S.NegativeInfinity, right_open or b is sympy.S.Infinity
    return Basic.__new__(sympy.Interval, a, b, sympy.true if lo else sympy.false, sympy.true if hi else sympy.false)


def _apart(left: sympy.Interval, right: sympy.Interval) -> bool | None:
    """Whether ``left`` ends before ``right`` starts with nothing to merge (or they meet at a point
    both leave out); None when their values cannot tell."""
    if (order := _order(left.end, right.start)) is not None:
        return order < 0
    if left.end == right.start and _value(left.end) is not None:  # one number: apart if both leave it out
        return bool(left.right_open and right.left_open)
    return None


def union_of(*sets: sympy.Basic) -> sympy.Basic:
    """``sympy.Union(*sets)``, built directly when the sets are intervals with numeric endpoints that,
    in order, stand apart (SymPy's simplification would leave them as they are); otherwise SymPy's.

    Examples:
        >>> two, nine = sympy.Integer(2), sympy.Integer(9)
        >>> union_of(interval(nine, sympy.oo, True), interval(-sympy.oo, two, right_open=True))
        Union(Interval.open(-oo, 2), Interval.open(9, oo))
    """
    intervals = [x for x in sets if isinstance(x, sympy.Interval)]
    if len(sets) < 2 or len(intervals) < len(sets):
        return sympy.Union(*sets)
    starts = [_value(x.start) for x in intervals]
    if any(v is None for v in starts):
        return sympy.Union(*sets)
    chain = [x for _, _, x in sorted((v or 0.0, k, x) for k, (v, x) in enumerate(zip(starts, intervals, strict=True)))]
    if all(_apart(a, b) for a, b in itertools.pairwise(chain)):
        return sympy.Union(*chain, evaluate=False)
    return sympy.Union(*sets)
