r"""Answers written in words that name a set or a verdict: "no solution", "all real numbers",
"all real numbers except 3", "does not exist".

Each is read as the value it names, so it equals the other ways of writing it (``\emptyset``,
``\mathbb{R}``, ``(-\infty, \infty)``, ``\mathbb{R} \setminus \{3\}``, ``DNE``), and only those.
:data:`PHRASE` finds one in prose, for the extractor: a text answer stated last beats the numbers
and maths written before it ("x = 2 does not work, so the equation has no solution").
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sympy

_NO_SOLUTION = (
    r"no\s+(?:real\s+|integer\s+|possible\s+)?(?:solutions?|roots?|such\s+(?:numbers?|values?|x))"
    r"|(?:the\s+)?empty\s+set|none|no\s+(?:real\s+)?values?|nothing"
)
_ALL_REALS = (
    r"(?:all|any|every)\s+real\s+(?:numbers?|values?|x)|all\s+reals|(?:the\s+)?(?:set\s+of\s+)?real\s+numbers"
    r"|all\s+x|every\s+x|infinitely\s+many\s+solutions|(?:all\s+)?x\s+in\s+\\mathbb\s*\{?\s*R\s*\}?"
    r"|(?:every|each|any)\s+real\s+number\s+(?:is\s+a\s+solution|works|satisfies\s+(?:it|the\s+(?:equation|inequality)))"
)
_DNE = r"does\s*n[o']t\s+exist|dne|undefined|no\s+limit|not\s+defined|doesnt\s+exist"

_WHOLE = re.compile(
    rf"^(?:(?P<no>{_NO_SOLUTION})|(?P<dne>{_DNE})|(?P<all>{_ALL_REALS})"
    r"(?:\s*(?:,\s*)?(?:except|but|other\s+than|excluding|besides)\s+(?:for\s+)?(?:x\s*=\s*)?(?P<except>.+))?)$",
    re.IGNORECASE,
)

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:/\d+)?"
# the values an "all real numbers" in prose leaves out ("any real number except 2 and 3")
_EXCEPT = (
    rf"(?:\s*,?\s*(?:except|other\s+than|excluding|besides|apart\s+from)\s+(?:for\s+)?(?:x\s*=\s*)?{_NUMBER}"
    rf"(?:\s*(?:,|\band\b|\bor\b)\s*(?:x\s*=\s*)?{_NUMBER})*)?"
)

#: A text answer stated in prose ("... has no solution", "the limit does not exist", "x can be any
#: real number except 2").
PHRASE = re.compile(
    rf"\b(?:has|have|there\s+(?:is|are)|with|gives|yields|so|thus|therefore|hence|is|are|be|:)\s+"
    rf"(?P<phrase>{_NO_SOLUTION}|(?:{_ALL_REALS}){_EXCEPT})\b|\b(?P<dne>{_DNE})\b",
    re.IGNORECASE,
)


def is_text_answer(s: str) -> bool:
    """Whether ``s`` is, as a whole, a text answer of this module ("No solution.", "all real numbers")."""
    t = " ".join(s.strip().strip(".").split())
    return len(t) <= 120 and _WHOLE.match(t) is not None


def text_answer(s: str, scalar: Callable[[str], sympy.Expr | None]) -> tuple[sympy.Basic | str, ...] | None:
    """What a text answer (``s``, unwrapped from ``\\text{}``) names, or None when it is not one: a
    canonical phrase and/or a SymPy set.

    ``scalar`` reads each excepted value of "all real numbers except ..." (the parser's, passed in:
    the parser imports this module).

    Examples:
        >>> text_answer("No real solutions", lambda s: None)
        ('no solution', EmptySet)
        >>> text_answer("all real numbers except 3", lambda s: sympy.Integer(s))
        (Union(Interval.open(-oo, 3), Interval.open(3, oo)),)
    """
    t = " ".join(s.strip().strip(".").split())
    if len(t) > 120 or (not t[:1].isalpha() and not t.startswith("\\")):
        return None
    m = _WHOLE.match(t)
    if m is None:
        return None
    if m.group("no"):
        return ("no solution", sympy.S.EmptySet)
    if m.group("dne"):
        return ("does not exist",)
    if m.group("except") is None:
        return (sympy.S.Reals,)
    values = []
    for part in re.split(r"\s*(?:,|\band\b|\bor\b)\s*", m.group("except").strip()):
        number = scalar(part) if part else None
        if number is None or number.free_symbols:
            return None
        values.append(number)
    return (sympy.Complement(sympy.S.Reals, sympy.FiniteSet(*values)),) if values else None
