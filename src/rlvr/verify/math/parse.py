"""Turn a normalised answer span into values that can be compared.

A span may have several readings, so parsing returns a tuple of alternatives:
``(1,2)`` is both an ordered pair and an open interval; ``50%`` is both 50 and
1/2; ``x = 4`` is both the value 4 and the equation. Equality holds when some
reading of the gold equals some reading of the prediction (see
:mod:`rlvr.verify.math.equivalence`). LaTeX goes through latex2sympy2_extended (the
parser math-verify builds on); plain numbers take a fast path that never reaches it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy
from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
from latex2sympy2_extended.math_normalization import NormalizationConfig, normalize_latex

from rlvr.errors import Refused
from rlvr.verify.math import guards
from rlvr.verify.math.direct import (
    closed_form,
    interval,
    polynomial,
    polynomial_quotient_or_product,
    trig_of_letter,
    union_of,
)
from rlvr.verify.math.forms import labelled_parts
from rlvr.verify.math.normalize import PLAIN_NUMBER, normalize, strip_units, unwrap_text
from rlvr.verify.math.quantities import compound_quantity
from rlvr.verify.math.text_answers import text_answer
from rlvr.verify.math.words import parse_number_words


@dataclass(frozen=True)
class Num:
    """An exact rational; ``approx`` when it was written as a decimal."""

    value: Fraction
    approx: bool = False


@dataclass(frozen=True)
class Expr:
    """Any SymPy object: expression, relation, set, matrix."""

    expr: sympy.Basic


@dataclass(frozen=True)
class Text:
    """A textual answer, compared as a normalised string.

    ``raw`` marks the last resort: a span nothing else could read (compared as a
    string only; a gold that is only raw and malformed is a bad gold).
    """

    text: str
    raw: bool = False


@dataclass(frozen=True)
class Items:
    """Several answers: an ordered tuple, or an unordered list/set of solutions."""

    items: tuple[tuple[Value, ...], ...]
    ordered: bool


@dataclass(frozen=True)
class Power:
    """An integer power too large to evaluate, ``base ** exp``, kept by its parts: ``base`` is not
    itself a perfect power, so equal powers have equal parts (``100^{5}`` is ``Power(10, 10)``)."""

    base: int
    exp: int


@dataclass(frozen=True)
class Ratio:
    """``a:b``, compared with another ratio by its value (``6:4`` is ``3:2``) and with a number only
    under the ``ratio_as_fraction`` convention (:mod:`rlvr.verify.math.conventions`). ``clock``: it
    has a time's shape (``7:30``): as a gold it is then read as written, never as a ratio."""

    value: Fraction
    clock: bool = False


@dataclass(frozen=True)
class Residue:
    """``x \\equiv a \\pmod{m}``: the residue class of ``a`` modulo ``m`` (``residue`` in ``[0, m)``)."""

    residue: int
    modulus: int


Value = Num | Expr | Text | Items | Power | Ratio | Residue
Alts = tuple[Value, ...]

_L2S_CONFIG = NormalizationConfig(
    basic_latex=True, units=False, malformed_operators=True, nits=False, boxed="none", equations=False
)
_OPEN = "([{"
_CLOSE = ")]}"


def split_top(s: str, seps: tuple[str, ...]) -> list[str]:
    """Split at separators that are outside every bracket (``\\{`` counts as one)."""
    if not any(sep in s for sep in seps):  # nothing to split at (most calls): no walk through the span
        return [s.strip()]
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0:
            for sep in seps:
                if s.startswith(sep, i):
                    parts.append(s[start:i])
                    start = i + len(sep)
                    i = start - 1
                    break
        i += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


def _matching_close(s: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(s)):
        if s[j] in _OPEN:
            depth += 1
        elif s[j] in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return -1


_DEC = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)$")
_FRAC_PLAIN = re.compile(r"^([-+]?\d+)\s*/\s*(\d+)$")
_FRAC_LATEX = re.compile(r"^([-+]?)\\frac\s*\{?\s*(\d+)\s*\}?\s*\{?\s*(\d+)\s*\}?$")
_MIXED = re.compile(r"^([-+]?)(\d+)\s*\\frac\s*\{?\s*(\d+)\s*\}?\s*\{?\s*(\d+)\s*\}?$")
_SCI = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|\*|x)\s*10\s*\^\s*\{?\s*([-+]?\d+)\s*\}?$")
_E_NOTATION = re.compile(r"^([-+]?\d+(?:\.\d+)?)[eE]([-+]?\d+)$")


_INFINITY = re.compile(r"^([-+]?)\s*\\infty$")


_MIXED_PLAIN = re.compile(r"^([-+]?)(\d+)\s+(\d+)\s*/\s*(\d+)$")


