"""Injected verifier outages: seeded per row, at the rate asked, and handled by the failure step as
the config says (excluded and redrawn, or scored as plain GRPO would)."""

from __future__ import annotations

import pytest

from rlvr.config import FailureConfig, RewardsConfig
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import FailureAware, RolloutView
from rlvr.rewards.combine import Total
from rlvr.types import Status, Verdict
from rlvr.verify.outage import Outage


def test_an_outage_hits_its_rate_of_rows_the_same_way_every_time() -> None:
    texts = [f"<answer>{i}</answer>" for i in range(4000)]
    out = Outage(0.2, seed=3)
    hits = [out.hit(t, "7") for t in texts]
    share = sum(h is not None for h in hits) / len(texts)
    assert 0.17 < share < 0.23
    assert {h.status for h in hits if h is not None} == {Status.TIMEOUT, Status.ERROR}
    assert [out.hit(t, "7") for t in texts[:50]] == hits[:50]  # the same rollout, the same outcome
    assert [Outage(0.2, seed=4).hit(t, "7") for t in texts[:200]] != hits[:200]
    assert all(Outage(0.0).hit(t, "7") is None for t in texts[:100])
    with pytest.raises(ValueError, match="outage"):
        Outage(1.5)


def test_the_total_from_a_config_injects_it_into_every_component() -> None:
    cfg = RewardsConfig(weights={"accuracy": 1.0}, outage=0.5, outage_seed=1,
                        options={"accuracy": {"undecided": 0.0}})
    total = Total.from_config(cfg)
    texts = [f"<answer>{i}</answer>" for i in range(200)]
    rows = total.breakdown(texts, gold=[str(i) for i in range(200)], task=["math"] * 200)
    failed = [b for b in rows if b.verdict.status in (Status.TIMEOUT, Status.ERROR)]
    assert 60 < len(failed) < 140 and all(b.verdict.details["injected"] for b in failed)
    assert all(b.components["accuracy"] == 0.0 for b in failed)  # the reward's own undecided score
    assert all(b.total == 1.0 for b in rows if b.verdict.status is Status.CORRECT)
    assert Total.from_config(RewardsConfig()).outage is None


def _views(statuses: list[Status], totals: list[float]) -> list[RolloutView]:
    return [RolloutView("p", Verdict(s), t, text="x") for s, t in zip(statuses, totals)]


def test_a_failed_verification_is_excluded_and_redrawn_or_scored_as_plain_grpo_does() -> None:
    statuses, totals = [Status.CORRECT, Status.WRONG, Status.TIMEOUT, Status.ERROR], [1.0, 0.0, 0.0, 0.0]
    aware = FailureAware(FailureConfig(quarantine=False), group_size=4)
    d = aware.decide(_views(statuses, totals), step=1)
    assert d.admit.tolist() == [True, True, False, False] and aware.to_resample(d.causes) == [2, 3]
    plain = FailureAware(FailureConfig(quarantine=False, verifier_failures="score"), group_size=4)
    d = plain.decide(_views(statuses, totals), step=1)
    assert d.causes[2:] == [Cause.INVALID, Cause.INVALID]  # still told apart in the logs
    assert d.admit.all() and d.advantages[2] < 0 and plain.to_resample(d.causes) == []
