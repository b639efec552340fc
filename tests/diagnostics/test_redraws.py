"""Thin steps and outages in the failure step (engine-neutral): redraw rounds and budget, the
outage rule, groups too thin to keep, the step scale."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import FailureConfig
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.redraws import MAX_ROUNDS, Redraws, thin_groups
from rlvr.diagnostics.step import FailureAware, RolloutView
from rlvr.types import Status, Verdict


def test_rounds_without_a_budget_and_a_budget_without_rounds() -> None:
    r = Redraws.of(FailureConfig(resample_tries=2), rows=32)
    assert [len(r.plan(list(range(10)), a)) for a in (1, 2, 3)] == [10, 10, 0]
    b = Redraws.of(FailureConfig(resample_tries=2, redraw_budget=1.5), rows=32)  # 48 extra episodes
    taken = [len(b.plan(list(range(20)), a)) for a in range(1, 6)]
    assert taken == [20, 20, 8, 0, 0] and b.spent == 48
    endless = Redraws(tries=0, budget=10**9)
    assert endless.plan([0], MAX_ROUNDS) == [0] and endless.plan([0], MAX_ROUNDS + 1) == []


@pytest.mark.parametrize(
    ("first", "second", "down"),
    [
        ((32, 0), (32, 0), True),  # faults in the first draw and the first redraw, no call answered: down
        ((20, 0), (5, 0), True),  # episodes that did not call (or called wrongly) say nothing of it
        ((31, 1), (32, 0), False),  # one call got through: a high rate, not an outage
        ((32, 0), (30, 2), False),
        ((0, 0), (0, 0), False),  # nothing reached the environment: no evidence it is down
    ],
)
def test_an_outage_is_a_first_draw_and_a_first_redraw_all_faulted(first, second, down) -> None:
    r = Redraws.of(FailureConfig(redraw_budget=12.0), rows=32)
    r.observe(*first, attempt=0)
    r.observe(*second, attempt=1)
    assert r.down is down
    if down:  # it stops redrawing: the budget is not spent on a server that is down
        assert r.plan(list(range(32)), 2) == []


def test_waiting_out_outages_can_be_switched_off() -> None:
    r = Redraws.of(FailureConfig(wait_out_outages=False), rows=4)
    r.observe(4, 4, 0)
    r.observe(4, 4, 1)
    assert not r.down


def test_thin_groups() -> None:
    admit = torch.tensor([1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]).bool()
    assert thin_groups(admit, 4, 2).tolist() == [True, False, False, False]
    assert thin_groups(admit, 4, 3).tolist() == [True, True, False, False]


def _views(rewards: list[float | None], faulted: set[int]) -> list[RolloutView]:
    return [
        RolloutView(
            f"p{i // 4}",
            Verdict(Status.CORRECT if r else Status.WRONG),
            r,
            text="x",
            episode=Cause.TOOL_ERROR if i in faulted else None,
        )
        for i, r in enumerate(rewards)
    ]


def test_a_thin_group_leaves_the_step_and_is_counted() -> None:
    rewards = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    views = _views(rewards, faulted={0, 1})  # group 0 keeps two rows: +-0.71 from one coin flip
    keep = FailureAware(FailureConfig(), group_size=4).decide(views, step=1)
    thin = FailureAware(FailureConfig(min_group_rows=3), group_size=4).decide(views, step=1)
    assert keep.admit.tolist()[:4] == [False, False, True, True]
    assert thin.admit.tolist() == [False] * 4 + [True] * 4
    assert float(thin.advantages[:4].abs().sum()) == 0.0
    assert thin.metrics["failure/thin_groups"] == 0.5 and keep.metrics["failure/thin_groups"] == 0.0


def test_the_step_scale_is_the_admitted_share_when_asked() -> None:
    views = _views([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0], faulted={0, 1, 2})
    assert FailureAware(FailureConfig(), group_size=4).decide(views, step=1).scale == 1.0
    d = FailureAware(FailureConfig(thin_step_scale=True), group_size=4).decide(views, step=1)
    assert d.scale == pytest.approx(5 / 8) and d.metrics["failure/admitted_share"] == pytest.approx(5 / 8)


def test_a_step_the_environment_was_down_admits_nothing_and_says_so() -> None:
    views = _views([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0], faulted=set(range(6)))
    d = FailureAware(FailureConfig(), group_size=4).decide(views, step=1, down=True)
    assert not d.admit.any() and d.metrics["env/down"] == 1.0
    up = FailureAware(FailureConfig(), group_size=4).decide(views, step=1, down=False)
    assert up.metrics["env/down"] == 0.0 and up.admit.any()
    assert "env/down" not in FailureAware(FailureConfig(), group_size=4).decide(views, step=1).metrics
