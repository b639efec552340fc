r"""A quantity written in two units or more ("2 hours 30 minutes", "5 ft 2 in") as one value.

Against a gold in one unit, a careful grader converts: 2 h 30 min is 150 (minutes) and 2.5
(hours). :func:`compound_quantity` gives the value in each unit the answer itself names (never
in a unit it does not: 9000 seconds is not offered), so a bare gold matches the reading in the
unit the question asked for.
"""

from __future__ import annotations

import re
from fractions import Fraction

# unit word -> (dimension, size in the dimension's smallest unit here)
_TABLES: dict[str, dict[tuple[str, ...], int]] = {
    "time": {
        ("s", "sec", "secs", "second", "seconds"): 1,
        ("min", "mins", "minute", "minutes"): 60,
        ("h", "hr", "hrs", "hour", "hours"): 3600,
        ("day", "days"): 86400,
        ("week", "weeks", "wk", "wks"): 604800,
    },
    "length": {
        ("in", "inch", "inches"): 1,
        ("ft", "foot", "feet"): 12,
        ("yd", "yard", "yards"): 36,
        ("mi", "mile", "miles"): 63360,
    },
    "metric length": {
        ("mm", "millimeter", "millimeters", "millimetre", "millimetres"): 1,
        ("cm", "centimeter", "centimeters", "centimetre", "centimetres"): 10,
        ("m", "meter", "meters", "metre", "metres"): 1000,
        ("km", "kilometer", "kilometers", "kilometre", "kilometres"): 1_000_000,
    },
    "mass": {("oz", "ounce", "ounces"): 1, ("lb", "lbs", "pound", "pounds"): 16},
    "metric mass": {("mg",): 1, ("g", "gram", "grams"): 1000, ("kg", "kilogram", "kilograms"): 1_000_000},
    "money": {("cent", "cents"): 1, ("dollar", "dollars"): 100},
}
_UNITS = {
    name: (dim, Fraction(size)) for dim, table in _TABLES.items() for names, size in table.items() for name in names
}

_PART = re.compile(r"([-+]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)\.?")
_JOIN = re.compile(r"\s*(?:,|and|&|\+)?\s*")


def compound_quantity(s: str) -> tuple[Fraction, ...] | None:
    """The value of a quantity written in several units of one dimension, in each of those units
    (largest first), or None when ``s`` is not one (one unit, units of two dimensions, or units
    out of order).

    Examples:
        >>> compound_quantity("2 hours 30 minutes")
        (Fraction(5, 2), Fraction(150, 1))
        >>> compound_quantity("5 ft 2 in"), compound_quantity("5 ft"), compound_quantity("2 h 30 kg")
        ((Fraction(31, 6), Fraction(62, 1)), None, None)
    """
    s = s.strip().rstrip(".")
    if len(s) > 120 or not any(c.isdigit() for c in s):
        return None
    parts, pos = [], 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None or m.group(2).lower() not in _UNITS:
            return None
        parts.append((Fraction(m.group(1)), _UNITS[m.group(2).lower()]))
        pos = m.end()
        j = _JOIN.match(s, pos)
        pos = j.end() if j else pos
    if len(parts) < 2 or len({dim for _, (dim, _) in parts}) != 1:
        return None
    sizes = [size for _, (_, size) in parts]
    if sizes != sorted(sizes, reverse=True) or len(set(sizes)) != len(sizes):
        return None  # "30 minutes 2 hours": not how a quantity is written
    total = sum(value * size for value, (_, size) in parts)
    return tuple(total / size for size in sizes)


#: A compound quantity in prose, for the extractor: "2 hours and 30 minutes", "5 feet 2 inches".
COMPOUND = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*[a-zA-Z]+\.?(?:\s*(?:,|and|&)?\s*\d+(?:\.\d+)?\s*[a-zA-Z]+\.?)+")
