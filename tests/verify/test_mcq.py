"""Multiple choice: the final choice as models state it, against a letter or an option's text."""

from __future__ import annotations

import pytest

from rlvr import verify_math
from rlvr.rewards import build_reward
from rlvr.types import Status
from rlvr.verify.mcq import final_choice, gold_letter, parse_options, verify_mcq
from rlvr.verify.registry import verify

# (prediction, gold letter, equal?): the table `make bench-verifier` also runs for math-verify.
CHOICES = [
    # where the choice is written
    ("The answer is (B).", "B", True),
    (r"\boxed{C}", "C", True),
    (r"\boxed{\text{C}}", "C", True),
    (r"\boxed{\textbf{(D)}}", "D", True),
    (r"$\boxed{(A)}$", "A", True),
    ("<think>Option A is tempting.</think><answer>B</answer>", "B", True),
    ("Answer: D", "D", True),
    ("**Final Answer: (E)**", "E", True),
    ("Final answer: c", "C", True),
    ("ANSWER: (b)", "B", True),
    # the sentences models write to name or endorse one option
    ("Comparing the rates, the correct option is B.", "B", True),
    ("So the correct choice is (C) 12 meters.", "C", True),
    ("I choose option A.", "A", True),
    ("I'll go with D, since the other three fail.", "D", True),
    ("Therefore C is correct.", "C", True),
    ("Hence, option B is the right answer.", "B", True),
    ("It must be J.", "J", True),
    ("B) 12 meters", "B", True),
    ("(G)", "G", True),
    ("The answer is a multiple of three, so the answer is (b).", "B", True),
    ("The answer is B, not A.", "B", True),
    ("First I thought the answer is A. Checking again, the answer is C.", "C", True),
    (r"Thus the answer is $\boxed{D}$. (A is wrong because the sign flips.)", "D", True),
    # a gold letter in parentheses
    (r"\boxed{B}", "(B)", True),
    ("The answer is C", "(c)", True),
    # unequal
    ("The answer is (B).", "C", False),
    ("It is A or B.", "B", False),
    ("The answer is A and C.", "A", False),
    (r"\boxed{A, C}", "A", False),
    ("A) 5 B) 6 C) 7 D) 8", "A", False),
    ("The answer is not A.", "A", False),
    ("The answer is B. Wait, no, B is wrong.", "B", False),
    ("I choose C. Actually, that is not right.", "C", False),
    ("I have no idea which one.", "A", False),
    ("The answer is a triangle.", "A", False),
    (r"so the answer is \boxed{B", "B", False),  # never closed
]


@pytest.mark.parametrize("prediction, gold, equal", CHOICES)
def test_choices_as_models_write_them(prediction: str, gold: str, equal: bool) -> None:
    v = verify_math(prediction, gold)  # a letter gold makes the maths verifier ask for a letter
    assert v.correct is equal, (prediction, gold, v.reason)
    assert verify(prediction, gold, task="gpqa").correct is equal


def test_the_reasons_say_why_a_choice_does_not_count() -> None:
    assert verify_mcq("It is A or B.", "B").reason == "several options are chosen"
    assert verify_mcq("The answer is not A.", "A").reason == "the choice is negated"
    assert "retracted" in verify_mcq("B. Wait, no, B is wrong.", "B").reason
    none = verify_mcq("I have no idea which one.", "A")
    assert none.status is Status.NO_ANSWER and none.reason == "no option was chosen"  # a format death
    assert verify_mcq(r"\boxed{B", "B").status is Status.NO_ANSWER


PROMPT = "What is 3 x 4?\nA) 10\nB) 12\nC) 14\nD) 16"


@pytest.mark.parametrize(
    "prediction, gold, options, prompt, equal",
    [
        (r"\boxed{B}", "12", None, PROMPT, True),  # the gold is the option's text: its letter is the answer
        (r"\boxed{B}", "12", ["10", "12", "14"], None, True),
        (r"\boxed{A}", "12", ["10", "12", "14"], None, False),
        ("The answer is 12.", "B", None, PROMPT, True),  # the option's text instead of its letter
        (r"\boxed{12.0}", "B", None, PROMPT, True),  # the option's value, not its string
        (r"\boxed{3 \times 4}", "B", None, PROMPT, False),  # the question restated is no option's value
        (r"\boxed{\frac{24}{2}}", "B", None, PROMPT, False),  # nor is a division left undone
        (r"\boxed{C}", "14", {"A": "10", "B": "12", "C": "14"}, None, True),
        ("Answer: (B) 12", "12", None, "Pick one: (A) 10 (B) 12 (C) 14", True),
    ],
)
def test_options_from_the_prompt_or_a_column(
    prediction: str, gold: str, options: object, prompt: str | None, equal: bool
) -> None:
    v = verify_mcq(prediction, gold, options=options, prompt=prompt)
    assert v.correct is equal, v


def test_a_text_gold_without_options_is_bad_gold_not_a_death() -> None:
    v = verify_mcq(r"\boxed{B}", "12")
    assert v.status is Status.BAD_GOLD and "no options" in v.reason


def test_options_parse_from_lists_mappings_and_prompts() -> None:
    assert parse_options(["x", "y"]) == {"A": "x", "B": "y"}
    assert parse_options({"(A)": "x", "B": "y"}) == {"A": "x", "B": "y"}
    assert parse_options(PROMPT) == {"A": "10", "B": "12", "C": "14", "D": "16"}
    assert parse_options('["p", "q", "r"]') == {"A": "p", "B": "q", "C": "r"}
    assert parse_options("I. Introduction: nothing here") == {}
    assert [gold_letter(g) for g in ("B", "(b)", "C.", "option D", "BC", "x", "10")] == [
        "B",
        "B",
        "C",
        "D",
        None,
        None,
        None,
    ]


def test_the_accuracy_reward_reads_options_from_the_rows() -> None:
    acc = build_reward("accuracy")
    rows = {"gold": ["12", "12"], "task": ["mcq", "mcq"], "prompt": [PROMPT, PROMPT]}
    assert acc([r"\boxed{B}", r"\boxed{C}"], **rows) == [1.0, 0.0]
    cols = {"answer": ["x", "y"], "task": ["mmlu", "mmlu"], "options": [["w", "x"], ["y", "z"]]}
    assert acc(["The answer is (B)", "The answer is (B)"], **cols) == [1.0, 0.0]


def test_final_choice_names_its_rule() -> None:
    assert final_choice(r"\boxed{C}").rule == "boxed"
    assert final_choice("Answer: C").rule == "statement"
    assert final_choice("<answer>C</answer>").rule == "answer_tag"
