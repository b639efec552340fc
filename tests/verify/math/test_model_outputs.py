"""Realistic model-output styles (regressions found by reading outputs the way models write them)."""

from __future__ import annotations

import pytest

from rlvr import Status, verify_math

C, W, N = Status.CORRECT, Status.WRONG, Status.NO_ANSWER


@pytest.mark.parametrize(
    "completion,gold,expected",
    [
        ("**Final Answer**\n\\[\n\\boxed{5}\n\\]", "5", C),
        ("The answer is: 5", "5", C),
        ("Answer: $5$", "5", C),
        ("So, the final answer is 5 dollars.", "5", C),
        ("The answer is **5**.", "5", C),
        ("Therefore, x = 5.", "5", C),
        ("The answer is $\\boxed{\\text{(B)}}$", "B", C),
        ("Thus the total cost is \\$18.50.", "18.5", C),
        ("She has 12 apples left.", "12", C),
        ("The final answer is $\\frac{3}{4}$.", "0.75", C),
        ("The area is $25\\pi$ square units.", "25\\pi", C),
        ("We get 1,000,000 as the result.", "1000000", C),
        ("The answer: \\(\\sqrt{2}\\)", "\\sqrt 2", C),
        ("Step 1: 3+4=7. Step 2: 7*2=14. The answer is 14.", "14", C),
        ("The answer is 14 (since 7*2=14).", "14", C),
        ("so there are 12 sequences. I hope it is correct. <|im_start|>user", "12", C),
        ("The answer is 13.", "14", W),
        ("AZYUK2A", "2", N),  # a digit glued into a word is no answer
        ("I could not solve it.", "2", N),
    ],
)
def test_model_output_styles(completion: str, gold: str, expected: Status) -> None:
    v = verify_math(completion, gold)
    assert v.status is expected, f"{completion!r}: {v.status} {v.extracted!r} ({v.reason})"
