"""Phenomenon-grouped (completion, gold, expected status) tables for verify_math."""

from __future__ import annotations

import pytest

from rlvr import Status, verify_math

C, W, N, B = Status.CORRECT, Status.WRONG, Status.NO_ANSWER, Status.BAD_GOLD


def check(completion: str, gold: str, expected: Status, **kw) -> None:
    v = verify_math(completion, gold, **kw)
    assert v.status is expected, f"{completion!r} vs {gold!r}: {v.status} ({v.reason})"


FRACTIONS = [
    (r"\boxed{\frac{1}{2}}", "0.5", C),
    (r"\boxed{\dfrac{1}{2}}", "1/2", C),
    (r"\boxed{\tfrac12}", r"\frac{1}{2}", C),
    (r"\boxed{2\frac12}", "5/2", C),  # mixed number
    (r"\boxed{\frac{10}{9}}", "10/9", C),
    (r"\boxed{-\frac{10}{9}}", "-10/9", C),
    (r"\boxed{\frac{2}{4}}", r"\frac{1}{2}", C),
    (r"\boxed{\frac{1}{3}}", r"\frac{1}{2}", W),
    (r"\boxed{\frac{1}{0}}", "1", W),  # 1/0 equals nothing
]
DECIMALS = [
    (r"\boxed{0.3333333}", r"\frac{1}{3}", C),  # 6 significant digits
    (r"\boxed{0.33}", r"\frac{1}{3}", W),  # 0.33 is not 1/3
    (r"\boxed{0.0833333333333333}", r"\frac{1}{12}", C),
    (r"\boxed{1000.0}", "1000", C),
    (r"\boxed{.4}", "0.4", C),
    (r"\boxed{3 \times 10^5}", "300000", C),
    (r"\boxed{3×10⁵}", "300000", C),
]
THOUSANDS = [
    (r"\boxed{1,234}", "1234", C),
    (r"\boxed{1\,000}", "1000", C),
    (r"\boxed{1{,}000}", "1000", C),
    (r"\boxed{7,425,000}", "7425000", C),
    (r"\boxed{32,\! 349}", "32349", C),
    (r"\boxed{32, 349}", "32349", W),  # comma and space: two numbers
    (r"\boxed{1,234}", "1.234", W),  # a thousands group, not a decimal comma
    (r"\boxed{(12,102)}", "(12, 102)", C),  # a pair, not twelve thousand
]
PERCENT = [
    (r"\boxed{50\%}", "50", C),
    (r"\boxed{50\%}", "0.5", C),
    ("the answer is 50 percent", "0.5", C),
    (r"\boxed{28 pct}", r"28\%", C),
    (r"\boxed{500}", r"5\%", W),  # a number without % is never rescaled
    (r"\boxed{5}", r"500\%", C),  # 500% is 5 as well as 500
]
UNICODE = [
    (r"\boxed{½}", "0.5", C),
    (r"\boxed{√2}", r"\sqrt{2}", C),
    (r"\boxed{x²+1}", "x^2+1", C),
    (r"\boxed{∞}", r"\infty", C),
    (r"\boxed{１２３}", "123", C),
    (r"\boxed{−5}", "-5", C),
]
LATEX = [
    (r"\boxed{\left(\frac{1}{3}\right)}", "1/3", C),
    (r"\boxed{90^\circ}", "90", C),
    (r"\boxed{90^{\circ}}", r"\frac{\pi}{2} \cdot \frac{180}{\pi}", C),
    (r"\boxed{\$18}", "18", C),
    (r"\boxed{\text{Evelyn}}", r"\text{Evelyn}", C),
    (r"\boxed{\mathrm{(C)}}", "C", C),
    (r"\boxed{15\text{ cm}^2}", "15", C),
    (r"\boxed{125\textnormal{ miles}}", "125", C),
    (r"\boxed{\sqrt 2+\sqrt 5}", r"\sqrt{2}+\sqrt{5}", C),
    (r"\boxed{\frac94\pi}", r"\frac{9}{4}\pi", C),
]
SYMBOLIC = [
    (r"\boxed{\frac{x}{7}+\frac{2}{7}}", r"\frac{x+2}{7}", C),
    (r"\boxed{\sec^2(y)}", r"\tan^2(y)+1", C),
    (r"\boxed{(x+2)^2 + (y-3)^2}", "x^2 + y^2 + 4x - 6y + 13", C),
    (r"\boxed{2 \sin b \cos a}", r"\sin(a+b) - \sin(a-b)", C),
    (r"\boxed{x+1}", "x+2", W),
    (r"\boxed{3+2i}", "2i+3", C),
    (r"\boxed{e^{i\pi}}", "-1", C),
]
STRUCTURES = [
    (r"\boxed{(1, 4.5)}", r"(1, \frac{9}{2})", C),  # tuple
    (r"\boxed{(3, 1)}", "(1, 3)", W),  # tuples are ordered
    (r"\boxed{\{3, 1\}}", r"\{1, 3\}", C),  # sets are not
    (r"\boxed{[0, 1)}", "[0,1)", C),  # intervals
    (r"\boxed{(0, 1]}", "[0,1)", W),
    (r"\boxed{(2,12) \cup (12,102)}", r"(2, 12) \cup (12, 102)", C),
    (r"\boxed{\begin{pmatrix}1&2\\3&4\end{pmatrix}}", r"\begin{bmatrix}1&2\\3&4\end{bmatrix}", C),
    (r"\boxed{\begin{pmatrix}1&2\\3&5\end{pmatrix}}", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", W),
    (r"\boxed{\emptyset}", r"\varnothing", C),
    (r"\boxed{\infty}", r"+\infty", C),
]
SOLUTION_LISTS = [
    ("x=2 or x=3", "2, 3", C),
    (r"\boxed{3, 2}", r"x = 2 \text{ or } x = 3", C),
    (r"\boxed{x=2}", r"x = 2 \text{ or } x = 3", W),  # incomplete: a verification death
    (r"\boxed{1} and \boxed{2}", "1, 2", C),  # several boxes in the final sentence
    (r"\boxed{-2021, 2021}", r"\pm 2021", C),
    (r"\boxed{2021}", r"\pm 2021", W),
    (r"\boxed{(7,11),\ (11,7)}", "(11,7) or (7,11)", C),
]
INEQUALITIES = [
    (r"\boxed{x \le 2}", r"(-\infty, 2]", C),
    (r"\boxed{x < 2}", r"(-\infty, 2]", W),
    (r"\boxed{5 \geq x}", r"x \leq 5", C),
    (r"\boxed{-x > -1}", "x < 1", C),
    (r"\boxed{x > -1}", "x < 1", W),
    (r"\boxed{x \neq 3}", "x != 3", C),
    (r"\boxed{(0,1)}", "0<f(x)<1", C),
]
EQUATIONS = [
    (r"\boxed{x=4}", "4", C),
    (r"\boxed{4}", "x=4", C),
    (r"\boxed{y=2x+3}", "2x+3=y", C),
    (r"\boxed{y=-\frac{1}{2}x+\frac{3}{4}}", "2x+4y-3=0", C),  # same line, scaled
    (r"\boxed{0}", "a + 3z = 0", W),  # the left side is not a name
    (r"\boxed{x = 5+5+1 = 11}", "x = 11", C),
    (r"\boxed{x \approx 11}", "11", C),
    (r"\boxed{\frac{1}{\sqrt{6}}}", r"\frac{NO}{BO}=\frac{1}{\sqrt{6}}", C),
    (r"\boxed{1}", "f(x)=1", C),
]


@pytest.mark.parametrize(
    "completion,gold,expected",
    FRACTIONS
    + DECIMALS
    + THOUSANDS
    + PERCENT
    + UNICODE
    + LATEX
    + SYMBOLIC
    + STRUCTURES
    + SOLUTION_LISTS
    + INEQUALITIES
    + EQUATIONS,
)
def test_equivalence_table(completion: str, gold: str, expected: Status) -> None:
    check(completion, gold, expected)


def test_verdict_carries_span_method_and_reason() -> None:
    v = verify_math(r"So $\boxed{\frac{1}{2}}$.", "0.5")
    assert v.correct and v.extracted == r"\frac{1}{2}" and v.method.value == "numeric"
    assert v.reason and v.details["rule"] == "boxed"
    d = v.to_dict()
    assert d["status"] == "correct" and d["correct"] is True
    assert type(v).from_dict(d).status is v.status


@pytest.mark.parametrize("gold", [r"\frac{", "", "   ", r"\sqrt{2"])
def test_unparsable_gold_is_bad_gold(gold: str) -> None:
    check(r"\boxed{1}", gold, B)


def test_format_death_and_verification_death_are_apart() -> None:
    assert verify_math("<thought>x=2</thought><output>x=2</output>", "2", strict=True).status is N
    assert verify_math("<answer>3</answer>", "2").status is W
