"""``rlvr_grpo`` through verl's own advantage path (``compute_advantage_for_multi_trajectories``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from verl import DataProto
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

import rlvr.integrations.verl  # noqa: F401  (the plugin; import verl has loaded it already)
from rlvr.integrations.verl import advantage


def _batch(scores: list[float], uids: list[str], mask_rows: list[bool], width: int = 5) -> DataProto:
    n = len(scores)
    lengths = torch.randint(2, width + 1, (n,), generator=torch.Generator().manual_seed(0))
    mask = (torch.arange(width)[None] < lengths[:, None]).float()
    mask[~torch.tensor(mask_rows)] = 0.0
    rewards = torch.zeros(n, width)
    rewards[torch.arange(n), lengths - 1] = torch.tensor(scores)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )
    return data


def _keys(uids: list[str]) -> list[str]:
    """verl's trajectory keys ``{uid}_{session}_{index}``."""
    count: dict[str, int] = {}
    keys = []
    for u in uids:
        keys.append(f"{u}_{count.get(u, 0)}_0")
        count[u] = count.get(u, 0) + 1
    return keys


@pytest.mark.parametrize("norm", [True, False])
def test_with_every_row_admitted_it_is_verls_grpo_to_the_last_bit(norm: bool) -> None:
    """Groups interleaved, of 2 to 8 rows, scores binary or graded: with rlvr's features off, its
    estimator is verl's ``grpo`` bit for bit (GRPO and Dr. GRPO), so a run on rlvr_grpo does not
    leave verl's trajectory (the same holds of TRL's, ``tests/invariant/test_trl.py``)."""
    gen = torch.Generator().manual_seed(0)
    mine = core_algos.get_adv_estimator_fn("rlvr_grpo")
    for trial in range(60):
        n_groups, size = 1 + trial % 5, 2 + trial % 7
        uids = [f"u{k}" for k in range(n_groups) for _ in range(size)]
        uids = [uids[int(i)] for i in torch.randperm(len(uids), generator=gen)]
        scores = (torch.rand(len(uids), generator=gen) * (trial % 3 + 0.3)).tolist()
        if trial % 4 == 0:
            scores = [float(round(x)) for x in scores]
        data = _batch(scores, uids, [True] * len(uids))
        rewards, mask, index = (
            data.batch["token_level_rewards"],
            data.batch["response_mask"],
            data.non_tensor_batch["uid"],
        )
        ours, _ = mine(
            token_level_rewards=rewards,
            response_mask=mask,
            index=index,
            config=AlgoConfig(norm_adv_by_std_in_grpo=norm),
        )
        theirs, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=norm)
        assert torch.equal(ours, theirs), (trial, (ours - theirs).abs().max())


def test_excluded_rows_leave_the_baseline_through_verls_advantage_path():
    scores, uids = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0], ["a", "a", "a", "b", "b", "b"]
    admitted = [True, True, False, True, True, True]  # row 2: excluded by rlvr (all-zero response mask)
    data = _batch(scores, uids, admitted)
    out = compute_advantage_for_multi_trajectories(
        data, batch_keys=_keys(uids), adv_estimator="rlvr_grpo", config=AlgoConfig(adv_estimator="rlvr_grpo")
    )
    adv = out.batch["advantages"]
    assert float(adv[2].abs().sum()) == 0.0
    row_adv = [float(adv[i][out.batch["response_mask"][i] > 0][0]) for i in (0, 1)]
    assert row_adv[0] == pytest.approx(0.7071, abs=1e-3) and row_adv[1] == pytest.approx(-0.7071, abs=1e-3)
    # without the exclusion, row 2's 0 would have pulled group a's mean down to 1/3
    assert (adv * (1 - out.batch["response_mask"])).abs().sum() == 0  # nothing outside the response


def test_dr_grpo_and_the_clip_set_by_rlvrs_trainer():
    data = _batch([3.0, 0.0, 0.0, 0.0], ["a"] * 4, [True] * 4)
    fn = core_algos.get_adv_estimator_fn("rlvr_grpo")
    kw = {
        "token_level_rewards": data.batch["token_level_rewards"],
        "response_mask": data.batch["response_mask"],
        "index": data.non_tensor_batch["uid"],
    }
    raw, _ = fn(**kw, config=AlgoConfig(norm_adv_by_std_in_grpo=False))
    first = raw[0][data.batch["response_mask"][0] > 0][0]
    assert float(first) == pytest.approx(2.25)  # 3 - mean 0.75, no std scaling
    advantage.configure(clip=1.0)
    try:
        clipped, _ = fn(**kw, config=AlgoConfig(norm_adv_by_std_in_grpo=False))
    finally:
        advantage.configure(clip=None)
    assert float(clipped.max()) == pytest.approx(1.0)


def test_rows_verls_rollout_correction_rejects_leave_the_baseline_through_rlvr_grpo():
    """verl's own rollout correction (decoupled mode) zeroes the response mask of a row its
    ``seq_mean_k1`` band rejects, before advantages; ``rlvr_grpo`` then leaves the row out of its
    group's mean and std (the ``off_policy`` rule), where verl's ``grpo`` keeps its score in them."""
    from verl.trainer.config.algorithm import RolloutCorrectionConfig
    from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch

    scores, uids = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0], ["a", "a", "a", "b", "b", "b"]
    data = _batch(scores, uids, [True] * 6)
    mask = data.batch["response_mask"]
    old = -torch.rand(mask.shape, generator=torch.Generator().manual_seed(1))
    rollout = old.clone()
    rollout[1] -= 0.5  # the sampler found row 1 e^0.5 times less likely per token than the trainer
    data.batch["old_log_probs"] = old
    data.batch["rollout_log_probs"] = rollout
    cfg = RolloutCorrectionConfig(rollout_is=None, rollout_rs="seq_mean_k1", rollout_rs_threshold="0.99_1.01")
    data, _ = compute_rollout_correction_and_add_to_batch(data, cfg)
    kept = data.batch["response_mask"].sum(-1) > 0
    assert kept.tolist() == [True, False, True, True, True, True]
    ours, _ = core_algos.get_adv_estimator_fn("rlvr_grpo")(
        token_level_rewards=data.batch["token_level_rewards"],
        response_mask=data.batch["response_mask"],
        index=data.non_tensor_batch["uid"],
        config=None,
    )
    adv = ours.sum(-1) / data.batch["response_mask"].sum(-1).clamp(min=1)
    assert float(adv[1]) == 0.0
    a = torch.tensor([1.0, 0.0])  # group a without row 1: rows 0 and 2
    torch.testing.assert_close(adv[[0, 2]], (a - a.mean()) / (a.std() + 1e-6), atol=1e-4, rtol=1e-4)
    theirs, _ = core_algos.compute_grpo_outcome_advantage(
        data.batch["token_level_rewards"], data.batch["response_mask"], data.non_tensor_batch["uid"]
    )
    theirs_row = theirs.sum(-1) / data.batch["response_mask"].sum(-1).clamp(min=1)
    assert not torch.allclose(theirs_row[[0, 2]], adv[[0, 2]])  # verl's grpo kept row 1 in group a's stats
