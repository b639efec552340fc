"""Reward-hacking alarms on hand-made completions and reward curves."""

from rlvr.diagnostics.alarms import (
    FormatWithoutAccuracy,
    answer_blocks,
    answer_only_in_reasoning,
    share,
)


def test_answer_blocks_and_reasoning_only_answers():
    assert answer_blocks("<answer>1</answer> or <answer>2</answer>") == 2
    assert answer_blocks("<think>x</think><answer>1</answer>") == 1
    assert answer_only_in_reasoning("<think>so the answer is 7</think>")
    assert answer_only_in_reasoning("<think>3+4 = 7</think><answer> </answer>")
    assert answer_only_in_reasoning(r"<think>\boxed{7}")  # truncated inside the reasoning
    assert not answer_only_in_reasoning("<think>3+4 = 7</think><answer>7</answer>")
    assert not answer_only_in_reasoning("<think>let me think</think>")
    assert not answer_only_in_reasoning("7")
    assert share(["<answer>1</answer><answer>2</answer>", "<answer>1</answer>"], lambda t: answer_blocks(t) > 1) == 0.5


def test_format_rising_while_accuracy_is_flat_fires_only_then():
    alarm = FormatWithoutAccuracy(window=3, rise=0.1, flat=0.02)
    fired = [alarm.update(f, 0.3) for f in (0.2, 0.2, 0.2, 0.5, 0.6, 0.7)]
    assert fired == [False] * 5 + [True]
    honest = FormatWithoutAccuracy(window=3, rise=0.1, flat=0.02)
    assert not any(honest.update(f, a) for f, a in zip((0.2, 0.2, 0.2, 0.5, 0.6, 0.7), (0.1, 0.1, 0.1, 0.3, 0.4, 0.5)))
    assert not honest.update(None, 0.5)
