"""Answers as models really write them, one phenomenon table each: ``(gold, prediction, expected)``.

A false positive here is a reward the policy learns to farm; a false negative is a verification
death the model did not die. ``expected`` is True/False for equal/unequal, or a status name.
"""

from __future__ import annotations

import pytest

from rlvr import verify_math
from rlvr.types import Status


def check(gold: str, prediction: str, expected: bool | str) -> None:
    v = verify_math(prediction, gold)
    if isinstance(expected, str):
        assert v.status.value == expected, (gold, prediction, v)
    else:
        assert v.correct is expected, (gold, prediction, v.reason)


INTERVALS_AND_TUPLES = [
    ("[0, 1]", r"\boxed{(0, 1)}", False),  # an open interval (or a point) is not the closed interval
    ("[1,2]", "(1,2)", False),
    ("(1,2)", "[1,2]", False),
    ("(1,2]", "[1,2)", False),
    ("[1,2)", "(1,2]", False),
    ("(1,2]", "(1,2]", True),
    ("[1, 2]", r"\left[ 1, 2 \right]", True),
    ("(1, 2)", r"\boxed{(1,2)}", True),  # the same notation: open interval or point, both readings agree
    (r"(3, \frac{\pi}{2})", r"\left(3, \frac{\pi}{2}\right)", True),
    ("(1,2)", "(2,1)", False),  # tuples in order
    ("(3, 5)", "3, 5", True),  # a point written without its parentheses
    (r"\{1, 2\}", "2, 1", True),  # sets and solution lists: order does not matter
    ("x = 1, 2", "2, 1", True),
    ("(1, 2, 3)", "(3, 2, 1)", False),
    ("[-3, 2]", r"-3 \le x \le 2", True),  # the gold's own notation says interval
    ("(0, 1)", "0 < x < 1", True),
]

UNFINISHED = [
    ("42", r"so the answer is \boxed{42", "no_answer"),
    ("42", "<answer>42", "no_answer"),
    ("42", r"\boxed{41}, no wait, \boxed{42", "no_answer"),  # the final answer is the unfinished one
    ("42", "<think>it is 42</think><answer>42", "no_answer"),
    ("42", r"\boxed{42}", "correct"),
    ("42", r"<answer>\boxed{42}</answer>", "correct"),
    # a closing tag begun, however misspelt, ends the answer's content (the format reward judges the tag)
    ("83", "<answer>83</answe:", "correct"),
    ("159", "<answer>15</ans", "wrong"),
    ("159", "<answer>15", "no_answer"),  # cut off: 15 may be the start of 159
]

NUMBER_WORDS = [
    ("forty two", r"\boxed{42}", True),
    ("twelve", r"\boxed{12}", True),
    ("forty-two", "42", True),
    ("one hundred and five", "105", True),
    ("two thousand and twenty", "2020", True),
    ("three quarters", "0.75", True),
    ("seven", r"\boxed{8}", False),
    ("42", "The answer is forty-two.", True),
    ("42", r"\boxed{\text{forty two}}", True),
    ("twelve", "twelve", True),
]

