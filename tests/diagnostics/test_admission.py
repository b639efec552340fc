"""Admission: which rollouts enter the group statistics, on hand-made groups; the cold-start switch."""

import math

import pytest

torch = pytest.importorskip("torch")

from rlvr.algo.advantages import group_advantages
from rlvr.diagnostics.admission import ColdStart, admission
from rlvr.diagnostics.causes import Cause

C, W, N, T, INV = Cause.CORRECT, Cause.WRONG, Cause.NO_ANSWER, Cause.TRUNCATED, Cause.INVALID


def test_invalid_is_out_and_changes_the_statistics_as_by_hand():
    causes = [C, W, W, INV]
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])
    mask = admission(causes, rewards, 4)
    assert mask.tolist() == [True, True, True, False]
    adv = group_advantages(rewards, 4, mask, eps=0.0)
    # admitted 1, 0, 0: mean 1/3, unbiased std sqrt(1/3); the invalid one gets 0
    s = math.sqrt(1 / 3)
    assert adv.tolist() == pytest.approx([(2 / 3) / s, (-1 / 3) / s, (-1 / 3) / s, 0.0])
    with_invalid = group_advantages(rewards, 4, eps=0.0)
    assert with_invalid[1] != adv[1]  # counting the invalid rollout as a 0 would have changed the others


def test_options_truncated_cold_start_flat_groups_and_nan():
    causes = [C, W, N, T, C, C, C, C]
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, float("nan")])
    assert admission(causes, rewards, 4).tolist() == [True] * 7 + [False]  # NaN reward: out
    assert admission(causes, rewards, 4, exclude_truncated=True)[3].item() is False
    assert admission(causes, rewards, 4, cold_start=True)[2].item() is False
    flat = admission(causes, rewards, 4, drop_flat_groups=True)
    assert flat[:4].all() and not flat[4:].any()  # the second group is all 1.0: no signal
    assert not admission([Cause.STALE, Cause.BAD_GOLD], torch.tensor([1.0, 0.0]), 2).any()


def test_cold_start_switches_once_and_stays_off():
    cs = ColdStart(threshold=0.05, window=3)
    rates = [0.5, 0.3, 0.04, 0.03, 0.02, 0.9, 0.0]
    on = [cs.update(r, step) for step, r in enumerate(rates, 1)]
    # window means: .5/.3/.04 -> .28; .3/.04/.03 -> .12; .04/.03/.02 -> .03 < .05 at step 5
    assert on == [True, True, True, True, False, False, False] and cs.switched_at == 5
    again = ColdStart(threshold=0.05, window=3)
    again.load(cs.state())
    assert again.update(0.9, 8) is False
