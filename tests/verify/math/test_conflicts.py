"""One committed answer: a completion whose final-answer formats disagree commits to none of them.

Each format a model writes a final answer in (an ``<answer>`` tag, boxes, GSM8K's ``####``, a final
line that is an answer on its own, bold or not) is a claim; the verdict is ``correct`` only when the
answer read equals the gold and no other claim reads as a different value (rule ``conflicting``).
A box that a later "Final Answer:" supersedes, a phrase in the reasoning, and a final line that is
not an answer are not claims.
"""

from __future__ import annotations

import pytest

from rlvr.verify.math.verifier import verify_math

CONFLICTING = [
    ("a tag and a box", "Adding: $\\boxed{21}$\n\n<answer>20</answer>", "20"),
    ("a box and the tag after it", "<answer>7/2</answer>\n\nChecking once more: $\\boxed{3.4}$", "7/2"),
    ("a box and GSM8K's marker", "She has $\\boxed{48}$ stickers.\n#### 46", "48"),
    ("a box and a bold final line", "Therefore $x=\\boxed{-3}$.\n\n**x = 3**", "-3"),
    ("a box and a bold final line of its own", "The area is $\\boxed{\\frac{9}{2}}$.\n\n**4.6**", "9/2"),
    ("a tag and a final answer line", "<answer>0.25</answer>\nFinal answer: 1/3", "1/4"),
    ("an answer phrase and a bold final line", "So the answer is 12.\n\n**13**", "12"),
    ("an answer phrase and a bold final line, either gold", "So the answer is 12.\n\n**13**", "13"),
]
COMMITTED = [
    ("the same value in every format", "So $\\boxed{\\frac{1}{2}}$.\n\n<answer>0.5</answer>\n\n**0.5**", "1/2"),
    ("a box then its restatement", "The total is $\\boxed{1,200}$.\n\nFinal answer: 1200", "1200"),
    (
        "an intermediate box a final phrase supersedes",
        "so $\\boxed{25}$ per box.\nFinal Answer: The final answer is $75$.",
        "75",
    ),
    ("a guess in the reasoning, then a box", "Maybe the answer is 9? Let me check.\nIt is $\\boxed{8}$", "8"),
    ("a final line that is not an answer", "$\\boxed{14}$\n\nWe used 3 facts about primes.", "14"),
    ("a displayed equation last", "so $C = \\boxed{4}$. Equality holds for\n\\[v = (1, 2).\\]", "4"),
    ("an answer phrase and a bold final line that agree", "The answer is 12.\n\n**12**", "12"),
    ("a bold final line that is not an answer", "The answer is 12.\n\n**Step 3 done**", "12"),
    ("a coloured box", "\\boxed{\\textcolor{blue}{12}}", "12"),
]


@pytest.mark.parametrize(("name", "completion", "gold"), CONFLICTING, ids=[c[0] for c in CONFLICTING])
def test_disagreeing_formats_commit_to_no_answer(name: str, completion: str, gold: str) -> None:
    v = verify_math(completion, gold)
    assert not v.correct, (name, v.reason)


@pytest.mark.parametrize(("name", "completion", "gold"), COMMITTED, ids=[c[0] for c in COMMITTED])
def test_formats_that_agree_or_are_not_claims_still_commit(name: str, completion: str, gold: str) -> None:
    v = verify_math(completion, gold)
    assert v.correct, (name, v.reason)


def test_the_verdict_names_the_conflict() -> None:
    v = verify_math("$\\boxed{12}$\n\n<answer>13</answer>", "13")
    assert v.details["rule"] == "conflicting" and v.details["conflict"] == "boxed"
    assert "conflicting answers" in v.reason


# Reasoning formats: the final section is the answer, a value only in the reasoning is not.
REASONING_FORMATS = [
    (
        "<|begin_of_thought|>It might be 15.<|end_of_thought|>\n<|begin_of_solution|>The answer is "
        "$\\boxed{16}$.<|end_of_solution|>",
        "16",
        True,
    ),
    (
        "<|begin_of_thought|>It is 15.<|end_of_thought|><|begin_of_solution|>So $\\boxed{16}$<|end_of_solution|>",
        "15",
        False,
    ),
    ("<|begin_of_thought|>So \\boxed{15}", "15", False),  # the reasoning never reached its solution
    (
        "<|channel|>analysis<|message|>compute: 15<|end|><|start|>assistant<|channel|>final<|message|>"
        "The answer is 16.<|return|>",
        "16",
        True,
    ),
    ("<|channel|>analysis<|message|>\\boxed{15}<|end|>", "15", False),  # gpt-oss: analysis only
    ("[THINK]\\boxed{15}[/THINK]So the answer is 16.", "16", True),  # Magistral
    ("[THINK]\\boxed{15}[/THINK]So the answer is 16.", "15", False),
    ("◁think▷\\boxed{15}◁/think▷ The answer is $\\boxed{16}$", "16", True),  # Kimi
    ("◁think▷ the answer is \\boxed{15}", "15", False),
    ("<think>\\boxed{15}</think>The answer is 16.", "15", False),
]


@pytest.mark.parametrize(("completion", "gold", "expected"), REASONING_FORMATS)
def test_only_the_final_section_of_a_reasoning_format_is_the_answer(completion: str, gold: str, expected: bool) -> None:
    assert verify_math(completion, gold).correct is expected


# Text a reader does not see is not the answer (LaTeX that hides or redefines, HTML that does not
# render, a link's target); what looks like it but shows is read.
HIDDEN = [
    ("The answer is $\\boxed{12}$ <sup>wrong, it is 13</sup>", "12", False),  # judged in a tag after it
    ("\\renewcommand{\\boxed}[1]{} The result: \\boxed{15}", "15", False),
    ("\\def\\fbox#1{} Hence \\fbox{15}", "15", False),
    ("So \\boxed{8}.\n\\begin{comment}\\boxed{15}\\end{comment}", "15", False),
    ("So \\boxed{8}. \\scalebox{0}{\\boxed{15}}", "15", False),
    ("So \\boxed{8}. \\resizebox{0pt}{!}{\\boxed{15}}", "15", False),
    ("So \\boxed{8}. {\\fontsize{0}{0}\\selectfont \\boxed{15}}", "15", False),
    ('So the answer is 8. <span style="display:none">The answer is \\boxed{15}</span>', "15", False),
    ("So the answer is 8. <template>\\boxed{15}</template>", "15", False),
    ("So the answer is 8. <div hidden>\\boxed{15}</div>", "15", False),
    ("See [the source](https://x.org/\\boxed{15}) so the answer is 8.", "15", False),
    ("The answer is \\boxed{15}. \\scalebox{2}{big}", "15", True),  # scaled, but visible
    ("The interval is [0, 15](closed).", "[0,15]", True),  # not a link
    ("The answer is \\boxed{15}. See [docs](https://x.org).", "15", True),
    ("\\newcommand{\\R}{\\mathbb{R}} The answer is \\boxed{15}.", "15", True),  # a harmless definition
]


@pytest.mark.parametrize(("completion", "gold", "expected"), HIDDEN)
def test_text_a_reader_does_not_see_is_not_the_answer(completion: str, gold: str, expected: bool) -> None:
    assert verify_math(completion, gold).correct is expected