def parse_number(s: str) -> Num | None:
    """The fast path: plain integers, decimals, fractions, mixed ("2 1/2") and scientific numbers."""
    if (m := _MIXED_PLAIN.match(s.strip())) and int(m.group(4)) and int(m.group(3)) < int(m.group(4)):
        v = int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4)))
        return Num(-v if m.group(1) == "-" else v)
    s = s.strip().replace(" ", "")
    if _DEC.match(s):
        return Num(Fraction(s), approx="." in s and not re.match(r"^[-+]?\d+\.0*$", s))
    if m := _FRAC_PLAIN.match(s):
        return Num(Fraction(int(m.group(1)), int(m.group(2)))) if int(m.group(2)) else None
    if m := _FRAC_LATEX.match(s):
        den = int(m.group(3))
        return Num(Fraction(int(m.group(2)), den) * (-1 if m.group(1) == "-" else 1)) if den else None
    if m := _MIXED.match(s):
        den = int(m.group(4))
        if not den:
            return None
        v = int(m.group(2)) + Fraction(int(m.group(3)), den)
        return Num(-v if m.group(1) == "-" else v)
    for pat in (_SCI, _E_NOTATION):
        if (m := pat.match(s)) and abs(int(m.group(2))) <= guards.MAX_EXPONENT:
            return Num(Fraction(m.group(1)) * Fraction(10) ** int(m.group(2)), approx="." in m.group(1))
    return None


_IMAG = sympy.Symbol("i")
# what binds a variable: an i bound there (a summation index) is not the imaginary unit
_BINDS = (sympy.Sum, sympy.Product, sympy.Integral, sympy.Derivative, sympy.Limit, sympy.Subs, sympy.Lambda)


def imaginary_unit(expr: sympy.Basic) -> sympy.Basic:
    """The free ``i`` of a parsed span as the imaginary unit: ``expr.subs(i, I)``, by ``xreplace``
    when nothing in it binds a variable (the same object, 20-40x faster: ``6 - 5i`` took 18 ms)."""
    if expr.has(*_BINDS):
        return expr.subs(_IMAG, sympy.I)  # only the free i: subs leaves bound ones alone
    return expr.xreplace({_IMAG: sympy.I})


_DECIMAL = re.compile(r"[0-9]*\.?[0-9]*(?:[eE][-+]?[0-9]+)?")  # ASCII digits only (\d is any script's)


class _Converter(_Latex2Sympy):
    """latex2sympy2_extended's converter, its numbers built directly: the library reads each one with
    ``sympy.Number(text)``, which parses the text as Python source (``parse_expr``, a ``from sympy
    import *`` each time: a millisecond a number, most of a short gold's parse). The same objects
    (``Integer``, ``Float`` at the precision its digits ask for); anything else goes the library's way."""

    def parse_number(self, text: str) -> sympy.Number:
        digits = text.replace(",", "")
        if digits.isascii() and digits.isdigit():
            return sympy.Integer(int(digits))
        if any(c in "0123456789" for c in digits) and _DECIMAL.fullmatch(digits):
            return sympy.Float(digits)
        return super().parse_number(text)


class _SLLConverter(_Converter):
    """latex2sympy2_extended's converter with ANTLR's fast SLL prediction.

    ANTLR's own advice for speed (two-stage parsing): predict with SLL, which
    either yields the parse full LL would or stops at a syntax error, and re-parse
    with LL only then. Full-context LL prediction was most of a verdict's time
    on symbolic golds; over 56,634 spans from MATH's solutions the two stages
    gave the same SymPy object on every span SLL parsed, and SLL stopped on 7%
    (tests/verify/math/test_parse_stages.py keeps a table of both kinds).
    """

    def create_parser(self, latex_str: str):  # type: ignore[no-untyped-def]
        parser = super().create_parser(latex_str)
        parser._interp.predictionMode = PredictionMode.SLL
        return parser


_DIGITS = re.compile(r"0|[1-9][0-9]{0,99}")


def _latex2sympy(s: str) -> object:
    """``latex2sympy(s)`` with our normalisation, SLL first and LL on a syntax error."""
    if _DIGITS.fullmatch(s):  # "0" on an equation's right: the parser's Integer, without ANTLR's 0.5 ms
        return sympy.Integer(s)
    if (poly := polynomial(s)) is not None:
        return poly
    text = normalize_latex(s, _L2S_CONFIG)  # what latex2sympy() does first, done once for all stages
    for builder in (closed_form, polynomial_quotient_or_product, trig_of_letter):
        if (built := builder(text)) is not None:
            return built
    try:
        return _SLLConverter().parse(text)
    except Exception:  # SLL stopped (or the span is not LaTeX): full LL decides
        return _Converter().parse(text)


