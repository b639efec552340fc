"""Answer extraction: which span is the answer, by which rule."""

from __future__ import annotations

import pytest

from rlvr.verify.math.extract import find_boxes, iter_candidates


def first(text: str, **kw) -> tuple[str, str] | None:
    c = next(iter_candidates(text, **kw), None)
    return (c.rule, c.text) if c else None


@pytest.mark.parametrize(
    "text,rule,span",
    [
        (r"so \boxed{\frac{a}{\sqrt{b^{2}}}} done", "boxed", r"\frac{a}{\sqrt{b^{2}}}"),
        (r"\boxed{1} then \boxed{2}", "boxed", "2"),  # the last box; words are no list
        (r"\fbox{7}", "boxed", "7"),
        (r"\boxed 5", "boxed", "5"),
        (r"\boxed {9}", "boxed", "9"),
        (r"\boxed{1} and \boxed{2}", "boxed", "1, 2"),
        (r"\boxed{(2, 2)} \quad \text{and} \quad \boxed{(6, 2)}", "boxed", "(2, 2), (6, 2)"),
        ("<answer>12</answer>", "answer_tag", "12"),
        ("<answer>1</answer> more <answer>2</answer>", "answer_tag", "2"),
        ("<think>the answer is 5</think><answer>6</answer>", "answer_tag", "6"),
        ("<answer>so \\boxed{4}</answer>", "answer_tag", "4"),
        ("The answer is 42. Then 7 more steps.", "answer_is", "42"),
        ("Final Answer: The final answer is $10,455$. I hope it is correct.", "answer_is", "10,455"),
        ("Final Answer: The largest $n$ is 34.", "answer_is", "34"),
        ("Janet makes 9 * 2 = 18.\n#### 18", "gsm8k", "18"),
        ("Therefore $x \\geq 5$ is the solution.", "math_span", "x \\geq 5"),
        ("so there are 12 sequences in total", "last_number", "12"),
        ("it grows by 100%.", "last_number", "100%"),
    ],
)
def test_extraction_rules(text: str, rule: str, span: str) -> None:
    assert first(text) == (rule, span)


def test_think_is_never_the_answer() -> None:
    assert first("<think>the answer is \\boxed{5}</think> I give up", strict=True) is None
    assert first("<think>unclosed reasoning with \\boxed{5}") is None


def test_strict_mode_has_no_number_fallback() -> None:
    assert first("so there are 12", strict=True) is None
    assert first("so there are 12") == ("last_number", "12")


def test_answer_is_after_box_wins_but_not_words() -> None:
    assert first(r"$\boxed{255}$ ... Final Answer: The final answer is $10,455$.")[1] == "10,455"
    assert first(r"so $\boxed{44}$. Check: our answer is correct.")[1] == "44"


def test_boxes_with_deep_nesting_scan_without_recursion() -> None:
    deep = "\\boxed{" + "{" * 5000 + "1" + "}" * 5000 + "}"
    (_start, end, content) = find_boxes(deep)[0]
    assert content.count("{") == 5000 and end == len(deep)


def test_unclosed_box_is_ignored() -> None:
    assert find_boxes(r"\boxed{1 + ") == []
