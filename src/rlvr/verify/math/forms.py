r"""Written forms a reader converts before reading the value: ``str -> str`` rewrites of an answer span.

Each function here takes one family of notations to the spelling the parser reads, and leaves
every other span as it is (each is guarded by a substring test: most spans hold none of them):

* :func:`siunitx`: ``\SI{9.8}{m/s^2}``, ``\qty{3}{\kilo\gram}``, ``\num{1.5e3}`` -> the value and a unit;
* :func:`repeating`: ``0.\overline{3}``, ``0.\bar{3}``, ``0.\dot{1}4\dot{2}``, ``0.8(3)``, ``0.333...`` -> a fraction;
* :func:`grouping`: digit groups of other locales (lakh ``12,34,567``, ``1.234.567``, ``1'234'567``);
* :func:`degrees_minutes`: ``30^\circ 15'`` -> the degrees as a fraction;
* :func:`bases`: ``101_2``, ``FF_{16}``, ``0b101``, ``0xFF``, ``0o17`` -> the decimal value (a base
  subscript is never dropped: ``101_2`` is 5, never 101);
* :func:`ascii_math`: plain-text maths as programs and keyboards print it (``+/-``, ``oo``, ``U``,
  ``sqrt(3)``, ``3+4j``, ``complex(3, 4)``, ``<1, 2>``, ``\geqq``);
* :func:`polar`: complex numbers in polar form (``2\,\text{cis}(\pi)``, ``\sqrt{2}\angle 45^\circ``);
* :func:`vectors`: ``\langle 1, 2 \rangle``, ``\mathbf{i} + 2\mathbf{j}``, ``[[1], [2]]``, a named point ``P(3, 4)``;
* :func:`european_interval`: ``]1, 2]``, ``[1; 2[`` -> ``(1, 2]``, ``[1, 2)``;
* :func:`environments`: ``\begin{aligned} x &= 5 \end{aligned}`` -> ``x = 5`` (rows become a list);
* :func:`chances`: "3 out of 8", "1 in 4" -> ``\frac{3}{8}``; "2 to 3" -> ``2:3``.

:func:`rewrite` applies them all, in an order where none undoes another; it runs inside
:func:`rlvr.verify.math.normalize.normalize`, so gold and prediction are read alike.
"""

from __future__ import annotations

import re
from fractions import Fraction

# --- siunitx -----------------------------------------------------------------------------------

