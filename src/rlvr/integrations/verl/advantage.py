"""``rlvr_grpo``: verl's GRPO advantage over the admitted rows only (``algorithm.adv_estimator: rlvr_grpo``).

Called exactly as verl calls its own estimators (``token_level_rewards``, ``response_mask``,
``index`` = the prompt uid of each row, ``config`` = verl's ``AlgoConfig`` or None). A row whose
``response_mask`` is all zero (excluded by rlvr: invalid, stale, bad gold, by option truncated,
format deaths in the cold start) is out of its group's mean and std and gets advantage 0; a group
may be split anywhere in the batch. ``config.norm_adv_by_std_in_grpo: false`` is Dr. GRPO. Clipping
(``rlvr.advantage_clip``) is set by rlvr's trainer through :func:`configure`, since verl passes its
estimators only its own ``AlgoConfig``.

Differences from verl's ``grpo``: an excluded row does not count in its group; a group with one
admitted row gets 0 (no baseline, no signal), where verl's gives it its raw score. Otherwise it is
verl's ``grpo`` to the last bit (its operations, group by group: ``tests/verl/test_estimator_on_cpu.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rlvr.algo.advantages import indexed_group_advantages

_CLIP: dict[str, float | None] = {"clip": None}


def configure(*, clip: float | None) -> None:
    """Set the advantage clip every later ``rlvr_grpo`` call in this process uses."""
    _CLIP["clip"] = clip


def compute_rlvr_grpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool | None = None,
    config: Any = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(advantages, returns)``, both ``[B, T]`` (the row's advantage on each of its response tokens).

    Raises:
        ValueError: no ``index`` (verl passes the uids when the batch has them: GRPO needs groups).
    """
    if index is None:
        raise ValueError("rlvr_grpo needs the prompt uid of each row (verl's non_tensor_batch['uid'])")
    scale = norm_adv_by_std_in_grpo
    if scale is None:
        scale = bool(getattr(config, "norm_adv_by_std_in_grpo", True)) if config is not None else True
    scores = token_level_rewards.sum(-1).float()
    admitted = response_mask.sum(-1) > 0
    adv = indexed_group_advantages(scores, list(index), admitted, scale=scale, eps=epsilon, clip=_CLIP["clip"])
    out = adv[:, None].to(token_level_rewards.dtype) * response_mask
    return out, out


def register() -> None:
    """Register ``rlvr_grpo`` in verl's estimator registry (idempotent)."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    if ADV_ESTIMATOR_REGISTRY.get("rlvr_grpo") is not compute_rlvr_grpo_advantage:
        register_adv_est("rlvr_grpo")(compute_rlvr_grpo_advantage)
