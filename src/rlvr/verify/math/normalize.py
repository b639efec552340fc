"""Pure ``str -> str`` clean-up of an answer span before it is parsed.

LaTeX spelling variants, Unicode maths, thousands separators, units, degrees and
percent words are brought to one form. Percent is *kept* as a trailing ``%`` so the
parser can offer both readings (``50%`` is 50 and 0.5); a number without ``%`` is
never rescaled.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rlvr.verify.math import forms

_SUPERSCRIPTS = str.maketrans(
    {
        "⁰": "0",
        "¹": "1",
        "²": "2",
        "³": "3",
        "⁴": "4",
        "⁵": "5",
        "⁶": "6",
        "⁷": "7",
        "⁸": "8",
        "⁹": "9",
        "⁻": "-",
        "⁺": "+",
    }
)
_SUPER_RUN = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+")
_VULGAR = {
    "½": "1/2",
    "⅓": "1/3",
    "⅔": "2/3",
    "¼": "1/4",
    "¾": "3/4",
    "⅕": "1/5",
    "⅖": "2/5",
    "⅗": "3/5",
    "⅘": "4/5",
    "⅙": "1/6",
    "⅚": "5/6",
    "⅛": "1/8",
    "⅜": "3/8",
    "⅝": "5/8",
    "⅞": "7/8",
}
_UNICODE_MATH = {
    "√": "\\sqrt",
    "∞": "\\infty",
    "×": "\\times",
    "·": "\\cdot",
    "⋅": "\\cdot",
    "÷": "/",
    "−": "-",
    "–": "-",
    "—": "-",
    "≤": "\\le ",
    "≥": "\\ge ",
    "⩾": "\\ge ",
    "⩽": "\\le ",
    "≧": "\\ge ",
    "≦": "\\le ",
    "≠": "\\ne ",
    "≡": "\\equiv ",
    "π": "\\pi ",
    "∪": "\\cup ",
    "∩": "\\cap ",
    "∈": "\\in ",
    "∅": "\\emptyset ",
    "±": "\\pm ",
    "∓": "\\mp ",
    "≈": "\\approx ",
    "°": "^\\circ",
    "θ": "\\theta ",
    "α": "\\alpha ",
    "β": "\\beta ",
}
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE_MATH)))

_DOUBLE_ESCAPED = re.compile(r"(?<!\\)\\\\(?=[a-zA-Z])")
_DELIMS = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$")
_SPACING = re.compile(r"(?<!\\)\\[,;:! ]|\\q?quad|~|\\(?:display|text|script)style\b|\\hspace\{[^}]*\}")
_LEFT_RIGHT = re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?![a-zA-Z])\s*\.?")
# a font size or a display style changes how the value looks, never what it is: \tiny 12, \displaystyle
_SIZES = re.compile(
    r"\\(?:tiny|scriptsize|footnotesize|small|normalsize|large|Large|LARGE|huge|Huge|displaystyle|textstyle)(?![a-zA-Z])\s*"
)
# Python's digit separators: 10_000 (a base subscript is one or two digits: 101_2, FF_{16})
_UNDERSCORE_GROUPS = re.compile(r"(?<![\w.])(\d{1,3})((?:_\d{3})+)(?![\w.])")
_FRAC_VARIANTS = re.compile(r"\\[dtc]frac\b")
#: a degree mark in LaTeX (after :func:`unicode_to_latex`, "°" is ``^\circ``): taken off, 45° reads 45
DEGREES = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ\b|\\circ\b|\\degree\b|\bdegrees?\b")
_TRIG_DEGREES = re.compile(
    r"\\(sin|cos|tan|sec|csc|cot)\s*\(?\s*([-+]?\d+(?:\.\d+)?)\s*(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ\b|\\degree\b)\s*\)?"
)
_TEXT_CMD = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mbox|operatorname|mathit)\s*\{([^{}]*)\}"
)
_TEXTCOLOR = re.compile(r"\\textcolor\s*\{[^{}]*\}\s*\{([^{}]*)\}")
_COLOR = re.compile(r"\\color\s*\{[^{}]*\}")
_PERCENT = re.compile(r"\\%|\s*\b(?:percentage|percent|pct)\b\.?")
_THOUSANDS_MARKED = re.compile(r"(\d)(?:,\\!\s*|\{,\}|\\,|\\!)(?=\d{3}(?!\d))")
# Not "(12,102)": a pair in brackets is an interval or a tuple, not a number.
_THOUSANDS_PLAIN = re.compile(
    r"(?<![\d.,])(?<![(\[]\s)(?<![(\[])[1-9]\d{0,2}(?:,\d{3})+(?![\d,])(?!\s?[)\]])(?:\.\d+)?"
)
_SPACED_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?: \d{3})+(?:\.\d+)?$")
_DOLLAR_WORD = re.compile(r"\\\$")
# a unit's letters, with powers inside the braces: "m/s^2", "m s^{-1}", "kg m^{2}"
_UNIT_BODY = r"(?:[a-zA-Z/ .]|\\cdot\s*|\\[,;!]\s*|\^\s*(?:-?\d|\{\s*-?\d\s*\}))*"
# Trailing units after a quantity: "35 cm", "125 miles", "15 cm^2", "50 km/h", "7 \mathrm{m}^2",
# "50 \text{ km/h}" (one letter is a unit only inside \text/\mathrm: "7 m" may be a product).
_TRAILING_UNITS = re.compile(
    r"(?<=[\d}.)])\s*(?:(?:\\(?:text|mathrm|mbox|textrm|rm)\s*\{(?!\s*[eid]\s*\})\s*[a-zA-Z]" + _UNIT_BODY + r"\}"
    r"|[a-zA-Z]{2,}\.?(?:/[a-zA-Z]+)?)(?:\s*\^\s*\{?\d\}?)?\s*)+$"
)
# Units written in \text after a symbol: "36\pi \text{ cm}^2" (never the constants \mathrm{e}, \mathrm{i}).
_TEXT_UNITS = re.compile(
    r"(?<=\S)\s*(?:\\(?:text|mathrm|mbox|textrm|rm)\s*\{(?!\s*[eid]\s*\})\s*[a-zA-Z]" + _UNIT_BODY + r"\}"
    r"(?:\s*\^\s*\{?\d\}?)?\s*)+$"
)
_TEXT_MATH = re.compile(r"\\(?:text|mbox|textrm|textbf)\s*\{\s*\$([^$]*)\$\s*\}")
_TEXT_PERCENT = re.compile(r"\\(?:text|mathrm|mbox|textrm)\s*\{\s*%\s*\}")


_CHOOSE = re.compile(r"\{?\s*([\w.]+)\s*\\choose\s*([\w.]+)\s*\}?")
# "x = pi/4 + k pi, k in Z": the general solution's index, stated after it
_INTEGER_INDEX = re.compile(
    r"\s*,?\s*(?:\(|\\text\s*\{\s*)?(?:where|for|with)?\s*(?:all|any|some)?\s*(?:\}\s*)?[kn]\s*"
    r"(?:\\in\s*\\mathbb\s*\{?\s*Z\s*\}?|\\in\s*\\Z\b|\\text\s*\{\s*is an integer\s*\}|is an integer)\s*\)?\s*$"
)


def unicode_to_latex(s: str) -> str:
    """Unicode maths to LaTeX: superscripts, vulgar fractions, symbols, full-width digits."""
    s = _SUPER_RUN.sub(lambda m: "^{" + m.group(0).translate(_SUPERSCRIPTS) + "}", s)
    for k, v in _VULGAR.items():
        if k in s:
            # "2½" is a mixed number: 2 + 1/2
            s = re.sub(rf"(\d){re.escape(k)}", rf"(\1+{v})", s).replace(k, f"({v})")
    s = _UNICODE_RE.sub(lambda m: _UNICODE_MATH[m.group(0)], s)
    # Full-width digits and letters (NFKC), after the superscripts were handled.
    return unicodedata.normalize("NFKC", s)


def strip_thousands(s: str) -> str:
    """Remove thousands separators (``1,234``, ``1\\,000``, ``1{,}000``, ``32,\\! 349``).

    Only groups of exactly three digits are joined: ``1,22`` stays a list, and
    ``32, 349`` (comma and space) stays two numbers.
    """
    s = _THOUSANDS_MARKED.sub(r"\1", s)
    s = _THOUSANDS_PLAIN.sub(lambda m: m.group(0).replace(",", ""), s)
    if _SPACED_THOUSANDS.match(s.strip()):
        s = s.replace(" ", "")
    return s


#: A plain number, the commonest span (ASCII digits, a minus, a decimal point): normalised and
#: parsed as it stands (:func:`normalize`, :func:`rlvr.verify.math.parse.parse_alts`).
PLAIN_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


@lru_cache(maxsize=65_536)  # pure, and the same spans recur (a gold across its group, common answers)
def normalize(span: str) -> str:
    """Bring an answer span to one canonical LaTeX-ish spelling (units stay: the parser reads them).

    Examples:
        >>> normalize(r"$\\dfrac{1}{2}\\,\\text{cm}$")
        '\\\\frac{1}{2} \\\\text{cm}'
        >>> normalize("1,234,567")
        '1234567'
        >>> normalize(r"50\\%")
        '50%'
    """
    s = span.strip()
    if PLAIN_NUMBER.fullmatch(s):  # the commonest span: nothing in _canonical changes it (tested)
        return s
    return _canonical(s)


def _canonical(s: str) -> str:
    """:func:`normalize`'s rewrites, in order, on a stripped span."""
    s = _DOUBLE_ESCAPED.sub(r"\\", s)
    s = _TEXT_MATH.sub(r" \1 ", s)  # \text{$\frac34$}: maths written inside text
    s = unicode_to_latex(s)
    s = _DELIMS.sub(" ", s.replace("\\$", " "))
    s = _LEFT_RIGHT.sub("", s)
    if "style" in s or "size" in s or "tiny" in s or "small" in s or "arge" in s or "uge" in s:
        s = _SIZES.sub("", s)
    if "color" in s:  # a colour is how a value looks (white ones were taken out as unseen before)
        s = _COLOR.sub("", _TEXTCOLOR.sub(r"\1", s))
    if "_" in s:
        s = _UNDERSCORE_GROUPS.sub(lambda m: m.group(1) + m.group(2).replace("_", ""), s)
    s = _FRAC_VARIANTS.sub(r"\\frac", s)
    s = forms.rewrite(s)  # written forms: siunitx, repeating decimals, bases, vectors... (forms.py)
    s = _CHOOSE.sub(r"\\binom{\1}{\2}", s) if "choose" in s else s
    s = _INTEGER_INDEX.sub("", s) if ("Z" in s or "integer" in s) else s
    s = _TRIG_DEGREES.sub(r"\\\1(\\frac{\2\\pi}{180})", s)  # sin 60° is sin(pi/3), not sin(60)
    s = DEGREES.sub("", s)
    s = _TEXT_PERCENT.sub("%", _PERCENT.sub("%", s))
    s = strip_thousands(s)
    s = re.sub(r"^\\(?:boxed|fbox)\s*\{(?!.*\}\s*$)", "", s)  # a box that never closed
    s = _SPACING.sub(" ", s)
    s = re.sub(r"\\varnothing\b|\\O\b|\\\{\s*\\\}", r"\\emptyset", s)
    s = s.replace("\\dots", "").replace("\\ldots", "").replace("\\cdots", "")
    s = re.sub(r"\s+", " ", s).strip()
    s = s.rstrip(".").strip()
    if s.endswith((",", ";")):  # sentence punctuation inside display maths ("\\[ 17^2 - 15^2 = 64, \\]")
        s = re.sub(r"(?<!\\)[,;]+$", "", s).rstrip(".").strip()
    return s


def unwrap_text(s: str) -> str:
    """``\\text{...}``-like commands replaced by their content."""
    for _ in range(3):  # nested \text{\textbf{..}}
        s2 = _TEXT_CMD.sub(lambda m: m.group(1), s)
        if s2 == s:
            break
        s = s2
    return s


def strip_units(s: str) -> str:
    """Drop trailing unit words after a quantity ("35 cm" -> "35")."""
    out = _TEXT_UNITS.sub("", _TRAILING_UNITS.sub("", s)).strip()
    return out or s
