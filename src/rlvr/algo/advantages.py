"""Group-normalised advantages over the rollouts a mask admits (pure tensor functions).

GRPO's baseline is the group itself: ``A_i = (r_i - mean_g) / (std_g + eps)`` over
the G rollouts of one prompt. Only *admitted* rollouts (``mask``) enter the mean
and std, and excluded ones get advantage 0 (no gradient): the failure-aware
trainer uses this to keep truncated, broken or stale rollouts from distorting
the group statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from rlvr.registry import Registry

#: How advantages are scaled: by each group's std (GRPO), by the batch's std (TRL's ``batch``), or
#: not at all (Dr. GRPO's ``r - mean``).
Scale = Literal["group", "batch", "none"]


def scale_of(scale: bool | str) -> Scale:
    """``True`` / ``False`` (the older spelling) as ``group`` / ``none``; a name checked.

    Examples:
        >>> scale_of(True), scale_of(False), scale_of("batch")
        ('group', 'none', 'batch')
    """
    if isinstance(scale, bool):
        return "group" if scale else "none"
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"advantage scale {scale!r}: choose group, batch or none")
    return scale  # type: ignore[return-value]


def group_advantages(
    rewards: torch.Tensor,
    group_size: int,
    mask: torch.Tensor | None = None,
    *,
    scale: bool | Scale = True,
    eps: float = 1e-4,
    clip: float | None = None,
) -> torch.Tensor:
    """Advantages ``[N]`` for rewards ``[N]`` laid out as consecutive groups of ``group_size``.

    Args:
        rewards: one reward per rollout; NaN rewards must be masked out.
        group_size: rollouts per prompt (G); ``N`` must be a multiple of it.
        mask: ``[N]`` bool, True for rollouts that count (default: all).
        scale: ``group`` (or True): divide by the group's std (GRPO); ``batch``: by the std of every
            admitted reward of the batch (TRL's ``scale_rewards="batch"``); ``none`` (or False):
            Dr. GRPO's ``r - mean``. Every std is unbiased and over admitted rows only.
        eps: added to the std (a group whose rewards are all equal gets 0, not NaN).
        clip: clamp advantages to ``[-clip, clip]`` (None: no clamp).

    Examples:
        >>> group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), 2).tolist()
        [0.7070..., -0.7070..., 0.0, 0.0]
    """
    n = rewards.numel()
    if n % group_size:
        raise ValueError(f"{n} rewards do not split into groups of {group_size}")
    mask = torch.ones(n, dtype=torch.bool, device=rewards.device) if mask is None else mask.bool()
    # the statistics are TRL's, operation for operation (nanmean, nanstd over NaN-for-excluded), so that
    # a batch with every row admitted gets TRL's advantages to the last bit: a run that swaps TRL's
    # GRPOTrainer for rlvr's with the failure features off is TRL's run, not a neighbour of it
    kept = torch.where(mask, rewards, torch.full_like(rewards, float("nan")))
    r = kept.view(-1, group_size)  # [P, G]
    m = mask.view(-1, group_size).to(rewards.dtype)
    count = m.sum(1, keepdim=True)  # [P, 1]
    centred = torch.nan_to_num(r - torch.nanmean(r, dim=1, keepdim=True), nan=0.0)
    adv = centred
    how = scale_of(scale)
    if how == "group":
        adv = centred / (_nanstd(r, dim=1) + eps)  # unbiased, over the admitted rollouts
    elif how == "batch":
        std = _nanstd(kept) if int(mask.sum()) > 1 else torch.zeros((), dtype=rewards.dtype, device=rewards.device)
        adv = centred / (std + eps)
    adv = torch.where(count >= 2, adv, torch.zeros_like(adv))  # one admitted rollout: no baseline, no signal
    if clip is not None:
        adv = adv.clamp(-clip, clip)
    return (adv * m).view(-1)


def _nanstd(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """The unbiased std of ``x`` ignoring NaNs, as ``trl.trainer.utils.nanstd`` computes it (the same
    operations in the same order: the same float32 result), kept dims."""
    mean = torch.nanmean(x, dim=dim, keepdim=True)
    var = torch.nanmean((x - mean) ** 2, dim=dim, keepdim=True)
    count = torch.sum(~torch.isnan(x), dim=dim, keepdim=True)
    correction = torch.where(count > 1, count / (count - 1), torch.full_like(count / 1, float("nan")))
    return torch.sqrt(var * correction)


def normalized_sum(
    values: torch.Tensor, weights: torch.Tensor, group_size: int, mask: torch.Tensor | None = None, eps: float = 1e-4
) -> torch.Tensor:
    """GDPO's reward (TRL's ``multi_objective_aggregation="normalize_then_sum"``): each reward
    function's values ``[N, K]`` normalised within its group over the admitted rows (NaN: the
    function did not apply), then summed with ``weights [K]``: ``[N]`` (NaN where no function applied).

    Examples:
        >>> v = torch.tensor([[1.0, 10.0], [0.0, 30.0], [1.0, 5.0], [1.0, 5.0]])
        >>> normalized_sum(v, torch.tensor([1.0, 0.5]), 2).tolist()
        [0.353..., -0.353..., 0.0, 0.0]
    """
    n, k = values.shape
    mask = torch.ones(n, dtype=torch.bool, device=values.device) if mask is None else mask.bool()
    present = ~torch.isnan(values) & mask[:, None]  # [N, K]
    v = torch.where(present, values, torch.zeros_like(values)).view(-1, group_size, k)  # [P, G, K]
    m = present.view(-1, group_size, k).to(values.dtype)
    count = m.sum(1, keepdim=True)  # [P, 1, K]
    mean = v.sum(1, keepdim=True) / count.clamp(min=1)
    centred = (v - mean) * m
    std = ((centred**2).sum(1, keepdim=True) / (count - 1).clamp(min=1)).sqrt()
    normed = (centred / (std + eps)).view(n, k)
    total = (normed * weights.to(values.dtype)).sum(1)
    return torch.where(present.any(1), total, torch.full_like(total, float("nan")))


def flat_groups(
    rewards: torch.Tensor, group_size: int, mask: torch.Tensor | None = None, tol: float = 1e-6
) -> torch.Tensor:
    """``[P]`` bool: groups whose admitted rewards are all (nearly) equal, or that admit fewer than
    two rollouts. They carry no learning signal."""
    n = rewards.numel()
    mask = torch.ones(n, dtype=torch.bool, device=rewards.device) if mask is None else mask.bool()
    r, m = rewards.view(-1, group_size), mask.view(-1, group_size)
    hi = torch.where(m, r, torch.full_like(r, -torch.inf)).max(1).values
    lo = torch.where(m, r, torch.full_like(r, torch.inf)).min(1).values
    return (hi - lo <= tol) | (m.sum(1) < 2)


def zero_std_fraction(
    rewards: torch.Tensor, group_size: int, mask: torch.Tensor | None = None, tol: float = 1e-6
) -> float:
    """Share of groups in :func:`flat_groups`."""
    return float(flat_groups(rewards, group_size, mask, tol).float().mean())


def indexed_group_advantages(
    rewards: torch.Tensor,
    index: Sequence[Hashable],
    mask: torch.Tensor | None = None,
    *,
    scale: bool | Scale = True,
    eps: float = 1e-6,
    clip: float | None = None,
) -> torch.Tensor:
    """:func:`group_advantages` for rows grouped by an id (verl's ``uid``) in any order: a group may
    be split across the batch. Same rules: only admitted rows enter a group's mean and std, excluded
    rows and groups with fewer than two admitted rows get 0.

    Examples:
        >>> indexed_group_advantages(torch.tensor([1.0, 1.0, 0.0, 1.0]), ["a", "b", "a", "b"]).tolist()
        [0.7071..., 0.0, -0.7071..., 0.0]
    """
    n = rewards.numel()
    if len(index) != n:
        raise ValueError(f"{n} rewards but {len(index)} group ids")
    mask = torch.ones(n, dtype=torch.bool, device=rewards.device) if mask is None else mask.bool()
    how = scale_of(scale)
    batch_std = rewards.new_zeros(())
    if how == "batch":
        kept = rewards[mask]
        batch_std = kept.std() if kept.numel() > 1 else kept.new_zeros(())
    rows: dict[Hashable, list[int]] = {}
    for i, (k, admitted) in enumerate(zip(index, mask.tolist(), strict=True)):
        if admitted:
            rows.setdefault(k, []).append(i)
    adv = torch.zeros_like(rewards)
    # verl's operations, group by group (torch.mean, torch.std of the group's scores, then
    # (score - mean) / (std + eps)): with every row admitted, rlvr_grpo is verl's grpo to the last bit
    for members in rows.values():
        if len(members) < 2:  # no baseline, no signal
            continue
        at = torch.tensor(members, device=rewards.device)
        group = rewards[at]
        centred = group - torch.mean(group)
        if how == "group":
            centred = centred / (torch.std(group) + eps)
        elif how == "batch":
            centred = centred / (batch_std + eps)
        adv[at] = centred
    if clip is not None:
        adv = adv.clamp(-clip, clip)
    return adv


def loo_advantages(rewards: torch.Tensor, group_size: int, mask: torch.Tensor | None = None) -> torch.Tensor:
    """RLOO's advantages: each admitted reward minus the mean of the *other* admitted rewards of its
    group (an unbiased baseline, no std), 0 for the excluded and for groups of fewer than two.

    Examples:
        >>> loo_advantages(torch.tensor([1.0, 0.0, 0.0, 2.0, 2.0, 2.0]), 3).tolist()
        [1.0, -0.5, -0.5, 0.0, 0.0, 0.0]
    """
    n = rewards.numel()
    if n % group_size:
        raise ValueError(f"{n} rewards do not split into groups of {group_size}")
    mask = torch.ones(n, dtype=torch.bool, device=rewards.device) if mask is None else mask.bool()
    m = mask.view(-1, group_size).to(rewards.dtype)
    r = torch.where(mask, rewards, torch.zeros_like(rewards)).view(-1, group_size)
    count = m.sum(1, keepdim=True)
    others = (r.sum(1, keepdim=True) - r) / (count - 1).clamp(min=1)
    adv = torch.where(count >= 2, r - others, torch.zeros_like(r))
    return (adv * m).view(-1)


@dataclass(frozen=True)
class AdvantageInputs:
    """What an advantage estimator may read about one step's rows (every tensor ``[N]`` but
    ``values``): the weighted ``totals`` (NaN: not scored), each reward function's ``values``
    ``[N, K]`` with their ``weights`` ``[K]`` (NaN where a function did not apply; None when the
    engine keeps only totals), the group size, the admitted rows and the configured scale."""

    totals: torch.Tensor
    group_size: int
    admit: torch.Tensor
    scale: Scale = "group"
    values: torch.Tensor | None = None
    weights: torch.Tensor | None = None


#: ``fn(inputs) -> [N]`` advantages, 0 for every row not admitted.
Estimator = Callable[[AdvantageInputs], torch.Tensor]


def _sum_then_normalize(x: AdvantageInputs) -> torch.Tensor:
    return group_advantages(torch.nan_to_num(x.totals), x.group_size, x.admit, scale=x.scale)


def _normalize_then_sum(x: AdvantageInputs) -> torch.Tensor:
    if x.values is None or x.weights is None:
        raise ValueError("normalize_then_sum needs each reward function's values (TRL's multi_objective_aggregation)")
    summed = normalized_sum(x.values, x.weights, x.group_size, x.admit)
    # as TRL does for it, whatever scale_rewards says: scaled by the batch's std
    return group_advantages(torch.nan_to_num(summed), x.group_size, x.admit & ~torch.isnan(summed), scale="batch")


def _rloo(x: AdvantageInputs) -> torch.Tensor:
    return loo_advantages(torch.nan_to_num(x.totals), x.group_size, x.admit)


#: Advantage estimators by name (``algo.estimator`` on rlvr's engine; TRL's
#: ``multi_objective_aggregation`` picks between the first two). Register one with
#: :func:`register_estimator`; every engine's failure step (:class:`rlvr.diagnostics.step.FailureAware`)
#: calls it on the admitted rows, so exclusion, clipping and the causes apply to it unchanged.
ESTIMATORS: Registry[Estimator] = Registry("advantage estimator")
ESTIMATORS.add("sum_then_normalize", _sum_then_normalize)  # GRPO: the group statistics of the total
ESTIMATORS.add("normalize_then_sum", _normalize_then_sum)  # GDPO: each function normalised, then summed
ESTIMATORS.add("rloo", _rloo)  # REINFORCE leave-one-out


def register_estimator(name: str, fn: Estimator) -> None:
    """Add an advantage estimator (then selectable as ``algo.estimator: <name>``). ``fn`` must give
    0 to every row ``inputs.admit`` leaves out, or excluded rows would reach the gradient."""
    ESTIMATORS.add(name, fn)
