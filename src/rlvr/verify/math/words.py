"""English number words as numbers: "forty-two", "one hundred and five", "three point five", "a half".

A gold written in words ("twelve") must equal the model's ``\\boxed{12}``; a string comparison
would call a right answer ``wrong``. Only whole phrases of number words parse: "twelve apples"
is not a number here (the unit is stripped before, where it is one).
"""

from __future__ import annotations

import re
from fractions import Fraction

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i >= 2}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_FRACTIONS = {
    "half": 2,
    "halves": 2,
    "third": 3,
    "thirds": 3,
    "quarter": 4,
    "quarters": 4,
    "fourth": 4,
    "fourths": 4,
    "fifth": 5,
    "fifths": 5,
    "sixth": 6,
    "sixths": 6,
    "eighth": 8,
    "eighths": 8,
    "tenth": 10,
    "tenths": 10,
}
_WORD = re.compile(r"[a-z]+")


def _cardinal(words: list[str]) -> int | None:
    """Whole number from words such as ``["one", "hundred", "and", "five"]`` (None: not one)."""
    total = current = 0
    last = None  # the kind of the previous word: unit, tens, hundred, scale, a
    for w in words:
        if w == "and":
            if last not in ("hundred", "scale"):
                return None
            continue
        if last == "a" and w != "hundred" and w not in _SCALES:
            return None
        if w == "a" and last is None:  # "a hundred", "a thousand"
            current, last = 1, "a"
        elif w in _UNITS:
            if last == "unit" or (last == "tens" and _UNITS[w] >= 10):
                return None
            current, last = current + _UNITS[w], "unit"
        elif w in _TENS:
            if last in ("unit", "tens"):
                return None
            current, last = current + _TENS[w], "tens"
        elif w == "hundred":
            if current >= 100 or last == "hundred":
                return None
            current, last = (current or 1) * 100, "hundred"
        elif w in _SCALES:
            total, current, last = total + (current or 1) * _SCALES[w], 0, "scale"
        else:
            return None
    return None if last in (None, "a") else total + current


def parse_number_words(text: str) -> Fraction | None:
    """The value of an English number phrase, or None when ``text`` is anything else.

    Examples:
        >>> parse_number_words("forty-two"), parse_number_words("minus three quarters")
        (Fraction(42, 1), Fraction(-3, 4))
        >>> parse_number_words("twelve apples") is None
        True
    """
    t = text.strip().lower().replace("-", " ").rstrip(".")
    if not t or len(t) > 120 or not re.fullmatch(r"[a-z ]+", t):
        return None
    words = _WORD.findall(t)
    if not words:  # "-", "- -": dashes alone name no number
        return None
    sign = 1
    if words[0] in ("minus", "negative"):
        sign, words = -1, words[1:]
    if "point" in words:  # "three point one four"
        i = words.index("point")
        whole = _cardinal(words[:i]) if i else 0
        digits = words[i + 1 :]
        if whole is None or not digits or any(d not in _UNITS or _UNITS[d] > 9 for d in digits):
            return None
        return sign * (whole + Fraction(int("".join(str(_UNITS[d]) for d in digits)), 10 ** len(digits)))
    if words and words[-1] in _FRACTIONS:  # "a half", "three quarters", "two and a half"
        den = _FRACTIONS[words[-1]]
        head = words[:-1]
        whole = 0
        if "and" in head:
            j = head.index("and")
            whole = _cardinal(head[:j])
            head = head[j + 1 :]
            if whole is None:
                return None
        num = 1 if head in ([], ["a"], ["one"]) else _cardinal(head)
        if num is None or (den == 2 and words[-1] == "half" and num != 1):
            return None
        return sign * (whole + Fraction(num, den))
    value = _cardinal(words)
    return None if value is None else Fraction(sign * value)
