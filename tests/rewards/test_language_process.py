"""Language consistency (py3langid + scripts) and the process reward's step signals."""

import pytest

from rlvr.rewards import build_reward
from rlvr.rewards.language import consistency, detect_language
from rlvr.rewards.process import completion_results, reference_steps, step_signals

EN = "First we add the two numbers together. Then we check the carry digit carefully."
ZH = "首先我们把两个数相加。然后检查进位。"


@pytest.mark.parametrize(
    ("text", "target", "expected"),
    [
        (EN, "en", 1.0),
        (ZH, "zh", 1.0),
        (EN, "zh", 0.0),
        (ZH + " " + EN, "zh", pytest.approx(16 / (16 + 64))),  # letters: 16 Han, 31 + 33 Latin
        ("Donc nous additionnons les deux nombres ensemble maintenant.", "en", 0.0),
        (r"$x^2 + y^2 = 25$, x = 3, \boxed{5}", "zh", 1.0),  # maths only: no language to disagree
        ("今日は良い天気ですね。答えは七です。", "ja", 1.0),
    ],
)
def test_consistency_table(text, target, expected):
    share, _ = consistency(text, target)
    assert share == expected


def test_target_from_language_column_option_or_prompt():
    reward = build_reward("language_consistency")
    assert reward([ZH], language=["zh"]) == [1.0]
    assert reward([ZH], prompt=["请计算二加三等于多少，并写出步骤。"]) == [1.0]
    assert reward([EN], prompt=[[{"role": "user", "content": "请计算二加三等于多少。"}]]) == [0.0]
    assert reward([EN]) == [None]  # no language, no prompt: not applicable
    assert build_reward("language", language="en")([EN]) == [1.0]


def test_detect_language():
    assert detect_language("What is the sum of the first five prime numbers?") == "en"
    assert detect_language("求前五个质数之和。") == "zh"
    assert detect_language("Q: 23+58") == "Latin"  # too short to name a language; the script still counts
    assert detect_language("12 + 5") is None


GSM = (
    "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n"
    "#### 72"
)


def test_reference_steps_from_gsm8k_annotations():
    steps = reference_steps(GSM)
    assert [float(r.value) for _, r in steps] == [24.0, 72.0]
    assert reference_steps("72") == []  # a bare answer has no steps


def test_step_signals_are_order_and_method_tolerant():
    steps = reference_steps(GSM)
    # different order, different route (24 stated in words, 72 reached as 24 * 3): both steps count
    signals, wrong = step_signals("72 = 24 * 3 in total, since half of 48 is 24.", steps)
    assert signals == [1, 1] and wrong == []
    signals, wrong = step_signals("She sold 48 + 25 = 73 clips.", steps)
    assert signals == [0, 0]
    signals, wrong = step_signals("48/2 = 24, and 24 + 48 = 71.", steps)
    assert signals == [1, 0, -1] and wrong == ["24 + 48 = 71"]


def test_completion_results_are_rounding_aware():
    results, wrong = completion_results("10/3 = 3.33 and 2/3 = 0.67 but 7 x 6 = 41")
    assert wrong == ["7 x 6 = 41"]
    assert len(results) == 3


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("48/2 = 24. 48 + 24 = 72. The answer is 72.", 0.6 * 1.0 + 0.4),
        ("48/2 = 24. 48 + 24 = 70. The answer is 70.", 0.6 * (1 + 0 - 1) / 3 + 0.0),
        ("The answer is 72.", 0.6 * 0.5 + 0.4),  # the final answer reaches the last step
        ("The answer is 5.", 0.0),
    ],
)
def test_process_reward_table(completion, expected):
    assert build_reward("process")([completion], answer=[GSM]) == [pytest.approx(expected)]


def test_process_without_steps():
    assert build_reward("process")(["The answer is 72."], answer=["72"]) == [None]
    assert build_reward("process", missing="outcome")(["The answer is 72."], answer=["72"]) == [1.0]
    # explicit reference steps from a column
    reward = build_reward("process")
    assert reward(["so 3 * 4 = 12 and 12 + 1 = 13"], answer=["13"], steps=[["3*4 = 12", "12+1 = 13"]]) == [1.0]