@lru_cache(maxsize=4096)
def latex_to_sympy(s: str) -> sympy.Basic | None:
    """latex2sympy2_extended, guarded and cached; None when it cannot parse."""
    guards.check_span(s)
    if m := _INFINITY.match(s.strip()):
        return -sympy.oo if m.group(1) == "-" else sympy.oo
    s = re.sub(r"(\d)\s*\\frac\s*\{(\d+)\}\s*\{(\d+)\}", r"(\1+\\frac{\2}{\3})", s)  # mixed numbers
    try:
        expr = _latex2sympy(s)
    except Exception:  # the parser signals every syntax problem with a bare Exception
        return None
    if isinstance(expr, str) or expr is None:
        return None
    if isinstance(expr, sympy.MatrixExpr) and not isinstance(expr, sympy.MatrixSymbol):
        guards.check_expr(expr)
        expr = expr.doit()  # "A + B", "A B" of explicit matrices: compute them
    if isinstance(expr, sympy.MatrixBase):
        expr = sympy.ImmutableMatrix(expr)  # hashable, and a sympy.Basic like the rest
    if isinstance(expr, sympy.Basic):
        guards.check_expr(expr)
        if _IMAG in expr.free_symbols:
            expr = imaginary_unit(expr)
        if "sqrt[" in s or "^{1/" in s or "^{\\frac{1}" in s:
            expr = _real_roots(expr)
    return expr


def _real_roots(expr: sympy.Basic) -> sympy.Basic:
    """An odd root of a negative number as the real root a reader means (``\\sqrt[3]{-8}`` is -2),
    not SymPy's complex principal root."""

    def odd_root_of_negative(e: sympy.Basic) -> bool:
        return (
            isinstance(e, sympy.Pow)
            and e.exp.is_Rational
            and int(e.exp.q) % 2 == 1
            and e.base.is_number
            and bool(e.base.is_extended_negative)
        )

    def real(e: sympy.Pow) -> sympy.Basic:
        sign = -1 if int(e.exp.p) % 2 else 1
        return sign * sympy.Pow(-e.base, e.exp)

    return expr.replace(odd_root_of_negative, real)


_REL = re.compile(r"\\(?:le|leq|ge|geq|lt|gt|ne|neq|leqslant|geqslant)(?![a-zA-Z])|<=|>=|!=|<|>")
_NAME_NOISE = re.compile(
    r"\^\s*\{\s*-1\s*\}|_\{[^{}]*\}|_\w|\\frac|\\left|\\right|\\mathrm|\\operatorname|[{}()|:\s,]|\\[a-zA-Z]+"
)


def is_name(lhs: str) -> bool:
    """Is the left side of ``=`` a name for the answer ("x", "f(x)", "|AB|", "(p,q)")?"""
    core = _NAME_NOISE.sub("", lhs)
    return bool(core) and bool(re.fullmatch(r"[a-zA-Z'*/]+", core))


def _to_value(obj: sympy.Basic) -> Value:
    if isinstance(obj, sympy.Rational):
        return Num(Fraction(int(obj.p), int(obj.q)))
    if isinstance(obj, sympy.Tuple):
        return Items(tuple((_to_value(a),) for a in obj.args), ordered=True)
    return Expr(obj)


