"""Advantage estimators as a registry (``algo.estimator``): each one called by the engine-neutral
failure step on the admitted rows, so exclusion and clipping apply to every estimator alike."""

from __future__ import annotations

import pytest
import torch

from rlvr.algo.advantages import ESTIMATORS, AdvantageInputs, loo_advantages, register_estimator
from rlvr.config import FailureConfig, load_config
from rlvr.diagnostics.step import FailureAware, RolloutView
from rlvr.errors import ConfigError
from rlvr.types import Status, Verdict

OK, BAD, TIMEOUT = Verdict(Status.CORRECT), Verdict(Status.WRONG), Verdict(Status.TIMEOUT)


def _views(rows: list[tuple[Verdict, float]]) -> list[RolloutView]:
    return [RolloutView("p", v, t, {"accuracy": t}, text="x", version=0) for v, t in rows]


def _fa(objective: str, **kw) -> FailureAware:
    return FailureAware(FailureConfig(max_staleness=100, quarantine=False), group_size=4, objective=objective, **kw)


def test_rloo_subtracts_the_mean_of_the_groups_other_admitted_rows() -> None:
    # the third row timed out: out of the baseline, advantage 0
    d = _fa("rloo").decide(_views([(OK, 1.0), (BAD, 0.0), (TIMEOUT, 1.0), (OK, 1.0)]), step=1)
    assert d.admit.tolist() == [True, True, False, True]
    assert d.advantages.tolist() == pytest.approx([0.5, -1.0, 0.0, 0.5])
    rewards = torch.tensor([3.0, 1.0, 2.0, 0.0])
    brute = [float(rewards[i] - (rewards.sum() - rewards[i]) / 3) for i in range(4)]
    assert loo_advantages(rewards, 4).tolist() == pytest.approx(brute)


def test_the_default_is_grpos_group_normalised_total() -> None:
    rows = _views([(OK, 1.0), (BAD, 0.0), (OK, 1.0), (BAD, 0.0)])
    d = _fa("sum_then_normalize").decide(rows, step=1)
    assert d.advantages.tolist() == pytest.approx([0.866, -0.866, 0.866, -0.866], abs=1e-3)


def test_a_registered_estimator_is_used_and_its_excluded_rows_stay_at_zero() -> None:
    seen: list[AdvantageInputs] = []

    def centred(x: AdvantageInputs) -> torch.Tensor:  # r - mean over the admitted rows of the batch
        seen.append(x)
        r = torch.nan_to_num(x.totals)
        return (r - r[x.admit].mean()) * x.admit

    register_estimator("test-centred", centred)
    try:
        d = _fa("test-centred", advantage_clip=0.4).decide(
            _views([(OK, 1.0), (BAD, 0.0), (TIMEOUT, 5.0), (OK, 1.0)]), step=1
        )
    finally:
        ESTIMATORS._entries.pop("test-centred")
    assert seen and seen[0].admit.tolist() == [True, True, False, True]
    assert d.advantages.tolist() == pytest.approx([0.3333, -0.4, 0.0, 0.3333], abs=1e-4)  # clipped at 0.4


def test_estimators_an_engine_cannot_run_are_refused() -> None:
    with pytest.raises(ConfigError, match="advantage estimator"):
        _fa("nope")
    with pytest.raises(ValueError, match="engine=trl"):
        load_config(None, ["algo.estimator=normalize_then_sum"])
    with pytest.raises(ValueError, match="engine=rlvr"):
        load_config(None, ["engine=trl", "algo.estimator=rloo"])


def test_an_unknown_estimator_is_refused_before_a_model_loads(tmp_path, monkeypatch) -> None:
    import rlvr.setup as setup

    def no_model(*a, **k):
        raise AssertionError("a model was loaded for a config that cannot run")

    monkeypatch.setattr(setup, "load_model", no_model)
    cfg = load_config(None, [f"run.out_dir={tmp_path}", "algo.estimator=nope"])
    with pytest.raises(ConfigError, match="nope"):
        setup.build(cfg)
