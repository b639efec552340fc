"""Hand-computed tables for accuracy, format, tag_count and reasoning_steps."""

import pytest

from rlvr.errors import ConfigError, DataError
from rlvr.rewards import build_reward
from rlvr.types import Status


@pytest.mark.parametrize(
    ("completion", "gold", "expected", "status"),
    [
        (r"so \boxed{\frac12}", "0.5", 1.0, Status.CORRECT),
        ("<think>x</think><answer>7</answer>", "8", 0.0, Status.WRONG),
        ("I give up", "8", 0.0, Status.NO_ANSWER),
        (r"\boxed{3}", r"\frac{", 0.5, Status.BAD_GOLD),  # the seed's neutral score
        (r"\boxed{3}", None, 0.5, Status.BAD_GOLD),
    ],
)
def test_accuracy_table(completion, gold, expected, status):
    reward = build_reward("accuracy")
    assert reward([completion], solution=[gold]) == [expected]
    assert reward.last[0].verdict.status is status


def test_accuracy_bad_gold_can_be_excluded_and_timeouts_are_not_wrong():
    reward = build_reward("accuracy", bad_gold=None)
    assert reward([r"\boxed{3}"], answer=[r"\frac{"]) == [None]
    hang = build_reward("accuracy", timeout=0.2)
    # a verdict that says nothing about the answer is excluded by default, never scored 0
    from rlvr.types import Verdict

    assert hang(["x"], answer=["1"], verdicts=[Verdict(Status.TIMEOUT)]) == [None]
    assert build_reward("accuracy", undecided=0.0)(["x"], answer=["1"], verdicts=[Verdict(Status.ERROR)]) == [0.0]


def test_accuracy_reads_chat_messages_and_any_gold_column():
    reward = build_reward("accuracy")
    chat = [[{"role": "assistant", "content": r"\boxed{12}"}]]
    assert reward(chat, ground_truth=["12"]) == [1.0]
    assert reward(chat, gold="12") == [1.0]  # a scalar column is broadcast
    with pytest.raises(DataError, match="no gold-answer column"):
        reward(chat, prompt=["q"])
    with pytest.raises(DataError, match="2 values for 1 completions"):
        reward(chat, answer=["1", "2"])


@pytest.mark.parametrize(
    ("completion", "expected", "problem"),
    [
        ("<think>a</think><answer>1</answer>", 1.0, None),
        ("  <think>\nlong\nthought\n</think>\n\n<answer> 1 </answer>\n", 1.0, None),
        ("<think>a</think>", 0.0, "missing <answer>"),
        ("<think>a</think><answer>1</answer> trailing", 0.0, "text after </answer>"),
        ("hi <think>a</think><answer>1</answer>", 0.0, "text before <think>"),
        ("<answer>1</answer><think>a</think>", 0.0, "tags out of order"),
        ("<think>a</think>between<answer>1</answer>", 0.0, "text between </think> and <answer>"),
        ("<think>a</think><answer>1</answer><answer>2</answer>", 0.0, "<answer> appears 2 times"),
        ("", 0.0, "missing <think>"),
    ],
)
def test_format_table(completion, expected, problem):
    reward = build_reward("format")
    assert reward([completion]) == [expected]
    assert reward.last[0].info.get("problem") == problem


def test_format_options():
    assert build_reward("format", think_tag="reasoning", answer_tag="final")(
        ["<reasoning>r</reasoning><final>2</final>"]
    ) == [1.0]
    assert build_reward("format", prefilled_think=True)(["r</think><answer>2</answer>"]) == [1.0]
    tags = build_reward("tag_count")
    assert tags(["<think>a</think><answer>1</answer>", "<think>a</think>", "<think><think>", "none"]) == [
        1.0,
        0.5,
        0.0,
        0.0,
    ]
    assert tags.__name__ == "tag_count"
    with pytest.raises(ConfigError, match="mode"):
        build_reward("format", mode="loose")


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("no structure at all", 0.0),
        ("Step 1: add", 1 / 3),
        ("First, add. Second, carry.", 2 / 3),
        ("Step 1: a\nStep 2: b\nStep 3: c", 1.0),
        ("1. a\n2. b\n3. c\n4. d\n5. e", 1.0),  # capped at 1
        ("list:\n- a\n* b", 2 / 3),
    ],
)
def test_reasoning_steps_table(completion, expected):
    assert build_reward("reasoning_steps")([completion]) == [pytest.approx(expected)]


def test_unknown_reward_and_option_are_config_errors():
    with pytest.raises(ConfigError, match="unknown reward 'acuracy'; registered: accuracy"):
        build_reward("acuracy")
    with pytest.raises(ConfigError, match="unexpected keyword"):
        build_reward("format", max_len=3)


def test_answer_only_format():
    reward = build_reward("format", think_tag=None)
    assert reward(["<answer>81</answer>", " <answer>8</answer>\n", "<answer>8</answer>x", "81"]) == [1.0, 1.0, 0.0, 0.0]
    assert reward.last[2].info["problem"] == "text after </answer>"


def test_empty_answer_block_does_not_earn_the_format_reward():
    reward = build_reward("format", think_tag=None)
    assert reward(["<answer></answer>", "<answer> </answer>", "<answer>0</answer>"]) == [0.0, 0.0, 1.0]
    assert reward.last[0].info["problem"] == "empty <answer> block"
    assert build_reward("format")(["<think></think><answer>4</answer>"]) == [1.0]  # an empty think is fine