_MATRIX = re.compile(r"^\\begin\{([pbB]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.DOTALL)


def _matrix(s: str) -> Expr | None:
    """An explicit matrix, cell by cell (each cell takes the fast number path when it can)."""
    m = _MATRIX.match(s.strip())
    if not m:
        return None
    rows = [r for r in re.split(r"\\\\", m.group(2)) if r.strip()]
    cells = [[_scalar(parse_alts(c)) for c in r.split("&")] for r in rows]
    if not cells or any(c is None for row in cells for c in row) or len({len(r) for r in cells}) != 1:
        return None
    return Expr(sympy.ImmutableMatrix(cells))


def _sympy_alts(s: str) -> Alts:
    if s.startswith("\\begin") and (mat := _matrix(s)) is not None:
        return (mat,)
    expr = latex_to_sympy(s)
    if expr is None:
        return ()
    if isinstance(expr, sympy.Interval) and s.startswith("(") and s.endswith(")"):
        pair = Items(((_to_value(expr.start),), (_to_value(expr.end),)), ordered=True)
        return (Expr(expr), pair)
    if isinstance(expr, sympy.Basic):
        return (_to_value(expr),)
    return ()


def _scalar(alts: Alts) -> sympy.Expr | None:
    for a in alts:
        if isinstance(a, Num):
            return sympy.Rational(a.value.numerator, a.value.denominator)
        if isinstance(a, Expr) and isinstance(a.expr, sympy.Expr) and not isinstance(a.expr, sympy.MatrixBase):
            return a.expr
    return None


def _interval(s: str, inner: list[str]) -> Expr | None:
    """``(a, b]`` and friends, built from the parsed endpoints (no set grammar needed)."""
    a, b = _scalar(parse_alts(inner[0])), _scalar(parse_alts(inner[1]))
    if a is None or b is None:
        return None
    try:
        iv = interval(a, b, left_open=s[0] == "(", right_open=s[-1] == ")")
    except (TypeError, ValueError):  # symbolic endpoints that cannot be ordered
        return None
    return Expr(iv) if isinstance(iv, sympy.Interval) else None  # (3, 1) is no interval


def _one_set(body: str) -> bool:
    """Whether the ``\\{...\\}`` around ``body`` are one set's braces (``\\{1\\} \\cup \\{2\\}`` are two sets)."""
    depth = 0
    for m in re.finditer(r"\\[{}]", body):
        depth += 1 if m.group(0) == "\\{" else -1
        if depth < 0:
            return False
    return depth == 0


def _union(s: str) -> Expr | None:
    """``A \\cup B``: the union of the parts' set readings."""
    sets = []
    parts = split_top(s, ("\\cup",))
    if len(parts) < 2:  # no union at the top (a \\cup inside a bracket): nothing to combine here
        return None
    for part in parts:
        alts = parse_alts(part)
        found = next((a.expr for a in alts if isinstance(a, Expr) and isinstance(a.expr, sympy.Set)), None)
        if found is None:
            items = next((a for a in alts if isinstance(a, Items) and not a.ordered), None)
            values = [_scalar(x) for x in items.items] if items else []
            if not values or any(v is None for v in values):
                return None
            found = sympy.FiniteSet(*values)
        sets.append(found)
    return Expr(union_of(*sets)) if sets else None


_LESS = {
    "<": (True, False),
    "\\lt": (True, False),
    "\\le": (False, False),
    "\\leq": (False, False),
    "<=": (False, False),
    "\\leqslant": (False, False),
}
_GREATER = {">": True, "\\gt": True, "\\ge": False, "\\geq": False, ">=": False, "\\geqslant": False}


def _simple_interval(parts: list[str], ops: list[str]) -> Expr | None:
    """Fast path: ``x < c``, ``c \\ge x``, ``a < x \\le b`` with a plain name and constant bounds."""

    def const(side: str) -> sympy.Expr | None:
        v = _scalar(parse_alts(side)) if side.strip() else None
        return v if v is not None and not v.free_symbols else None

    def flip(op: str) -> str:
        swapped = op.replace("l", "G").replace("g", "l").replace("G", "g")  # \\le <-> \\ge
        return {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, swapped)

    if len(parts) == 2 and _plain_name(parts[0]) and (c := const(parts[1])) is not None:
        op = ops[0]
    elif len(parts) == 2 and _plain_name(parts[1]) and (c := const(parts[0])) is not None:
        op = flip(ops[0])
    elif len(parts) == 3 and _plain_name(parts[1]) and ops[0] in _LESS and ops[1] in _LESS:
        lo, hi = const(parts[0]), const(parts[2])
        if lo is None or hi is None:
            return None
        iv = interval(lo, hi, left_open=_LESS[ops[0]][0], right_open=_LESS[ops[1]][0])
        return Expr(iv)
    else:
        return None
    if op in ("\\ne", "\\neq", "!="):
        return Expr(union_of(interval(-sympy.oo, c, True, True), interval(c, sympy.oo, True, True)))
    if op in _LESS:
        return Expr(interval(-sympy.oo, c, right_open=_LESS[op][0]))
    if op in _GREATER:
        return Expr(interval(c, sympy.oo, left_open=_GREATER[op]))
    return None


def _plain_name(s: str) -> bool:
    return bool(re.fullmatch(r"\s*[a-zA-Z](?:_\{?\w+\}?)?\s*", s))


def _relation_alts(s: str) -> Alts:
    """Inequalities and ``x \\in S`` become the set of values they allow."""
    if re.search(r"\\in(?![a-zA-Z])", s):
        lhs, rhs = re.split(r"\\in(?![a-zA-Z])", s, maxsplit=1)
        if is_name(lhs):
            return parse_alts(rhs)
    parts = _REL.split(s)
    ops = _REL.findall(s)
    if len(parts) == 2 and not parts[0].strip():  # "\\geq 12": a bound on the unknown, never the value 12
        parts, s = ["t", parts[1]], "t " + s
    if (iv := _simple_interval(parts, ops)) is not None:
        return (iv,)
    if len(parts) == 3 and is_name(parts[1]) and "|" not in parts[1]:  # "a < f(x) < b": the name is only a placeholder
        s = parts[0] + ops[0] + " t " + ops[1] + parts[2]
    elif len(parts) == 2 and is_name(parts[0]) and not re.search("[a-zA-Z]", _NAME_NOISE.sub("", parts[1])):
        s = " t " + ops[0] + parts[1]
    elif len(parts) == 2 and is_name(parts[1]) and not re.search("[a-zA-Z]", _NAME_NOISE.sub("", parts[0])):
        s = parts[0] + ops[0] + " t "
    expr = latex_to_sympy(s)
    if expr is None or not isinstance(expr, sympy.Basic):
        return ()
    syms = expr.free_symbols
    if len(syms) == 1:
        x = next(iter(syms))
        real = sympy.Symbol(x.name, real=True)
        try:
            return (Expr(expr.subs(x, real).as_set()),)
        except Exception:  # as_set raises NotImplementedError and friends on hard relations
            return (Expr(expr),)
    return (Expr(expr),)


def _equation_alts(s: str) -> Alts:
    parts = list(split_top(s, ("=",)))
    if len(parts) < 2 or not all(parts):
        return ()
    value = parts[-1]
    alts: list[Value] = []
    if not any(re.search("[a-zA-Z]", _NAME_NOISE.sub("", p)) for p in parts):
        return parse_alts(value)  # pure arithmetic "1/2 = 10/9": the value is the last part
    # "x = 11", and chains "x = 5 + 5 + 1 = 11": the value is the last part.
    if is_name(parts[-2]) or (len(parts) > 2 and is_name(parts[0])):
        alts.extend(parse_alts(value))
        # The equation itself matters only when the value has symbols ("y = 2x + 3" vs "2x + 3 = y").
        symbolic = any(isinstance(a, Expr) and getattr(a.expr, "free_symbols", None) for a in alts)
        if len(parts) == 2 and symbolic and (eq := _equation(parts[0], value)) is not None:
            alts.append(eq)
        return tuple(alts)
    eq = _equation(parts[0], value)
    return (eq,) if eq is not None else ()


def _equation(lhs: str, rhs: str) -> Expr | None:
    """``lhs = rhs`` from its two sides parsed apart (two short parses beat one long one)."""
    sides = []
    for side in (lhs, rhs):
        x = latex_to_sympy(strip_units(unwrap_text(side)))
        if not isinstance(x, sympy.Expr):
            x = _scalar(parse_alts(side))
        if x is None:
            return None
        sides.append(x)
    return Expr(sympy.Eq(sides[0], sides[1], evaluate=False))


_WORDS_ONLY = re.compile(r"^[A-Za-z][A-Za-z\s'\-]*$")
_CHOICE = re.compile(r"^\(?([A-Ea-e])\)?$")


def _text_value(s: str) -> Text | None:
    t = unwrap_text(s).strip()
    if m := _CHOICE.match(t):
        return Text(m.group(1).lower())
    if _WORDS_ONLY.match(t):
        return Text(" ".join(t.lower().split()))
    return None


# "(11,7)or(7,11)", "W(x)=1orW(x)=-1": connectors written without spaces.
_GLUED_CONNECTOR = re.compile(r"(?<=[\d)\]}])(?:or|and)(?=[A-Za-z(\[{\\\d-])")
_DECIMAL_COMMA = re.compile(r"^([-+]?\d+),(\d+)$")


@lru_cache(maxsize=8192)
def parse_alts(span: str) -> Alts:
    """All readings of an answer span (empty when it cannot be parsed at all)."""
    if (m := PLAIN_NUMBER.fullmatch(span.strip())) and len(span) <= guards.MAX_SPAN_CHARS:
        # the commonest span, one reading: what _read gives it (tests/verify/math/test_properties.py)
        guards.check_span(span)
        if (num := parse_number(m.group(0))) is not None:
            return (num,)
    return _read(span)


def _read(span: str) -> Alts:
    """:func:`parse_alts` for any span."""
    if len(span) > guards.MAX_SPAN_CHARS:
        return (Text(re.sub(r"\s+", "", span).lower(), raw=True),)  # too long to parse: string only
    guards.check_span(span)
    s = normalize(span)
    if not s:
        return ()
    if " and " in s and (words := parse_number_words(s)) is not None:  # "one hundred and five" is one number
        return (Num(words),)
    if (" and " in s or "," in s) and (values := compound_quantity(unwrap_text(s))) is not None:
        return tuple(Num(v) for v in values)  # "2 hours and 30 minutes" is one quantity
    s = re.sub(r"\\text\s*\{\s*(and|or)\s*\}", r" \1 ", s)
    s = re.sub(r"\\q?quad", " ", s)
    s = _GLUED_CONNECTOR.sub(" , ", s)
    if _REL.search(s) and (union := _relations_union(s)) is not None:  # "x < -1 or x > 2"
        return (union,)
    if _REL.search(s) and (both := _relations_union(s, _AND)) is not None:  # "x > 1 and x < 3"
        return (both,)
    if (parts := labelled_parts(s)) is not None:  # "(a) 3 (b) 5": the parts in order
        return (Items(tuple(parse_alts(p) for p in parts), ordered=True),)
    if ("," in s or " and " in s or " or " in s) and (named := _named_text(s)) is not None:
        return named  # "all real numbers except 2 and -2" is one set, not a list
    for seps in ((";",), (",", " or ", " and ", r"\text{or}")):
        parts = [p for p in split_top(s, seps) if p]
        if len(parts) > 1:
            items = (Items(tuple(parse_alts(p) for p in parts), ordered=False),)
            if m := _DECIMAL_COMMA.match(s):  # "1,22": a list, or a decimal comma
                return items + (Num(Fraction(f"{m.group(1)}.{m.group(2)}"), approx=True),)
            return items
    return _atom_alts(s)


_OR = (" or ", r"\text{or}", r"\lor", r"\vee", r"\text{ or }")
_AND = (" and ", r"\text{and}", r"\land", r"\wedge", r"\text{ and }")


def _relations_union(s: str, joins: tuple[str, ...] = _OR) -> Expr | None:
    """Inequalities in one variable joined by "or": the union of their sets (a solution set
    written either way reads the same); joined by "and" (``joins=_AND``): their intersection."""
    parts = [p for p in split_top(s, joins) if p.strip()]
    if len(parts) < 2 or len({v for p in parts for v in re.findall(r"(?<![\\a-zA-Z])[a-zA-Z](?![a-zA-Z])", p)}) != 1:
        return None
    sets = []
    for p in parts:
        alts = _relation_alts(p.strip()) if _REL.search(p) else ()
        if len(alts) != 1 or not isinstance(alts[0], Expr) or not isinstance(alts[0].expr, sympy.Set):
            return None
        sets.append(alts[0].expr)
    return Expr(union_of(*sets) if joins is _OR else sympy.Intersection(*sets))


_COLON_PAIR = re.compile(r"(\d+)\s*:\s*(\d+)")
_RESIDUE = re.compile(
    r"^(?:[a-zA-Z]\s*\\equiv\s*)?([-+]?\d+)\s*(?:\\pmod\s*\{?\s*(\d+)\s*\}?|\(\s*\\?(?:mod|bmod)\s*(\d+)\s*\)"
    r"|\\(?:bmod|mod)\s*\{?\s*(\d+)\s*\}?|mod\s*(\d+))$"
)


def _residue(s: str) -> Residue | None:
    """``x \\equiv 3 \\pmod{7}``, ``3 \\pmod 7``, ``x ≡ 3 (mod 7)``: the residue class."""
    m = _RESIDUE.match(s.strip())
    if m is None:
        return None
    modulus = int(next(g for g in m.groups()[1:] if g is not None))
    return Residue(int(m.group(1)) % modulus, modulus) if modulus > 0 else None


def _named_text(s: str) -> Alts | None:
    """A text answer that names a set or a verdict (:mod:`rlvr.verify.math.text_answers`)."""
    t = unwrap_text(s)
    if len(t) < 3 or not re.search(r"[a-zA-Z]{3}", t):
        return None
    named = text_answer(t, lambda part: _scalar(parse_alts(part)))
    if named is None:
        return None
    return tuple(Text(v) if isinstance(v, str) else Expr(v) for v in named)


def _set_operation(s: str) -> Expr | None:
    """``A \\cap B``, ``A \\setminus B``: the set the operation gives, from the parts' set readings."""
    op = "\\cap" if "\\cap" in s else "\\setminus"
    parts = split_top(s, (op,))
    if len(parts) != 2:
        return None
    sets = []
    for part in parts:
        alts = parse_alts(part)
        found = next((a.expr for a in alts if isinstance(a, Expr) and isinstance(a.expr, sympy.Set)), None)
        if found is None:
            items = next((a for a in alts if isinstance(a, Items)), None)
            values = [_scalar(x) for x in items.items] if items else []
            if not values or any(v is None for v in values):
                return None
            found = sympy.FiniteSet(*values)
        sets.append(found)
    return Expr(sympy.Intersection(*sets) if op == "\\cap" else sympy.Complement(*sets))


def _atom_alts(s: str) -> Alts:
    if len(s) >= 2 and s[0] == "{" and _matching_close(s, 0) == len(s) - 1:
        return parse_alts(s[1:-1])  # LaTeX grouping braces
    if s.startswith("\\{") and s.endswith("\\}") and _one_set(s[2:-2]):
        body = s[2:-2].strip()
        parts = [p for p in split_top(body, (",", ";")) if p] if body else []
        return (Items(tuple(parse_alts(p) for p in parts), ordered=False),)
    if s[0] in "([" and _matching_close(s, 0) == len(s) - 1:
        inner = [p for p in split_top(s[1:-1], (",", ";")) if p]
        if len(inner) > 1:
            # (a, b) is an open interval or a tuple/point; [a, b], (a, b], [a, b) are intervals only:
            # the four are different sets, and a point is never the closed interval.
            alts: list[Value] = []
            if len(inner) == 2 and (iv := _interval(s, inner)) is not None:
                alts.append(iv)
            if (s[0] == "(" and s[-1] == ")") or len(inner) > 2 or not alts:
                alts.append(Items(tuple(parse_alts(p) for p in inner), ordered=True))
            return tuple(alts)
        if len(inner) == 1:  # "(x)", "[\\begin{array}...]": only grouping
            return parse_alts(inner[0])
    if m := _COLON_PAIR.fullmatch(s):  # a time or a ratio: "12:00", "7:32", "3:2"
        text = Text(s.replace(" ", ""))
        a, b = int(m.group(1)), int(m.group(2))
        clock = len(m.group(2)) == 2 and a <= 24 and b < 60
        return (text, Ratio(Fraction(a, b), clock)) if b else (text,)
    if "mod" in s and (residue := _residue(s)) is not None:
        return (residue,)
    if (named := _named_text(s)) is not None:  # "no solution", "all real numbers except 3"
        return named
    if re.search(r"\\(?:pm|mp)(?![a-zA-Z])", s):
        plus = re.sub(r"\\(?:pm|mp)(?![a-zA-Z])", "+", s, count=1)
        minus = re.sub(r"\\(?:pm|mp)(?![a-zA-Z])", "-", s, count=1)
        return (Items((parse_alts(plus), parse_alts(minus)), ordered=False),)
    if _REL.search(s) or re.search(r"\\in(?![a-zA-Z])", s):
        return _relation_alts(s)
    if "\\cup" in s:
        union = _union(s)
        return (union,) if union is not None else _sympy_alts(s)
    if ("\\cap" in s or "\\setminus" in s) and (combined := _set_operation(s)) is not None:
        return (combined,)
    if "\\approx" in s:
        # "x = 1/3 \approx 0.33" -> 1/3; "x \approx 11" -> 11; "7 \approx 8" -> 7
        head, tail = s.split("\\approx", 1)
        head = head.strip()
        if not head:  # "\\approx 12": the value it approximates, as "about 12" reads
            return _atom_alts(tail.split("\\approx")[0].strip()) if tail.strip() else ()
        if "=" not in head and is_name(head):
            head = head + "=" + tail.split("\\approx")[0]
        return _atom_alts(head) if head else ()
    if "=" in s and len(split_top(s, ("=",))) > 1:  # not the "=" of \\sum_{k=0}
        return _equation_alts(s)
    if s.endswith("%"):
        base = _atom_alts(s[:-1].strip()) if s[:-1].strip() else ()
        scaled = tuple(Num(v.value / 100, v.approx) for v in base if isinstance(v, Num))
        return base + scaled
    if (num := parse_number(s)) is not None:
        return (num,)
    if (power := _power(s)) is not None:
        return (power,)
    unwrapped = unwrap_text(s)
    if (words := parse_number_words(unwrapped)) is not None and re.search(r"\d", unwrapped):  # "2.5 million"
        return (Num(words, approx="." in unwrapped),)
    if (values := compound_quantity(unwrapped)) is not None:  # "2 hours 30 minutes"
        return tuple(Num(v) for v in values)
    plain = strip_units(unwrap_text(strip_units(s)))
    if plain != s and (num := parse_number(plain)) is not None:
        return (num,)
    if (words := parse_number_words(unwrap_text(s))) is not None:
        return (Num(words),)
    if (value := _text_value(s)) is not None:
        return (value,)
    found = _sympy_alts(plain)
    return found or (Text(re.sub(r"\s+", "", s).lower(), raw=True),)


_POWER = re.compile(r"^(\d+)\s*\^\s*(\{.*\}|\d+)$")
_MAX_EXP_DIGITS = 10_000  # an exponent may itself be a power, evaluated up to this many digits


def _int_tower(s: str) -> int | None:
    """The value of ``n`` or ``n^{...}`` (nested), when it has at most ``_MAX_EXP_DIGITS`` digits."""
    s = s.strip()
    while s.startswith("{") and _matching_close(s, 0) == len(s) - 1:
        s = s[1:-1].strip()
    if s.isdigit():
        return int(s) if len(s) <= _MAX_EXP_DIGITS else None
    m = _POWER.match(s)
    if not m:
        return None
    base, exp = int(m.group(1)), _int_tower(m.group(2))
    if exp is None or (base > 1 and exp * math.log10(base) > _MAX_EXP_DIGITS):
        return None
    return base**exp


def _power(s: str) -> Power | Num | None:
    """An integer power too large to evaluate (``10^{10^{10}}``), by its parts; never evaluated."""
    m = _POWER.match(s.strip())
    if not m:
        return None
    base, exp = int(m.group(1)), _int_tower(m.group(2))
    if exp is None or base < 2 or exp * math.log10(base) <= guards.MAX_RESULT_DIGITS:
        return None  # small enough for the exact paths (or 0/1, or an exponent we cannot compute)
    for k in range(int(math.log2(base)), 1, -1):  # the smallest root: 100^5 is 10^10
        r = round(base ** (1 / k))
        for cand in (r - 1, r, r + 1):
            if cand > 1 and cand**k == base:
                return Power(cand, exp * k)
    return Power(base, exp)


def is_malformed(span: str) -> bool:
    """Unbalanced brackets: LaTeX that cannot mean anything."""
    s = normalize(span).replace("\\{", "").replace("\\}", "")
    # Intervals legitimately mix ( and ]: only braces must balance exactly (counts, not order).
    return s.count("{") != s.count("}") or s.count("(") + s.count("[") != s.count(")") + s.count("]")


def try_parse(span: str) -> tuple[Alts, str | None]:
    """``(readings, refusal reason)``; a refused span has no readings."""
    try:
        return parse_alts(span), None
    except Refused as e:
        return (), str(e)


#: Representative spans: parsing them once fills the LaTeX parser's prediction cache
#: (ANTLR's DFA), which makes every later parse in this process several times faster.
_WARM_UP = (
    r"\frac{x+2}{7}",
    r"\sqrt{2}+\sqrt{5}",
    r"\frac{9}{4}\pi",
    r"2 \sin b \cos a",
    r"x^2+y^2+4x-6y",
    r"\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix}",
    r"y=-\frac{1}{2}x+\frac{3}{4}",
    r"1 \le |z| \le 2",
    r"x \geq 5",
    r"(1,5) \cup (5,40)",
    r"10^{\frac{\sqrt{13}-5}{6}}",
    r"\sec^2(y)",
    r"e^{i\pi}",
    r"-2(x-1)^2+5",
    r"\frac{1}{3\sqrt[3]{x}^2}",
    r"\log_2 8",
    r"a_{37}",
    r"f(x)",
    r"3+2i",
    r"\tan^2(y)+1",
    r"2x+5",
    r"34x+45y-20z+100",
    r"x^2/16 + y^2/12",
    r"\frac{\sqrt{\sqrt{11}+\sqrt{194}}}{15+2\sqrt{33}}",
    r"\sum_{k=0}^{n-1} F_k F_{n-k-1}",
    # polynomials of many terms, coefficients glued to letters, numbers in a base, bare functions
    r"7t^2-5t-36",
    r"y^6 - y^5 + y^4 - y^3 + y^2 - y + 1",
    r"a^7 + a^6 + a^5 + a^4 + a^3 + a^2 + a + 1",
    r"-11m+4",
    r"31_{7}",
    r"2203_4",
    r"\csc y",
    r"3 - 4i",
    r"5 \sqrt{7} + 2",
    r"\frac{108 + 31\sqrt{5}}{216}",
    r"3(x + 2)^2 - 2",
    r"\pi r^2 h",
    r"\frac{\pi}{2}",
    r"4\sqrt{2}",
    r"\cos^2 x",
    r"\arctan(1)",
    r"\ln 2",
    r"\binom{5}{2}",
    r"|x-2|",
    r"x < 3",
    r"-x \le 5",
    r"\begin{pmatrix} -1/3 \\ 2/3 \end{pmatrix}",
    r"\dfrac{3}{56}",
    r"5!",
    # shapes common in competition answers (invented instances: a benchmark's own golds stay out)
    r"\frac{7 \pi^2}{3}",
    r"1021_{3}",
    r"(p+3)(q-4)",
    r"\frac{2+5b}{9}",
    r"-\frac{\pi}{4}",
    r"-\sqrt{5}",
    r"\frac{500}{\pi}",
    r"\frac{2\sqrt{5}}{3}",
    r"\tan y",
    r"12+3\pi",
    r"2 + 7 \sqrt{3}",
    r"2 \pm \sqrt{7}",
    r"45^\circ",
    r"\left[ \frac{\pi}{3}, \frac{2 \pi}{3} \right]",
    r"\left( 2, \frac{\pi}{3} \right)",
    r"\cos(\frac{30\pi}{180})",
)


def warm_up() -> None:
    """Parse representative spans once, before forking workers or timing anything."""
    for span in _WARM_UP:
        latex_to_sympy(span)
    latex_to_sympy.cache_clear()
