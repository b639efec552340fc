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
    cfg = RewardsConfig(weights={"accuracy": 1.0}, outage=0.5, outage_seed=1, options={"accuracy": {"undecided": 0.0}})
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


def test_a_bad_gold_breaks_every_rollout_of_its_golds_for_the_whole_run() -> None:
    out = Outage(0.0, seed=2, bad_gold=0.25)
    golds = [str(g) for g in range(2000)]
    bad = [g for g in golds if out.gold_is_bad(g)]
    assert 0.21 < len(bad) / len(golds) < 0.29
    g = bad[0]
    hits = [out.hit(f"<answer>{i}</answer>", g) for i in range(50)]  # whatever the policy wrote
    assert all(h is not None and h.status is Status.BAD_GOLD and h.details["injected"] for h in hits)
    ok = next(x for x in golds if not out.gold_is_bad(x))
    assert out.apply([Verdict(Status.CORRECT)], ["<answer>1</answer>"], [ok])[0].status is Status.CORRECT
    assert {x for x in golds if Outage(0.0, seed=3, bad_gold=0.25).gold_is_bad(x)} != set(bad)  # seeded
    cfg = RewardsConfig(
        weights={"accuracy": 1.0}, bad_gold=0.25, outage_seed=2, options={"accuracy": {"bad_gold": 0.0}}
    )
    rows = Total.from_config(cfg).breakdown(
        [f"<answer>{g}</answer>" for g in golds[:200]], gold=golds[:200], task=["math"] * 200
    )
    assert [b.verdict.status is Status.BAD_GOLD for b in rows] == [x in bad for x in golds[:200]]
    assert all(b.total == 1.0 for b in rows if b.verdict.status is Status.CORRECT)
    with pytest.raises(ValueError, match="bad_gold"):
        Outage(0.0, bad_gold=2.0)


def test_a_bad_gold_row_is_left_out_or_scored_as_plain_grpo_does() -> None:
    statuses, totals = [Status.CORRECT, Status.WRONG, Status.BAD_GOLD, Status.BAD_GOLD], [1.0, 0.0, 0.0, 0.0]
    aware = FailureAware(FailureConfig(quarantine=False), group_size=4)
    d = aware.decide(_views(statuses, totals), step=1)
    assert d.causes[2:] == [Cause.BAD_GOLD] * 2 and d.admit.tolist() == [True, True, False, False]
    plain = FailureAware(FailureConfig(quarantine=False, verifier_failures="score"), group_size=4)
    d = plain.decide(_views(statuses, totals), step=1)
    assert d.causes[2:] == [Cause.BAD_GOLD] * 2 and d.admit.all() and d.advantages[2] < 0


def test_a_prompt_whose_gold_is_broken_is_quarantined_by_default() -> None:
    fa = FailureAware(FailureConfig(), group_size=4)
    for step in range(1, 4):  # each step's fresh rollouts (made by the policy of version step - 1)
        bad = [RolloutView("broken", Verdict(Status.BAD_GOLD), 0.0, text="x", version=step - 1) for _ in range(4)]
        fine = [
            RolloutView("fine", Verdict(s), t, text="x", version=step - 1)
            for s, t in zip([Status.CORRECT, Status.WRONG] * 2, [1.0, 0.0] * 2)
        ]
        fa.decide(bad + fine, step)
    assert fa.skip("broken") and not fa.skip("fine")
