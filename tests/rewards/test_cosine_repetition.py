"""Cosine length scaling and the n-gram repetition penalty at the seed's boundaries."""

import math

import pytest

from rlvr.errors import ConfigError
from rlvr.rewards import build_reward
from rlvr.rewards.length import cosine_scale
from rlvr.rewards.repetition import repetition_fraction, words


def _pad(answer: str, length: int) -> str:
    """A completion of exactly ``length`` characters ending with ``answer``."""
    return "x" * (length - len(answer)) + answer


@pytest.mark.parametrize(
    ("length", "correct", "expected"),
    [
        # correct: 1.0 at length 0 ... 0.9 at half ... 0.8 at max_len (seed defaults)
        (11, True, 0.8 + 0.1 * (1 + math.cos(math.pi * 11 / 1000))),
        (500, True, 0.9),
        (1000, True, 0.8),
        (5000, True, 0.8),  # beyond max_len the cosine does not turn back up
        # wrong: -0.5 when short (punished most) ... -0.3 at half ... -0.1 at max_len
        (11, False, -0.1 + (-0.2) * (1 + math.cos(math.pi * 11 / 1000))),
        (500, False, -0.3),
        (1000, False, -0.1),
    ],
)
def test_cosine_table(length, correct, expected):
    gold = "7"
    answer = r"\boxed{7}" if correct else r"\boxed{8}"
    reward = build_reward("cosine")
    assert reward([_pad(answer, length)], answer=[gold]) == [pytest.approx(expected)]
    assert reward.last[0].info["length"] == length


def test_cosine_formula_endpoints():
    assert cosine_scale(0, 1000, 0.8, 1.0) == pytest.approx(1.0)
    assert cosine_scale(1000, 1000, 0.8, 1.0) == pytest.approx(0.8)
    assert cosine_scale(0, 1000, -0.1, -0.5) == pytest.approx(-0.5)


def test_cosine_no_answer_is_wrong_and_bad_gold_is_none():
    reward = build_reward("cosine")
    assert reward(["nothing here"], answer=["7"]) == [pytest.approx(cosine_scale(12, 1000, -0.1, -0.5))]
    assert reward([r"\boxed{7}"], answer=[r"\frac{"]) == [None]


def test_cosine_token_lengths():
    reward = build_reward("cosine", length="tokens", max_len=10)
    # TRL passes completion_ids: the length is the number of tokens, not characters
    assert reward([r"\boxed{7}"], answer=["7"], completion_ids=[[1] * 10]) == [pytest.approx(0.8)]
    with pytest.raises(ConfigError, match="completion_ids column or tokenizer"):
        reward([r"\boxed{7}"], answer=["7"])

    class CharTok:
        def __call__(self, texts, add_special_tokens=False):
            return {"input_ids": [list(t) for t in texts]}

    tok_reward = build_reward("cosine", length="tokens", max_len=9, tokenizer=CharTok())
    assert tok_reward([r"\boxed{7}"], answer=["7"]) == [pytest.approx(0.8)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a b", 0.0),  # fewer words than n: no n-grams, no penalty
        ("a b c d e f", 0.0),  # 4 trigrams, all unique
        ("a b c a b c", -0.1 * (1 - 3 / 4)),  # abc bca cab abc: 3 unique of 4
        ("the the the the the the", -0.1 * (1 - 1 / 4)),
        ("A B C a b c", -0.1 * (1 - 3 / 4)),  # case-insensitive
    ],
)
def test_repetition_table(text, expected):
    assert build_reward("repetition")([text]) == [pytest.approx(expected)]


def test_repetition_is_cjk_aware():
    assert words("我们先算 3+4") == ["我", "们", "先", "算", "3+4"]
    # without per-character splitting this would be one word and no penalty at all
    frac, total = repetition_fraction("答案是七答案是七答案是七", 3)
    assert total == 10 and frac == pytest.approx(1 - 4 / 10)  # 4 distinct trigrams in a 4-cycle
    assert build_reward("repetition_penalty", n=2, max_penalty=-1.0)(["好好好好"]) == [pytest.approx(-(1 - 1 / 3))]


def test_repetition_config_errors():
    with pytest.raises(ConfigError, match="must be <= 0"):
        build_reward("repetition", max_penalty=0.5)
    with pytest.raises(ConfigError, match="n must be >= 1"):
        build_reward("repetition", n=0)