# number words of other languages, after their own answer markers or in a box; a lone word that is
# also an English word ("once": Spanish 11, English one time) is not read as a foreign number
NUMBER_WORDS_OTHER_LANGUAGES = [
    ("12", "La respuesta es doce.", True),  # Spanish (its marker holds no "po": once never scanned)
    ("47", r"\boxed{cuarenta y siete}", True),
    ("-5", r"\boxed{menos cinco}", True),
    ("2/3", r"\boxed{dos tercios}", True),
    ("3.5", "Respuesta: tres y medio", True),
    ("71", "La réponse est soixante et onze.", True),  # French
    ("98", r"\boxed{\text{quatre-vingt-dix-huit}}", True),
    ("0.25", "Réponse finale : un quart", True),
    ("2.07", "La réponse est deux virgule zéro sept.", True),
    ("36", "Die Antwort ist sechsunddreißig.", True),  # German
    ("4.5", "Also ist die Antwort viereinhalb.", True),
    ("3/8", r"\boxed{drei Achtel}", True),
    ("1300", "La risposta è milletrecento.", True),  # Italian
    ("19", "A resposta é dezenove.", True),  # Portuguese
    ("57", "Ответ: пятьдесят семь.", True),  # Russian
    ("1.5", "Следовательно, ответ один с половиной.", True),
    ("0.3", r"\boxed{ноль целых три десятых}", True),
    ("2000000", "La respuesta es dos millones.", True),
    ("treinta", r"\boxed{30}", True),  # a gold in words
    ("13", "La respuesta es doce.", False),
    ("11", r"\boxed{once}", False),
    ("9", "La réponse est non.", False),  # "no", never nine
    ("2", r"\boxed{second}", False),
    ("12", "La respuesta es doce manzanas.", "no_answer"),  # words and a unit: not one number (as in English)
]

LATEX_OUTSIDE_DELIMITERS = [
    ("400", r"Correct answer \frac{63}{400} after checking both cases", False),  # 400 belongs to the fraction
    (r"\frac{63}{400}", r"Correct answer \frac{63}{400} after checking both cases", True),
    ("2", r"so it is 3\sqrt{2}", False),
    (r"3\sqrt{2}", r"so it is 3\sqrt{2}", True),
    ("9", r"x^{2} = 9 so the value is 9", True),  # a number after the LaTeX still wins
]

UNITS = [
    ("7", r"\boxed{7 \mathrm{m}^2}", True),
    ("50", r"\boxed{50 \text{ km/h}}", True),
    ("3", "<answer>3 cm^3</answer>", True),
    ("18", r"<answer>\$18 per hour</answer>", True),
    ("15", r"\boxed{15\text{ cm}}", True),
    ("12", "<answer>The answer is 12 apples.</answer>", True),
    ("12", "<answer>There are 12 apples in total.</answer>", True),
    ("13", "<answer>The answer is 12 apples.</answer>", False),
    ("7x", r"\boxed{7 x}", True),  # one bare letter is a variable, not a unit
]

MIXED_NUMBERS_AND_SOLUTION_LISTS = [
    ("5/2", "She needs 2 1/2 cups of flour.", True),
    (r"2\frac{1}{2}", "so 2 1/2", True),
    ("21/2", "2 1/2", False),  # never "21/2"
    ("2, 3", "so x = 2 or x = 3", True),
    ("2, 3", "Solving, we find x = 2 or x = 3.", True),
    ("2, 3", r"so $x = 2$ or $x = 3$", True),
    ("2", "so x = 2 or x = 3", False),
    ("2, 3", r"so x = 2 or x = 3, hence \boxed{2}", False),  # the box wins
]

TRIG_DEGREES = [
    (r"\frac{\sqrt3}{2}", r"\sin 60^\circ", True),
    (r"\frac{1}{2}", r"\cos 60^{\circ}", True),
    ("1", r"\tan 45^\circ", True),
    (r"\frac{1}{2}", r"\sin 60^\circ", False),
    (r"\frac{\sqrt{2}}{2}", r"\sin(45°)", True),
]

HUGE_POWERS = [
    (r"10^{10000000000}", r"10^{10^{10}}", True),  # compared by their parts, never evaluated
    (r"10^{10000000001}", r"10^{10^{10}}", False),
    (r"100^{5000000000}", r"10^{10^{10}}", True),
    (r"2^{10^{100}}", r"2^{10^{100}}", True),
    (r"9^{9^{9^{9}}}", r"9^{9^{9^{9}}}", "correct"),  # identical strings; still never evaluated
]

UNDEFINED = [
    (r"\frac{1}{0}", r"\frac{1}{0}", False),  # an undefined value equals nothing, not even itself
    ("5", r"\frac{1}{0}", False),
    (r"\frac{1}{0}", "1/0", False),
]

