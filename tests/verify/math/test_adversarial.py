"""Pathological inputs come back fast with a reason; gaming outputs never pass."""

from __future__ import annotations

import json
import time

import pytest

from rlvr import Status, verify_math

FAST = 3.0  # seconds: generous for a loaded 2-core machine, far below a hang


@pytest.mark.parametrize(
    "completion,gold",
    [
        (r"\boxed{9^{9^{9^{9}}}}", "3"),
        (r"\boxed{2^{10^{10}}}", "4"),
        (r"\boxed{(10^{10})!}", "4"),
        ("\\boxed{" + "{" * 10_000 + "1" + "}" * 10_000 + "}", "1"),
        ("x" * 1_000_000, "3"),
        ("1" * 1_000_000, "3"),
        (r"\boxed{" + r"\frac{1}{" * 3000 + "2" + "}" * 3000 + "}", "1"),
        ("(" * 50_000, "1"),
        (r"\boxed{\sqrt{" * 2000, "1"),
        # symbolic powers pass the parse-time guards but explode at the random evaluation points
        # (x = 37/13): one GMP call no time limit stops; an untrained policy under the math grammar wrote one
        ("<answer>x^99999999</answer>", "7"),
        (r"\boxed{(x+1)^{10^{8}}}", "x"),
        (r"\boxed{x^{x^{99999}}}", "2"),
    ],
)
def test_pathological_inputs_are_fast_and_never_hang(completion: str, gold: str) -> None:
    t = time.monotonic()
    v = verify_math(completion, gold, timeout=2.0)
    assert time.monotonic() - t < FAST
    assert v.status in (Status.TIMEOUT, Status.WRONG, Status.NO_ANSWER, Status.CORRECT)
    assert v.reason
    if v.status is Status.TIMEOUT:
        assert not v.correct


def test_an_answer_after_a_megabyte_of_decimal_points_is_still_read() -> None:
    # the commitment check looks for the answer's clause backwards: a search that restarted at every
    # decimal point would read the text once per point (quadratic: hours) and run out of time; the
    # linear search takes well under a second, so the limit leaves room for a loaded machine
    v = verify_math("1.1" * 300_000 + " so the answer is 12", "12", timeout=30.0)
    assert v.status is Status.CORRECT, v.reason


def test_large_but_computable_symbolic_powers_are_still_compared_at_points() -> None:
    assert verify_math(r"\boxed{(x^{500})^{2}}", "x^{1000}").correct
    assert not verify_math(r"\boxed{x^{1000}}", "x^{1001}").correct


def test_power_tower_is_refused_not_scored_wrong() -> None:
    v = verify_math(r"\boxed{9^{9^{9^{9}}}}", "3")
    assert v.status is Status.TIMEOUT and "refused" in v.reason


def test_timeout_is_reported_as_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvr.verify.math import compare

    def slow(*a, **k):
        while True:
            pass

    monkeypatch.setattr(compare, "equal_alts", slow)
    v = verify_math(r"\boxed{x+1}", "x+2", timeout=0.3)
    assert v.status is Status.TIMEOUT


def test_internal_error_is_error_not_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvr.verify.math import compare

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(compare, "equal_alts", broken)
    v = verify_math(r"\boxed{x+1}", "x+2")
    assert v.status is Status.ERROR and "boom" in v.reason


GAMING = [
    # (completion, gold): outputs that try to game a verifier; none may pass.
    (r"\boxed{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}", "7"),  # list every candidate
    (r"\boxed{7} or \boxed{8} or \boxed{9}", "9"),
    (r"\boxed{x}", "7"),  # a free symbol is not a number
    (r"\boxed{7 \text{ or } 8}", "7"),
    ("<think>The answer is 7</think><answer>I am not sure</answer>", "7"),
    ("<think>\\boxed{7}</think>", "7"),
    (r"\boxed{}", "7"),
    (r"\boxed{\pm 7}", "7"),
    (r"\boxed{7 \approx 8}", "8"),
    (r"\boxed{(-\infty, \infty)}", "7"),
    (r"\boxed{\mathbb{R}}", "7"),
    (r"\boxed{x = 7 = 8}", "7"),
    ("the answer is 7 or 8 or 9", "8"),
    ("<answer>7</answer><answer>8</answer>", "7"),
    (r"\boxed{0.3}", r"\frac{1}{3}"),
    (r"\boxed{\text{any real number}}", "7"),
    (r"\boxed{7+0x}", "7 + y"),
    ("7" * 500, "7"),
]

