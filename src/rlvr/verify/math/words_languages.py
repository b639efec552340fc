"""Number words of other languages than English and Chinese: Spanish, French, German, Italian,
Portuguese ("doce", "quatre-vingt-douze", "zweiundvierzig", "quarantadue", "quarenta e dois") and
Russian ("сорок два"), with signs ("menos tres"), fractions ("tres cuartos", "zwei Drittel",
"три четверти"), halves ("dos y medio", "zweieinhalb", "два с половиной") and decimals
("tres coma cinco", "три целых пять десятых").

Cardinals come from the libraries made for them: ``text2num`` (Spanish, French, German, Italian,
Portuguese) and ``number-parser`` (Russian). What they leave, signs, fractions and decimals, is
read here from small per-language tables. A phrase must read as a number in every language it
parses in, with one value; a lone word that is also an English word ("once", Spanish 11; "elf",
German 11; "um", Portuguese 1; "due", Italian 2; "mil", a unit) or a programmer's ("null", German
0) is not read as a foreign number.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from number_parser import parse_number
from text_to_num import text2num

_LATIN = ("es", "fr", "de", "it", "pt")
_TEXT = re.compile(r"[a-zà-öø-ÿœß\u0400-\u04ff ]+")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LOOKALIKES = {"once", "elf", "um", "due", "mil", "null", "second"}
_LOOKALIKES |= {"non", "uns", "unes", "unos", "unas"}  # "no" (French, Italian); "some", not one

_MINUS = {
    "es": {"menos", "negativo", "negativa"},
    "fr": {"moins", "négatif", "négative"},
    "de": {"minus", "negativ"},
    "it": {"meno", "negativo", "negativa"},
    "pt": {"menos", "negativo", "negativa"},
    "ru": {"минус"},
}
# the word between a whole and a fraction ("dos y medio", "два с половиной")
_AND = {"es": {"y"}, "fr": {"et"}, "de": {"und"}, "it": {"e"}, "pt": {"e"}, "ru": {"и", "с"}}
_POINT = {
    "es": {"coma", "punto"},
    "fr": {"virgule", "point"},
    "de": {"komma", "punkt"},
    "it": {"virgola", "punto"},
    "pt": {"vírgula", "ponto"},
    "ru": {"запятая"},
}
_ZERO = {"cero", "zéro", "null", "zero", "ноль", "нуль"}
# a numerator of one written as an article ("un tercio", "la mitad", "eine Hälfte")
_ONE = {"un", "una", "une", "uno", "la", "ein", "eine", "um", "uma", "a", "одна", "один"}


def _forms(pairs: dict[str, int], *suffixes: str) -> dict[str, int]:
    """Each word with each inflection ending added: ``{"quinto": 5}`` with "s" gives "quintos" too."""
    return {w + s: n for w, n in pairs.items() for s in ("", *suffixes)}


_ROMANCE_ORDINALS = {  # es / it / pt ordinals as denominators, in their -o form
    "es": {"quinto": 5, "sexto": 6, "séptimo": 7, "octavo": 8, "noveno": 9, "décimo": 10, "centésimo": 100},
    "it": {"quinto": 5, "sesto": 6, "settimo": 7, "ottavo": 8, "nono": 9, "decimo": 10, "centesimo": 100},
    "pt": {"quinto": 5, "sexto": 6, "sétimo": 7, "oitavo": 8, "nono": 9, "décimo": 10, "centésimo": 100},
}
_DENOMINATORS = {
    "es": {"medio": 2, "medios": 2, "mitad": 2, "tercio": 3, "tercios": 3, "cuarto": 4, "cuartos": 4}
    | _forms(_ROMANCE_ORDINALS["es"], "s"),
    "fr": {"demi": 2, "demie": 2, "demis": 2, "moitié": 2, "tiers": 3, "quart": 4, "quarts": 4}
    | _forms(
        {"cinquième": 5, "sixième": 6, "septième": 7, "huitième": 8, "neuvième": 9, "dixième": 10, "centième": 100},
        "s",
    ),
    "de": {"halb": 2, "halbe": 2, "halben": 2, "hälfte": 2}
    | _forms(
        {
            "drittel": 3,
            "viertel": 4,
            "fünftel": 5,
            "sechstel": 6,
            "siebtel": 7,
            "achtel": 8,
            "neuntel": 9,
            "zehntel": 10,
            "hundertstel": 100,
        }
    ),
    "it": {"mezzo": 2, "mezzi": 2, "metà": 2, "terzo": 3, "terzi": 3, "quarto": 4, "quarti": 4}
    | {w[:-1] + e: n for w, n in _ROMANCE_ORDINALS["it"].items() for e in ("o", "i")},
    "pt": {"meio": 2, "meios": 2, "metade": 2, "terço": 3, "terços": 3, "quarto": 4, "quartos": 4}
    | _forms(_ROMANCE_ORDINALS["pt"], "s"),
    "ru": {
        "половина": 2,
        "половины": 2,
        "половиной": 2,
        "треть": 3,
        "трети": 3,
        "третей": 3,
        "четверть": 4,
        "четверти": 4,
        "четвертей": 4,
    }
    | {
        stem + ending: n
        for stem, n in {
            "втор": 2,
            "трет": 3,
            "четвёрт": 4,
            "четверт": 4,
            "пят": 5,
            "шест": 6,
            "седьм": 7,
            "восьм": 8,
            "девят": 9,
            "десят": 10,
            "сот": 100,
            "тысячн": 1000,
        }.items()
        for ending in (("ья", "ьих") if stem == "трет" else ("ая", "ых"))
    },
}
# a whole and a half in one German word: "zweieinhalb" 2 1/2, "anderthalb" 1 1/2
_GERMAN_HALF = "einhalb"


def _cardinal(words: list[str], lang: str) -> int | None:
    """A whole number in words of ``lang`` (None: not one), read by the library for that language."""
    if not words:
        return None
    phrase = " ".join(words)
    if lang == "ru":
        value = parse_number(phrase, language="ru")
        return value if isinstance(value, int) and not any(c.isdigit() for c in phrase) else None
    try:
        return int(text2num(phrase, lang))
    except ValueError:
        return None


def _digits(words: list[str], lang: str) -> str | None:
    """The digits after a decimal word: "cinco" 5, "zéro cinq" 05, "catorce" 14, "uno cuatro" 14."""
    zeros = 0
    while zeros < len(words) and words[zeros] in _ZERO:
        zeros += 1
    rest = words[zeros:]
    if not rest:
        return "0" * zeros if zeros else None
    if (whole := _cardinal(rest, lang)) is not None:
        return "0" * zeros + str(whole)
    singles = [_cardinal([w], lang) for w in rest]  # read digit by digit
    if any(d is None or d > 9 for d in singles):
        return None
    return "0" * zeros + "".join(str(d) for d in singles)


def _fraction(words: list[str], lang: str) -> Fraction | None:
    """A fraction ("tres cuartos", "un demi", "la mitad"), or a whole and one ("dos y medio")."""
    den = _DENOMINATORS[lang].get(words[-1]) if words else None
    if den is None:
        return None
    head = words[:-1]
    if not head and words[-1] != "половина":  # "cuarto" alone is "fourth" (or a room), not a quarter
        return None
    whole = 0
    ands = [i for i, w in enumerate(head) if w in _AND[lang]]
    if ands:
        j = ands[-1]
        if (found := _cardinal(head[:j], lang)) is None:
            return None
        whole, head = found, head[j + 1 :]
    num = 1 if head in ([], *([w] for w in _ONE)) else _cardinal(head, lang)
    return None if num is None else whole + Fraction(num, den)


def _in_language(words: list[str], lang: str) -> Fraction | None:
    """The value of ``words`` read as number words of ``lang``, or None."""
    sign = 1
    if words and words[0] in _MINUS[lang]:
        sign, words = -1, words[1:]
    if not words:
        return None
    if lang == "ru" and ("целых" in words or "целая" in words):  # "три целых пять десятых": 3 and 5/10
        i = words.index("целых") if "целых" in words else words.index("целая")
        whole, part = _cardinal(words[:i], lang), _fraction(words[i + 1 :], lang)
        return None if whole is None or part is None or part >= 1 else sign * (whole + part)
    if points := [i for i, w in enumerate(words) if w in _POINT[lang]]:
        i = points[0]
        whole = _cardinal(words[:i], lang) if i else 0
        digits = _digits(words[i + 1 :], lang)
        if whole is None or digits is None:
            return None
        return sign * (whole + Fraction(int(digits), 10 ** len(digits)))
    if lang == "de" and len(words) == 1 and words[0].endswith(_GERMAN_HALF) and words[0] != _GERMAN_HALF:
        stem = words[0][: -len(_GERMAN_HALF)]
        whole = 1 if stem in ("ein", "ander") else _cardinal([stem], lang)
        return None if whole is None else sign * (whole + Fraction(1, 2))
    if (part := _fraction(words, lang)) is not None:
        return sign * part
    value = _cardinal(words, lang)
    return None if value is None else Fraction(sign * value)


@lru_cache(maxsize=4096)
def parse_foreign_number(text: str) -> Fraction | None:
    """The value of a number phrase in Spanish, French, German, Italian, Portuguese or Russian,
    or None when ``text`` is anything else (or reads differently in two of those languages).

    Examples:
        >>> parse_foreign_number("quatre-vingt-douze"), parse_foreign_number("menos tres cuartos")
        (Fraction(92, 1), Fraction(-3, 4))
        >>> parse_foreign_number("сорок два"), parse_foreign_number("doce manzanas") is None
        (Fraction(42, 1), True)
    """
    t = re.sub(r"[-\s]+", " ", text.strip().lower().rstrip(".")).strip()
    if not t or len(t) > 120 or not _TEXT.fullmatch(t):
        return None
    words = t.split()
    if len(words) == 1 and words[0] in _LOOKALIKES:
        return None
    langs = ("ru",) if _CYRILLIC.search(t) else _LATIN
    values = {v for lang in langs if (v := _in_language(words, lang)) is not None}
    return values.pop() if len(values) == 1 else None