_SI_UNIT_MACROS = {
    "meter": "m",
    "metre": "m",
    "second": "s",
    "gram": "g",
    "kilogram": "kg",
    "hour": "h",
    "minute": "min",
    "litre": "L",
    "liter": "L",
    "newton": "N",
    "joule": "J",
    "watt": "W",
    "volt": "V",
    "ampere": "A",
    "kelvin": "K",
    "pascal": "Pa",
    "hertz": "Hz",
    "mole": "mol",
    "kilo": "k",
    "centi": "c",
    "milli": "m",
    "mega": "M",
    "micro": "u",
    "per": "/",
    "squared": "^2",
    "cubed": "^3",
    "percent": "%",
    "degree": "deg",
}
_SI = re.compile(r"\\(?:SI|qty|SIrange|qtyrange)\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_NUM = re.compile(r"\\num\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}")
_SI_ALONE = re.compile(r"\\(?:si|unit)\s*(?:\[[^\]]*\])?\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_MACRO = re.compile(r"\\([a-zA-Z]+)")


def _si_unit(unit: str) -> str:
    letters = _MACRO.sub(lambda m: _SI_UNIT_MACROS.get(m.group(1), m.group(1)), unit).replace(" ", "")
    letters = letters.replace("{", "").replace("}", "").replace("~", "").replace(".", "")
    if letters.strip() == "%":
        return "%"
    return f" \\mathrm{{{letters}}}" if re.fullmatch(r"[a-zA-Z/^\-0-9]+", letters) else ""


def _si_number(v: str) -> str:
    v = v.strip().replace(" ", "")
    if m := re.fullmatch(r"([-+]?\d*\.?\d+)[eE]([-+]?\d+)", v):  # siunitx writes 1.5e3 for 1.5 x 10^3
        return f"{m.group(1)} \\times 10^{{{int(m.group(2))}}}"
    return v


def siunitx(s: str) -> str:
    r"""siunitx's quantities as value and unit: ``\SI{9.8}{\meter\per\second}`` -> ``9.8 \mathrm{m/s}``.

    Examples:
        >>> siunitx(r"\SI{5}{\meter}"), siunitx(r"\num{1.5e3}"), siunitx(r"\qty{50}{\percent}")
        ('5 \\mathrm{m}', '1.5 \\times 10^{3}', '50%')
    """
    if "\\SI" not in s and "\\qty" not in s and "\\num" not in s and "\\si" not in s and "\\unit" not in s:
        return s
    s = _SI.sub(lambda m: _si_number(m.group(1)) + _si_unit(m.group(2)), s)
    s = _NUM.sub(lambda m: _si_number(m.group(1)), s)
    return _SI_ALONE.sub(lambda m: _si_unit(m.group(1)), s)


# --- repeating decimals --------------------------------------------------------------------------


def _fraction(whole: str, fixed: str, rep: str, negative: bool = False) -> str:
    whole = whole or "0"
    num = int(whole + fixed + rep) - int(whole + fixed)
    den = (10 ** len(rep) - 1) * 10 ** len(fixed)
    return f"{'-' if negative else ''}\\frac{{{num}}}{{{den}}}"


_OVER = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\(?:overline|bar|wideparen|overparen)\s*\{\s*(\d+)\s*\}")
_OVER_ONE = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\(?:bar|overline)\s*(\d)(?!\d)")
_PARENS = re.compile(r"(?<![\d.])(\d*)\.(\d*)\((\d+)\)(?![\d(])")
# 0.\dot{1}4\dot{2}: dots over the first and last digits of the repeating block (one dot: one digit)
_DOTS = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\dot\s*\{\s*(\d)\s*\}(?:(\d*)\\dot\s*\{\s*(\d)\s*\})?")
# a decimal whose digits show a block repeating, then an ellipsis: 0.333..., 0.142857142857\ldots
_ELLIPSIS = re.compile(r"(?<![\d.])(\d*)\.(\d*?)((\d+?)\4+)(?:\.\.\.|…|\\[lc]?dots\b)")
# the block marked by a combining overline on each digit (0.2̅, 0.1̅2̅) or in square brackets (0.1[6])
_COMBINING = re.compile(r"(?<![\d.])(\d*)\.(\d*?)((?:\d[\u0304\u0305])+)(?![\d\u0304\u0305])")  # or a macron
# "0.3 repeating", "0.142857 recurring": the digits after the point are the block
_REPEATING_WORD = re.compile(
    r"(?<![\d.])(\d*)\.(\d+)\s*(?:\(\s*)?(?:repeating|recurring|repeated)\b\s*\)?", re.IGNORECASE
)
_BRACKETS = re.compile(r"(?<![\d.])(\d*)\.(\d*)\[(\d+)\](?![\d\]])")


def repeating(s: str) -> str:
    r"""A repeating decimal, in any notation, as the fraction it is.

    A decimal cut off with an ellipsis repeats only when its digits show the block at least twice
    (``0.333...``, ``0.1666...``): ``3.14159...`` is a truncation, not a repetition.

    Examples:
        >>> repeating(r"0.\overline{3}"), repeating("0.8(3)"), repeating(r"0.\dot{1}4\dot{2}")
        ('\\frac{3}{9}', '\\frac{75}{90}', '\\frac{142}{999}')
        >>> repeating("0.1666..."), repeating("3.14159..."), repeating("0.1212...")
        ('\\frac{15}{90}', '3.14159...', '\\frac{12}{99}')
        >>> repeating("0.2\u0305"), repeating("0.1[6]"), repeating("1.3 repeating")
        ('\\frac{2}{9}', '\\frac{15}{90}', '\\frac{12}{9}')
    """
    if "." not in s and "…" not in s:
        return s
    if "\\" in s:
        s = _OVER.sub(lambda m: _fraction(m.group(1), m.group(2), m.group(3)), s)
        s = _OVER_ONE.sub(lambda m: _fraction(m.group(1), m.group(2), m.group(3)), s)
        if "\\dot" in s:
            s = _DOTS.sub(
                lambda m: _fraction(m.group(1), m.group(2), m.group(3) + (m.group(4) or "") + (m.group(5) or "")), s
            )
    if "(" in s:
        s = _PARENS.sub(lambda m: _fraction(m.group(1), m.group(2), m.group(3)), s)
    if "\u0305" in s or "\u0304" in s:
        s = _COMBINING.sub(
            lambda m: _fraction(m.group(1), m.group(2), m.group(3).replace("\u0305", "").replace("\u0304", "")), s
        )
    if "epeat" in s or "ecurring" in s:
        s = _REPEATING_WORD.sub(lambda m: _fraction(m.group(1), "", m.group(2)), s)
    if "[" in s:
        s = _BRACKETS.sub(lambda m: _fraction(m.group(1), m.group(2), m.group(3)), s)
    if "..." in s or "…" in s or "dots" in s:
        s = _ELLIPSIS.sub(_ellipsis, s)
    return s


def _ellipsis(m: re.Match[str]) -> str:
    whole, fixed, block = m.group(1), m.group(2), m.group(4)
    # the shortest prefix whose rest is the block repeated (0.1666: fixed "1", block "6")
    digits = fixed + m.group(3)
    for start in range(len(digits)):
        for size in range(1, (len(digits) - start) // 2 + 1):
            tail = digits[start:]
            if len(tail) % size == 0 and tail == tail[:size] * (len(tail) // size):
                return _fraction(whole, digits[:start], tail[:size])
    return _fraction(whole, fixed, block)


# --- digit grouping of other locales -----------------------------------------------------------

_LAKH = re.compile(r"(?<![\d.,])\d{1,2}(?:,\d{2})+,\d{3}(?![\d,])")
_DOT_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3}){2,}(?![\d.])")
_APOSTROPHE_GROUPS = re.compile(r"(?<![\d'’])\d{1,3}(?:['’]\d{3})+(?![\d'’])")


def grouping(s: str) -> str:
    """Digit groups of other locales joined: Indian lakh/crore (``12,34,567``), dots (``1.234.567``:
    two dots or more, so never a decimal) and apostrophes (``1'234'567``).

    Examples:
        >>> grouping("12,34,567"), grouping("1.234.567"), grouping("1'234"), grouping("1.234")
        ('1234567', '1234567', '1234', '1.234')
    """
    if "," in s:
        s = _LAKH.sub(lambda m: m.group(0).replace(",", ""), s)
    if s.count(".") >= 2:
        s = _DOT_GROUPS.sub(lambda m: m.group(0).replace(".", ""), s)
    if "'" in s or "’" in s:
        s = _APOSTROPHE_GROUPS.sub(lambda m: m.group(0).replace("'", "").replace("’", ""), s)
    return s


# --- degrees and minutes -------------------------------------------------------------------------

_DEG = r"(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree\b)"
_MIN = r"(?:'|′|\^\s*\{?\s*\\prime\s*\}?|\\prime\b)"
_SEC = r"(?:''|″|\"|\^\s*\{?\s*\\prime\s*\\prime\s*\}?)"
_DMS = re.compile(
    rf"(?<![\d.])(\d+(?:\.\d+)?)\s*{_DEG}\s*(\d+(?:\.\d+)?)\s*{_MIN}(?!')(?:\s*(\d+(?:\.\d+)?)\s*{_SEC})?"
)
#: the same in words: "45 degrees 30 minutes", "45 degrees and 30 minutes" (the extractor's too)
DMS_WORDS = re.compile(
    r"(?<![\d.])(\d+(?:\.\d+)?)\s*degrees?\s*(?:,\s*|and\s+)?(\d+(?:\.\d+)?)\s*(?:arc\s*)?minutes?\b"
    r"(?:\s*(?:,\s*|and\s+)?(\d+(?:\.\d+)?)\s*(?:arc\s*)?seconds?\b)?",
    re.IGNORECASE,
)


def degrees_minutes(s: str) -> str:
    r"""An angle in degrees, minutes (and seconds) as degrees: ``30^\circ 15'`` -> ``\frac{121}{4}^\circ``.

    Examples:
        >>> degrees_minutes(r"30^\circ 30'"), degrees_minutes("12°0′36″"), degrees_minutes("30 degrees 30 minutes")
        ('\\frac{61}{2}^\\circ', '\\frac{1201}{100}^\\circ', '\\frac{61}{2}^\\circ')
    """
    words = "egree" in s and "inute" in s
    if "'" not in s and "′" not in s and "prime" not in s and not words:
        return s

    def degrees(m: re.Match[str]) -> str:
        value = Fraction(m.group(1)) + Fraction(m.group(2)) / 60 + Fraction(m.group(3) or 0) / 3600
        text = str(value.numerator) if value.denominator == 1 else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
        return text + "^\\circ"

    return DMS_WORDS.sub(degrees, _DMS.sub(degrees, s)) if words else _DMS.sub(degrees, s)


# --- numbers in a base ---------------------------------------------------------------------------

_PREFIXED = re.compile(r"(?<![\w.])([-+]?)0([bBoOxX])([0-9a-fA-F_]+)(?![\w.])")
_PREFIX_BASES = {"b": 2, "o": 8, "x": 16}
_SUBSCRIPT = re.compile(r"(?<![\w.\\])([0-9A-Z]+)_\s*(?:\{\s*\(?\s*(\d{1,2})\s*\)?\s*\}|(\d))(?![\w])")


def in_base(digits: str, base: int) -> int | None:
    """``digits`` read in ``base`` (2-36), or None when a digit is not one of that base's."""
    if not 2 <= base <= 36:
        return None
    try:
        return int(digits, base)
    except ValueError:
        return None


def bases(s: str) -> str:
    r"""Numbers in another base, written with a subscript or a prefix, as their decimal value.

    A digit the base does not have leaves the span as written (``129_8`` is no number in base 8);
    letters count as digits only in capitals and with a digit or another letter beside them
    (``a_{37}`` is a sequence's term, not a number).

    Examples:
        >>> bases("101_2"), bases("FF_{16}"), bases("0b101"), bases("0xff"), bases("a_{37}"), bases("129_8")
        ('5', '255', '5', '255', 'a_{37}', '129_8')
    """
    if "_" in s:

        def sub(m: re.Match[str]) -> str:
            digits, base = m.group(1), int(m.group(2) or m.group(3))
            if digits.isalpha() and len(digits) < 2:
                return m.group(0)
            value = in_base(digits, base)
            return m.group(0) if value is None else str(value)

        s = _SUBSCRIPT.sub(sub, s)
    if "0" in s and re.search(r"0[bBoOxX]", s):

        def prefixed(m: re.Match[str]) -> str:
            value = in_base(m.group(3).replace("_", ""), _PREFIX_BASES[m.group(2).lower()])
            return m.group(0) if value is None else f"{m.group(1)}{value}"

        s = _PREFIXED.sub(prefixed, s)
    return s


def base_subscript(span: str) -> int | None:
    """The base a span's number is written in (``52_8`` -> 8), when it is one number with a subscript."""
    m = _SUBSCRIPT.fullmatch(span.strip())
    if m is None or (m.group(1).isalpha() and len(m.group(1)) < 2):
        return None
    base = int(m.group(2) or m.group(3))
    return base if in_base(m.group(1), base) is not None else None


# --- plain-text maths --------------------------------------------------------------------------

_PLUS_MINUS = re.compile(r"\+\s*/\s*-|\+-(?=\s*[\d\\(a-zA-Z])")
_OO = re.compile(r"(?<![a-zA-Z\\])oo(?![a-zA-Z])")
_INF = re.compile(r"(?<![a-zA-Z\\])inf(?:inity)?(?![a-zA-Z])")
_U = re.compile(r"(?<=[)\]])\s*U\s*(?=[(\[])")
_SQRT_CALL = re.compile(r"(?<![\\a-zA-Z])sqrt\s*\(([^()]*)\)")
_SQRT_BARE = re.compile(r"(?<![\\a-zA-Z])sqrt\s*(\d+)")
# a function or a constant named as a program prints it ("sin(pi/6)", "2pi", "log(8)/log(2)"), and a power
# in parentheses ("e^(i pi/3)"): the parser reads the LaTeX command and braces
_PLAIN_FUNCTION = re.compile(
    r"(?<![\\a-zA-Z])(arcsin|arccos|arctan|sinh|cosh|tanh|sin|cos|tan|sec|csc|cot|ln|log|exp)(?=\s*\()"
)
_PLAIN_PI = re.compile(r"(?<![\\a-zA-Z])pi(?![a-zA-Z])")
_POWER_PAREN = re.compile(r"\^\s*\(([^()]*)\)")
_PY_COMPLEX = re.compile(r"(?<![\w.])complex\s*\(\s*([-+]?[\d.]+)\s*,\s*([-+]?[\d.]+)\s*\)")
_JULIA_IM = re.compile(r"(?<=\d)\s*im(?![a-zA-Z])")
_J_UNIT = re.compile(r"(?<=[\d.)\s+\-])j(?![a-zA-Z])|^j(?![a-zA-Z])")
_ANGLE_TEXT = re.compile(r"^<\s*([^<>]*,[^<>]*)>$")
_RELATION_SPELLING = {"geqq": r"\ge", "leqq": r"\le", "geqslant": r"\ge", "leqslant": r"\le"}
_RELATION_VARIANTS = re.compile(r"\\(geqq|leqq|geqslant|leqslant|ngeq|nleq|gtreqless|eqslantgtr)(?![a-zA-Z])")


#: (a substring the rewrite needs, its pattern, the LaTeX it writes), in order
_ASCII_REWRITES = (
    ("oo", _OO, r"\\infty"),
    ("inf", _INF, r"\\infty"),
    ("U", _U, r" \\cup "),
    ("sqrt", _SQRT_CALL, r"\\sqrt{\1}"),
    ("sqrt", _SQRT_BARE, r"\\sqrt{\1}"),
    ("pi", _PLAIN_PI, r"\\pi "),
    ("(", _PLAIN_FUNCTION, r"\\\1"),
)


def ascii_math(s: str) -> str:
    r"""Maths as keyboards and programs print it, in the LaTeX the parser reads.

    Examples:
        >>> ascii_math("2 +/- sqrt(3)"), ascii_math("(-oo, 0) U (1, oo)"), ascii_math("3+4j")
        ('2 \\pm \\sqrt{3}', '(-\\infty, 0) \\cup (1, \\infty)', '3+4i')
        >>> ascii_math("complex(3, -4)"), ascii_math("<1, 2>"), ascii_math(r"x \geqq 2")
        ('(3-4i)', '(1, 2)', 'x \\ge 2')
        >>> ascii_math("sin(pi/6)"), ascii_math("2pi"), ascii_math("5 e^(i pi/3)"), ascii_math("5∠60°")
        ('\\sin(\\pi /6)', '2\\pi ', '5 e^{i \\pi /3}', '5\\angle 60°')
    """
    if "+" in s and ("+/" in s or "+-" in s or "+ /" in s):
        s = _PLUS_MINUS.sub(r"\\pm", s)
    for marker, pattern, spelled in _ASCII_REWRITES:  # each guarded by a substring: most spans hold none
        if marker in s:
            s = pattern.sub(spelled, s)
    if "(" in s and "^" in s:
        s = _POWER_PAREN.sub(r"^{\1}", s)
    if "∠" in s:  # a phasor as text: 5∠60°
        s = s.replace("∠", "\\angle ")
    if "complex" in s:
        s = _PY_COMPLEX.sub(lambda m: f"({m.group(1)}{'' if m.group(2)[0] in '+-' else '+'}{m.group(2)}i)", s)
    if "im" in s and _JULIA_IM.search(s):
        s = _JULIA_IM.sub("i", s)  # Julia's imaginary unit: 3 + 4im
    if "j" in s and "i" not in s.replace("\\", "") and _J_UNIT.search(s) and not re.search(r"[a-hk-zA-Z]", s):
        s = _J_UNIT.sub("i", s)  # Python's imaginary unit, where no other letter is in the span
    if s.startswith("<") and (m := _ANGLE_TEXT.match(s)):
        s = f"({m.group(1).strip()})"
    if "\\" in s and "eq" in s:
        s = _RELATION_VARIANTS.sub(lambda m: _RELATION_SPELLING.get(m.group(1), m.group(0)), s)
    return s


_CIS = re.compile(r"^(.*?)\s*(?:\\text|\\operatorname|\\mathrm)?\s*\{?\s*cis\s*\}?\s*(\(.*\)|\{.*\}|\\[a-z]+.*|\d.*)$")
_PHASOR = re.compile(r"^(.+?)\s*\\angle\s*(.+)$")
_IN_DEGREES = re.compile(rf"\s*([-+]?\d+(?:\.\d+)?)\s*{_DEG}\s*")


def _exponential(r: str, theta: str) -> str:
    r"""``r e^{i theta}``, an angle written in degrees taken to radians ("60°", ``60^\circ``)."""
    deg = _IN_DEGREES.fullmatch(theta)
    theta = f"{deg.group(1)} \\pi / 180" if deg else theta
    return f"({r}) e^{{({theta}) i}}"


def polar(s: str) -> str:
    r"""A complex number in polar form as ``r e^{i\theta}``: ``2\text{cis}(\pi)``, ``\sqrt{2}\angle 45^\circ``.

    Examples:
        >>> polar(r"2\text{cis}(\pi)"), polar(r"\sqrt{2} \angle 45^\circ")
        ('(2) e^{(\\pi) i}', '(\\sqrt{2}) e^{(45 \\pi / 180) i}')
    """
    if "cis" in s and (m := _CIS.match(s)) and m.group(2):
        r, theta = m.group(1).strip() or "1", m.group(2).strip()
        return _exponential(r, theta[1:-1] if theta[0] in "({" else theta)
    if "\\angle" in s and (m := _PHASOR.match(s)):
        return _exponential(m.group(1).strip(), m.group(2).strip())
    return s


# --- vectors -----------------------------------------------------------------------------------

# LaTeX's angle brackets, and the Unicode ones a model prints ("⟨2, -1, 3⟩", "〈1, 2〉")
_LANGLE = re.compile(r"(?:\\langle|⟨|〈)\s*(.*?)\s*(?:\\rangle|⟩|〉)")
_UNIT_VECTOR = re.compile(r"\\(?:mathbf|vec|hat|boldsymbol|bm)\s*\{?\s*([ijk])\s*\}?|\b([ijk])\s*\\hat|\\hat\s*([ijk])")
_NAMED_POINT = re.compile(r"^[A-Z](?:_\{?\w+\}?|')?\s*(\(.*\))$")
_NESTED = re.compile(r"^\[\s*\[.*\]\s*\]$")


# a term of a sum of unit vectors once each unit is marked "@i": its sign, its coefficient, its unit
_UNIT_TERM = re.compile(r"([-+]?)\s*([^@+\-]*?)\s*(?:\\cdot|\\times)?\s*@([ijk])")


def _unit_vector_tuple(s: str) -> str | None:
    """``a\\mathbf{i} + b\\mathbf{j} + c\\mathbf{k}`` as ``(a, b, c)`` (a missing unit is 0)."""
    marked = _UNIT_VECTOR.sub(lambda m: f"@{m.group(1) or m.group(2) or m.group(3)}", s)
    if "@" not in marked or re.search(r"[ijk](?![a-zA-Z])", re.sub(r"@[ijk]|\\[a-zA-Z]+", "", marked)):
        return None
    coeffs = {"i": "0", "j": "0", "k": "0"}
    terms = _UNIT_TERM.findall(marked)
    rest = _UNIT_TERM.sub("", marked).strip()
    if rest or not terms:
        return None
    for sign, coeff, unit in terms:
        coeff = coeff.strip() or "1"
        coeffs[unit] = f"-{coeff}" if sign == "-" else coeff
    units = "ijk" if any(u == "k" for _, _, u in terms) else "ij"
    return "(" + ", ".join(coeffs[u] for u in units) + ")"


_PLAIN_UNIT = re.compile(r"(?<![a-zA-Z\\])([ijk])(?![a-zA-Z])")
_TRANSPOSED = re.compile(r"^([\[(].*[\])])\s*\^\s*\{?\s*(?:T|\\top|\\intercal|\\mathsf\{T\}|\\mathrm\{T\})\s*\}?$")


def _plain_unit_vector_tuple(s: str) -> str | None:
    """``2i - 3j + k`` in plain text as ``(2, -3, 1)``: only with ``j`` or ``k`` among two units or more
    (``3 + 4i`` and Python's ``3 + 4j`` are complex numbers) and every term on a unit."""
    units = set(_PLAIN_UNIT.findall(s))
    if len(units) < 2 or not units & {"j", "k"} or re.search(r"[a-hl-zA-Z]", s):
        return None
    return _unit_vector_tuple(_PLAIN_UNIT.sub(r"\\mathbf{\1}", s))


def _nested_list(s: str) -> str | None:
    """``[[1, 2], [3, 4]]`` (a matrix as Python prints it) as a ``pmatrix``."""
    rows = re.findall(r"\[([^\[\]]*)\]", s[1:-1])
    if not rows or re.sub(r"\[[^\[\]]*\]|[\s,]", "", s[1:-1]):
        return None
    cells = [[c.strip() for c in r.split(",")] for r in rows]
    if len({len(r) for r in cells}) != 1 or any(not c for r in cells for c in r):
        return None
    return "\\begin{pmatrix}" + " \\\\ ".join(" & ".join(r) for r in cells) + "\\end{pmatrix}"


def vectors(s: str) -> str:
    r"""Vectors in the notations people write them, as a tuple or a matrix.

    Examples:
        >>> vectors(r"\langle 1, 2, 3 \rangle"), vectors(r"\mathbf{i} - 2\mathbf{j}"), vectors("P(3, 4)")
        ('(1, 2, 3)', '(1, -2)', '(3, 4)')
        >>> vectors("[[1], [2]]")
        '\\begin{pmatrix}1 \\\\ 2\\end{pmatrix}'
        >>> vectors("2i - 3j + k"), vectors("3 + 4j"), vectors("[1, 2, 3]^T")
        ('(2, -3, 1)', '3 + 4j', '[1, 2, 3]')
    """
    if "\\langle" in s or "⟨" in s or "〈" in s:
        s = _LANGLE.sub(r"(\1)", s)
    if ("i" in s or "j" in s or "k" in s) and ("\\" in s) and (t := _unit_vector_tuple(s)) is not None:
        return t
    if ("j" in s or "k" in s) and "\\" not in s and (t := _plain_unit_vector_tuple(s)) is not None:
        return t
    if "^" in s and s[-1:] in "T}p" and (m := _TRANSPOSED.match(s)):  # a row written transposed: a column
        s = m.group(1)
    if s[:1].isupper() and (m := _NAMED_POINT.match(s)) and "," in m.group(1):
        return m.group(1)
    if s.startswith("[[") and _NESTED.match(s) and (mat := _nested_list(s)) is not None:
        return mat
    return s


# --- intervals -----------------------------------------------------------------------------------

_EUROPEAN = re.compile(r"^([\]\[])([^\[\]]*?[,;][^\[\]]*?)([\]\[])$")


def european_interval(s: str) -> str:
    """An interval in European notation, a reversed bracket for an open end: ``]1, 2]`` -> ``(1, 2]``.

    Examples:
        >>> european_interval("]1, 2["), european_interval("[0; 1["), european_interval("[1, 2]")
        ('(1, 2)', '[0; 1)', '[1, 2]')
    """
    if not (s.startswith("]") or s.endswith("[")):
        return s
    m = _EUROPEAN.match(s)
    if m is None:
        return s
    left = "(" if m.group(1) == "]" else "["
    right = ")" if m.group(3) == "[" else "]"
    return f"{left}{m.group(2)}{right}"


# --- environments ------------------------------------------------------------------------------

_LAYOUT_ENV = re.compile(
    r"\\begin\{(aligned|align\*?|gathered|gather\*?|split|equation\*?|eqnarray\*?|cases|array)\}(?:\{[^{}]*\})?"
    r"(.*?)\\end\{\1\}",
    re.DOTALL,
)


# a row of a system's solution written in ``cases``: one unknown set to a value, no condition
_SYSTEM_ROW = re.compile(r"^[a-zA-Z](?:_\{?\w+\}?)?\s*=\s*[^=<>,\\]*(?:\\(?:frac|sqrt|dfrac)[^=<>,]*)?$")


def environments(s: str) -> str:
    r"""Layout environments left in an answer (``aligned``, ``align*``, ``gathered``; an ``array`` of
    equations; ``cases`` whose rows each set one unknown, a system's solution) read as their rows, a
    list when there are several (``cases`` with conditions is a piecewise definition, kept).

    Examples:
        >>> environments(r"\begin{aligned} x &= 5 \end{aligned}")
        'x = 5'
        >>> environments(r"\begin{array}{c} x = 1 \\ y = 2 \end{array}")
        'x = 1, y = 2'
        >>> environments(r"\begin{cases} x = 1 \\ y = -2 \end{cases}")
        'x = 1, y = -2'
    """
    if "\\begin" not in s:
        return s

    def rows(m: re.Match[str]) -> str:
        if m.group(1) == "array" and "=" not in m.group(2):
            return m.group(0)  # an array of values is a matrix
        parts = [r.replace("&", " ").strip() for r in re.split(r"\\\\", m.group(2))]
        if m.group(1) == "cases" and not all(_SYSTEM_ROW.match(p) for p in parts if p):
            return m.group(0)  # a piecewise definition, not a system's solution
        return ", ".join(re.sub(r"\s+", " ", p) for p in parts if p)

    return _LAYOUT_ENV.sub(rows, s)


# --- chances -----------------------------------------------------------------------------------

_CHANCE = re.compile(r"^(\d+)\s+(?:out\s+of|in)\s+(\d+)$", re.IGNORECASE)
_RATIO_TO = re.compile(r"^(\d+)\s+to\s+(\d+)$", re.IGNORECASE)


def chances(s: str) -> str:
    r"""A chance in words as the fraction it is: "3 out of 8", "1 in 4" -> ``\frac{3}{8}``; a ratio in
    words as one: "2 to 3" -> ``2:3`` (a range is never a whole answer span).

    Examples:
        >>> chances("1 in 4"), chances("3 out of 8"), chances("2 to 3")
        ('\\frac{1}{4}', '\\frac{3}{8}', '2:3')
    """
    if " to " in s and (r := _RATIO_TO.match(s)):  # a span that is only "2 to 3" is a ratio in words
        return f"{r.group(1)}:{r.group(2)}"
    if " in " not in s and " of " not in s:
        return s
    m = _CHANCE.match(s)
    return f"\\frac{{{m.group(1)}}}{{{m.group(2)}}}" if m and int(m.group(2)) else s


# --- multi-part answers --------------------------------------------------------------------------

_LABEL = re.compile(
    r"(?:^|(?<=[\s,;.]))(?:\\text\{\s*)?(?:part\s*)?\(?([a-h]|i{1,3}|iv|v)\)\s*:?\s*(?:\})?", re.IGNORECASE
)
_ORDER = ("abcdefgh", ("i", "ii", "iii", "iv", "v"))


def labelled_parts(s: str) -> list[str] | None:
    """The parts of a multi-part answer labelled in order (``(a) 3 (b) 5``, ``Part (a): 3; Part (b): 5``,
    ``(i) 2, (ii) 7``), or None when ``s`` is not one.

    Examples:
        >>> labelled_parts("(a) 3 (b) 5"), labelled_parts("Part (a): x = 2; Part (b): 7")
        (['3', '5'], ['x = 2', '7'])
        >>> labelled_parts("(a) 3") is None, labelled_parts("(b) 3 (a) 5") is None
        (True, True)
    """
    if ")" not in s or len(s) > 400:
        return None
    found = list(_LABEL.finditer(s))
    if len(found) < 2 or found[0].start() != 0:
        return None
    labels = [m.group(1).lower() for m in found]
    letters, romans = _ORDER
    if labels != list(letters[: len(labels)]) and labels != list(romans[: len(labels)]):
        return None
    parts = [s[m.end() : nxt.start() if nxt else len(s)].strip(" ,;.") for m, nxt in zip(found, [*found[1:], None])]
    return parts if all(parts) else None


# --- constants of integration ------------------------------------------------------------------

_CONSTANT = re.compile(
    r"\s*\+\s*(?:(?P<upper>[CK](?:_\s*\{?\s*\d\s*\}?)?|\\text\s*\{\s*(?:C|const|constant)\s*\}|\\mathrm\s*\{\s*C\s*\})"
    r"|(?P<lower>c(?:_\s*\{?\s*\d\s*\}?)?))\s*$"
)


def integration_constant(span: str) -> tuple[str, bool] | None:
    r"""``span`` without its trailing constant of integration, and whether the constant was a lower-case
    ``c`` (a letter that may be a given constant: it counts only when both sides carry one), or None
    when it ends with none. Only an expression in another variable has one (``C + 1`` is no integral).

    Examples:
        >>> integration_constant("x^2 + C"), integration_constant(r"\sin x + c"), integration_constant("2 + C")
        (('x^2', False), ('\\sin x', True), None)
    """
    if "+" not in span:
        return None
    m = _CONSTANT.search(span)
    if m is None:
        return None
    head = span[: m.start()].strip()
    if not head or not re.search(r"(?<!\\)\b[a-zA-Z]\b|[a-zA-Z](?=[\^(_])", re.sub(r"\\[a-zA-Z]+", " ", head)):
        return None
    return head, m.group("lower") is not None


def rewrite(s: str) -> str:
    """Every rewrite of this module, in order (an environment's rows first, a vector's parts last)."""
    s = environments(s)
    s = siunitx(s)
    s = repeating(s)
    s = grouping(s)
    s = degrees_minutes(s)
    s = bases(s)
    s = ascii_math(s)
    s = polar(s)
    s = vectors(s)
    s = european_interval(s)
    return chances(s)