# (question, completion, gold): the question's own computation restated (SmolLM2-135M learned this on
# chain_sum within 400 steps); with the question given, wrong; without it, a closed form (below)
RESTATED = [
    ("State the final answer to the following arithmetic problem: 4 - 1 =", "<answer>4 - 1</answer>", "3"),
    ("What is 45 + 23?", "State the final answer: 45 + 23 = <answer>45 + 23</answer>", "68"),
    ("Compute $2^{10}$.", r"\boxed{2^{10}}", "1024"),
    ("A box holds 3 rows of 4 eggs. How many eggs?", r"\boxed{3 \times 4}", "12"),
    ("Share 12 sweets between 2 children.", "<answer>12/2</answer>", "6"),
    ("What is 24 divided by 2?", r"\boxed{\frac{24}{2}}", "12"),
    ("Work out 5 - 9.", "The answer is 5 - 9", "-4"),
    ("In how many ways can 2 of 5 people be chosen?", r"\boxed{\binom{5}{2}}", "10"),
    (r"Evaluate $e^{\ln 7}$.", r"\boxed{e^{\ln 7}}", "7"),
    ("What is 6 times 7 times 2?", r"\boxed{6 \cdot 7 \cdot 2}", "84"),
]
# the same closed forms where they evaluate something the question did not state, or no question
CLOSED_FORMS = [
    ("What is the cube root of 27?", r"\boxed{3}", "3"),
    ("How many ways can the president and treasurer of a club of 10 be chosen?", r"\boxed{10 \cdot 9}", "90"),
    (None, r"\boxed{\sqrt[3]{27}}", "3"),
    (None, r"\boxed{\log_2 64}", "6"),
    (None, r"\boxed{2^{5}}", "32"),
    (None, r"\boxed{5!}", "120"),
    (None, r"\boxed{\ln e^{4}}", "4"),
    (None, r"\boxed{\frac{10!}{8!}}", "90"),
    (None, r"\boxed{10^{-3}}", "0.001"),
    (None, r"\boxed{8^{2/3}}", "4"),
]


@pytest.mark.parametrize(
    "completion,gold",
    [
        ("4 - 1 = 3", "3"),  # the computation, then its result: the result is the answer
        (r"\boxed{\frac{3}{4}}", "0.75"),
        ("<answer>6/4</answer>", "1.5"),
        (r"\boxed{1.5 \times 10^{3}}", "1500"),
        (r"\boxed{50\%}", "0.5"),
        (r"\boxed{3\sqrt{2}}", r"\sqrt{18}"),  # an expression gold: compared by value
        (r"\boxed{2^{10}}", "2^{10}"),
        ("<answer>-4</answer>", "-4"),
        ("<answer>x + 1</answer>", "1 + x"),
    ],
)
def test_numbers_in_any_written_form_still_pass_against_a_numeric_gold(completion: str, gold: str) -> None:
    v = verify_math(completion, gold)
    assert v.correct, v


@pytest.mark.parametrize("question,completion,gold", RESTATED)
def test_a_restated_computation_is_wrong_when_the_question_is_given(question: str, completion: str, gold: str) -> None:
    v = verify_math(completion, gold, question=question)
    assert v.status is Status.WRONG and v.details["rule"] == "restated", v
    assert "restates the question's computation" in v.reason


@pytest.mark.parametrize("question,completion,gold", CLOSED_FORMS)
def test_closed_forms_are_correct_unless_they_restate_the_question(
    question: str | None, completion: str, gold: str
) -> None:
    assert verify_math(completion, gold, question=question).correct


def test_refusing_every_computation_without_a_question_is_an_option() -> None:
    v = verify_math("<answer>4 - 1</answer>", "3", unevaluated="always")
    assert v.status is Status.WRONG and v.details["rule"] == "unevaluated"
    assert "'4 - 1' is a computation, not its result" in v.reason
    assert verify_math("<answer>4 - 1</answer>", "3").correct  # the default, without a question
    assert verify_math("<answer>4 - 1</answer>", "3", question="4 - 1 =", unevaluated="never").correct


def test_the_copied_answers_of_the_real_model_run_are_wrong_through_the_rewards() -> None:
    """SmolLM2-135M on reasoning-gym's chain_sum copied the question's expression as its answer and was
    paid for it (held-out 1.000). Replayed on chain_sum rows through the accuracy reward, which reads
    each row's prompt as the question: every copy is wrong, every computed answer right."""
    pytest.importorskip("reasoning_gym")
    import re

    from rlvr.data.reasoning_gym import load
    from rlvr.rewards import build_reward
    from rlvr.rewards.base import prompt_text

    rows = load("reasoning-gym:chain_sum?size=40&seed=3")
    copies, computed, golds, prompts = [], [], [], []
    for s in rows:
        expr = re.search(r":\s*([-\d][^=\n]*?)\s*=", prompt_text(s.prompt))
        assert expr is not None, prompt_text(s.prompt)
        gold = str(json.loads(s.gold)["entry"]["answer"])
        copies.append(f"<answer>{expr.group(1).strip()}</answer>")
        computed.append(f"<answer>{gold}</answer>")
        golds.append(gold)
        prompts.append(s.prompt)
    accuracy = build_reward("accuracy")
    assert accuracy(copies, answer=golds, prompt=prompts) == [0.0] * len(rows)
    assert accuracy(computed, answer=golds, prompt=prompts) == [1.0] * len(rows)


@pytest.mark.parametrize("completion,gold", GAMING)
def test_gaming_outputs_never_pass(completion: str, gold: str) -> None:
    v = verify_math(completion, gold)
    assert not v.correct, f"{completion!r} passed as {gold!r}: {v.reason}"


def test_unreadable_span_is_a_format_death_not_a_timeout():
    from rlvr import verify_math

    v = verify_math("??", "4")
    assert v.status.value == "no_answer" and "could be read" in v.reason
