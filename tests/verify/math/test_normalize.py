"""Pure string normalisation."""

from __future__ import annotations

import pytest

from rlvr.verify.math.normalize import (
    normalize,
    strip_thousands,
    strip_units,
    unicode_to_latex,
)


@pytest.mark.parametrize(
    "raw,expected",
    [
        (r"$\dfrac{1}{2}$", r"\frac{1}{2}"),
        (r"\left( x \right)", "( x )"),
        (r"90^\circ", "90"),
        (r"50\%", "50%"),
        ("28 percent", "28%"),
        (r"\$18", "18"),
        (r"1\!000", "1000"),
        ("x.", "x"),
        (r"\\frac{1}{2}", r"\frac{1}{2}"),  # double-escaped input
        (r"a \\ b", r"a \\ b"),  # a real line break stays
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("1,234", "1234"),
        ("1,234,567.5", "1234567.5"),
        ("1,22", "1,22"),
        ("32, 349", "32, 349"),
        ("0,111", "0,111"),
        ("(12,102)", "(12,102)"),
        ("1 000", "1000"),
        (r"1{,}000", "1000"),
    ],
)
def test_thousands(raw: str, expected: str) -> None:
    assert strip_thousands(raw) == expected


def test_unicode() -> None:
    assert unicode_to_latex("x²") == "x^{2}"
    assert unicode_to_latex("2½") == "(2+1/2)"
    assert unicode_to_latex("３") == "3"
    assert unicode_to_latex("√2") == r"\sqrt2"


def test_units() -> None:
    assert strip_units("35 cm") == "35"
    assert strip_units("0.06 yuan") == "0.06"
    assert strip_units("x + y") == "x + y"