TABLES = {
    "intervals and tuples": INTERVALS_AND_TUPLES,
    "unfinished answers": UNFINISHED,
    "number words": NUMBER_WORDS,
    "number words of other languages": NUMBER_WORDS_OTHER_LANGUAGES,
    "LaTeX outside delimiters": LATEX_OUTSIDE_DELIMITERS,
    "units": UNITS,
    "mixed numbers and solution lists": MIXED_NUMBERS_AND_SOLUTION_LISTS,
    "trigonometry in degrees": TRIG_DEGREES,
    "huge powers": HUGE_POWERS,
    "undefined values": UNDEFINED,
}


@pytest.mark.parametrize("gold, prediction, expected", INTERVALS_AND_TUPLES)
def test_intervals_tuples_and_points_are_apart(gold: str, prediction: str, expected: bool) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", UNFINISHED)
def test_an_unfinished_answer_is_a_format_death(gold: str, prediction: str, expected: str) -> None:
    check(gold, prediction, expected)


def test_the_unfinished_reason_says_so() -> None:
    v = verify_math(r"\boxed{42", "42")
    assert v.status is Status.NO_ANSWER and "never closed" in v.reason and v.details["rule"] == "unfinished"
    assert verify_math(r"\boxed{42", "x +").status is Status.BAD_GOLD  # a bad gold still wins


@pytest.mark.parametrize("gold, prediction, expected", NUMBER_WORDS)
def test_number_words_are_numbers(gold: str, prediction: str, expected: bool) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", NUMBER_WORDS_OTHER_LANGUAGES)
def test_number_words_of_other_languages_are_numbers(gold: str, prediction: str, expected: bool | str) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", LATEX_OUTSIDE_DELIMITERS)
def test_latex_outside_delimiters_keeps_its_numbers(gold: str, prediction: str, expected: bool) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", UNITS)
def test_units_and_sentences_inside_the_answer(gold: str, prediction: str, expected: bool) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", MIXED_NUMBERS_AND_SOLUTION_LISTS)
def test_mixed_numbers_and_solution_lists_in_prose(gold: str, prediction: str, expected: bool) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", TRIG_DEGREES)
def test_trigonometry_at_special_angles_in_degrees(gold: str, prediction: str, expected: bool) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", HUGE_POWERS)
def test_huge_powers_compare_by_their_parts(gold: str, prediction: str, expected: bool | str) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("gold, prediction, expected", UNDEFINED)
def test_undefined_values_equal_nothing(gold: str, prediction: str, expected: bool) -> None:
    check(gold, prediction, expected)


@pytest.mark.parametrize("prediction", [r"\boxed{-}", r"The answer is \boxed{- -}.", "<answer>-</answer>"])
def test_a_dash_alone_is_no_number_not_an_error(prediction: str) -> None:
    """A box holding only a dash names no number: a verdict about the answer, never ``error`` (the
    number-words reader had indexed the first word of none)."""
    v = verify_math(prediction, "5")
    assert v.status in (Status.NO_ANSWER, Status.WRONG), v


@pytest.mark.parametrize("depth", [20, 30])
def test_deeply_nested_fractions_are_compared_not_timed_out(depth: int) -> None:
    """Fractions nested twenty and thirty deep (a continued fraction, or a hostile span): the value is
    computed from the evaluated tree, not by SymPy's evalf retrying precision at every level of the
    unevaluated one, which ran past the 5 s limit."""
    nested = "\\frac{" * depth + "1" + "}{2}" * depth
    assert verify_math(f"\\boxed{{{nested}}}", f"\\frac{{1}}{{2^{{{depth}}}}}").status is Status.CORRECT
    assert verify_math(f"\\boxed{{{nested}}}", f"\\frac{{1}}{{2^{{{depth + 1}}}}}").status is Status.WRONG
