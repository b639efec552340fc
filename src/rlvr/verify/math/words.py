"""Number words as numbers: "forty-two", "one hundred and five", "three point five", "a half",
"seven ninths", "two dozen", "2.5 million", CJK numerals ("四十二", "一百零五", "三分之一", "1万"),
and, through :mod:`rlvr.verify.math.words_languages`, Spanish, French, German, Italian, Portuguese
and Russian ones ("doce", "zweiundvierzig", "сорок два").

A gold written in words ("twelve") must equal the model's ``\\boxed{12}``; a string comparison
would call a right answer ``wrong``. Only whole phrases of number words parse: "twelve apples"
is not a number here (the unit is stripped before, where it is one). "second(s)" is never a
fraction (it is a unit of time far more often than a half).
"""

from __future__ import annotations

import re
from fractions import Fraction

from rlvr.verify.math.words_languages import parse_foreign_number

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i >= 2}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_ORDINALS = {
    w: i
    for i, w in enumerate(
        "_ _ _ third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
        "fifteenth sixteenth seventeenth eighteenth nineteenth".split()
    )
    if i >= 3
} | {"twentieth": 20, "thirtieth": 30, "fortieth": 40, "fiftieth": 50, "hundredth": 100, "thousandth": 1000}
_FRACTIONS = (
    {
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
    | _ORDINALS
    | {f"{w}s": n for w, n in _ORDINALS.items()}
)
_WORD = re.compile(r"[a-z]+")
_DIGITS_SCALE = re.compile(r"([-+]?)\s*(\d+(?:\.\d+)?)\s*(hundred|thousand|million|billion|trillion|dozen)s?")


def _cardinal(words: list[str]) -> int | None:
    """Whole number from words such as ``["one", "hundred", "and", "five"]`` (None: not one)."""
    total = current = 0
    last = None  # the kind of the previous word: unit, tens, hundred, scale, a
    for w in words:
        if w == "and":
            if last not in ("hundred", "scale"):
                return None
            continue
        if last == "a" and w not in ("hundred", "dozen") and w not in _SCALES:
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
        elif w == "dozen":  # "a dozen", "two dozen", "half a dozen" (the caller's "half")
            if last not in ("unit", "tens", "a"):
                return None
            current, last = current * 12, "hundred"
        else:
            return None
    return None if last in (None, "a") else total + current


def parse_number_words(text: str) -> Fraction | None:
    """The value of a number phrase, or None when ``text`` is anything else.

    English first, then CJK numerals, then the other languages of
    :mod:`rlvr.verify.math.words_languages` ("doce", "quatre-vingt-douze", "сорок два").

    Examples:
        >>> parse_number_words("forty-two"), parse_number_words("minus three quarters")
        (Fraction(42, 1), Fraction(-3, 4))
        >>> parse_number_words("twelve apples") is None
        True
    """
    t = text.strip().lower().replace("-", " ").rstrip(".")
    if not t or len(t) > 120:
        return None
    if (m := _DIGITS_SCALE.fullmatch(t)) is not None:  # "2.5 million", "3 dozen"
        scale = 12 if m.group(3) == "dozen" else _SCALES[m.group(3)]
        return (-1 if m.group(1) == "-" else 1) * Fraction(m.group(2)) * scale
    if _CJK_CHAR.search(t):
        return parse_cjk_number(text)
    if not re.fullmatch(r"[a-z ]+", t) or (value := _english(t)) is None:
        return parse_foreign_number(t)  # "doce", "zweiundvierzig", "сорок два"
    return value


def _english(t: str) -> Fraction | None:
    """The value of a lower-case English number phrase (hyphens as spaces), or None."""
    words = _WORD.findall(t)
    if not words:  # "-", "- -": dashes alone name no number
        return None
    sign = 1
    if words[0] in ("minus", "negative"):
        sign, words = -1, words[1:]
    if words[:3] == ["half", "a", "dozen"] and len(words) == 3:
        return Fraction(sign * 6)
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


_CJK_CHAR = re.compile(r"[\u3000-\u9fff\uf900-\ufaff]")
_CJK_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "兩": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CJK_SMALL = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_CJK_LARGE = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8, "兆": 10**12}
_CJK = re.compile(r"[-负負]?[0-9.零〇一二两兩三四五六七八九十拾百佰千仟万萬亿億兆点點]+")


def _cjk_whole(t: str) -> int | None:
    """A whole CJK numeral: ``一百零五`` 105, ``两万三千`` 23000, ``十二`` 12, ``1万`` 10000."""
    total = section = digit = Fraction(0)
    seen = False
    i = 0
    while i < len(t):
        c = t[i]
        if c.isascii() and c.isdigit():  # "1万", "3千": Arabic digits before a CJK unit
            j = i
            while j < len(t) and t[j].isascii() and (t[j].isdigit() or t[j] == "."):
                j += 1
            value = Fraction(t[i:j])
            if value.denominator != 1 and (j == len(t) or t[j] not in _CJK_LARGE):
                return None
            digit, i, seen = value, j, True
            continue
        if c in _CJK_DIGITS:
            digit, seen = Fraction(_CJK_DIGITS[c]), True
        elif c in _CJK_SMALL:
            section += (digit or 1) * _CJK_SMALL[c]
            digit, seen = Fraction(0), True
        elif c in _CJK_LARGE:
            if not seen:
                return None
            total += (section + digit) * _CJK_LARGE[c]
            section = digit = Fraction(0)
        else:
            return None
        i += 1
    value = total + section + digit
    return int(value) if seen and value.denominator == 1 else None


def parse_cjk_number(text: str) -> Fraction | None:
    """The value of a Chinese or Japanese numeral, or None when ``text`` is anything else.

    Examples:
        >>> parse_cjk_number("一百零五"), parse_cjk_number("负三分之二"), parse_cjk_number("三点一四")
        (Fraction(105, 1), Fraction(-2, 3), Fraction(157, 50))
        >>> parse_cjk_number("四十二个") is None, parse_cjk_number("三又二分之一")
        (True, Fraction(7, 2))
    """
    t = text.strip().rstrip("。.")
    sign = 1
    if t[:1] in ("负", "負", "-"):
        sign, t = -1, t[1:]
    if "又" in t and ("分之" in t or "分の" in t):  # "三又二分之一": a whole and a fraction, 3 1/2
        whole, _, part = t.partition("又")
        w, f = _cjk_whole(whole), parse_cjk_number(part)
        return sign * (w + f) if w is not None and f is not None and f >= 0 else None
    for mark in ("分之", "分の"):  # "三分之一": one of three parts, the denominator first
        if mark in t:
            den, _, num = t.partition(mark)
            d, n = _cjk_whole(den), _cjk_whole(num)
            return sign * Fraction(n, d) if d and n is not None else None
    if not t or not _CJK.fullmatch(t) or t.isascii():
        return None
    for mark in ("点", "點"):  # "三点一四": digits after the point, one by one
        if mark in t:
            whole, _, frac = t.partition(mark)
            w = _cjk_whole(whole) if whole else 0
            if w is None:
                return None
            if w is None or not frac or any(c not in _CJK_DIGITS for c in frac):
                return None
            digits = "".join(str(_CJK_DIGITS[c]) for c in frac)
            return sign * (w + Fraction(int(digits), 10 ** len(digits)))
    value = _cjk_whole(t)
    return None if value is None else Fraction(sign * value)
