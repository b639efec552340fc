"""Rollouts the trainer did not sample: behaviour vs proximal log-probs, corrected (pure functions).

Three log-probs of every sampled token, named as AReaL's decoupled objective names them:

* **behaviour**: what the sampler used (bfloat16 sampling, vLLM, a policy versions older);
* **proximal**: the trainer's model before this update (recomputed with one forward and no
  gradient, or taken to be the behaviour's: verl's "bypass" mode);
* **current**: the model being updated. The clipped ratio is current / proximal.

The gap between behaviour and proximal is the engine's, not the policy's. :func:`correction`
turns it into token weights and masks, each optional:

* a **truncated token importance weight** ``min(proximal / behaviour, cap)`` on each token's loss
  (TIS; verl ``rollout_is: token`` with ``rollout_is_threshold``; TRL ``token_truncate`` with
  ``vllm_importance_sampling_clip_max``);
* a **geometric sequence mask**: a row whose ``exp(mean log(proximal / behaviour))`` leaves the band
  ``[low, high]`` is rejected whole (verl ``rollout_rs: seq_mean_k1`` with a band such as
  ``0.999_1.001``; the geometric masks of SkyRL and AReaL): length-normalised, so a long completion
  is not rejected for being long;
* a **token veto**: a row with any token whose ratio is below ``veto`` is rejected (an outlier token
  the sampler found likely and the trainer does not: SkyRL's and AReaL's veto);
* the **product sequence weight** ``prod(proximal / behaviour)`` over the row's tokens, truncated
  at ``cap`` (``product: truncate``) or a mask when above it (``product: mask``), for parity with
  TRL's ``sequence_truncate`` / ``sequence_mask``. Its trap: on long completions the product of
  many ratios near 1 drifts far from 1, and the mask rejects nearly everything (NeMo-RL #2269).

A row a sequence mask rejects is the engine's fault (cause ``off_policy``): the failure step keeps
it out of its group's statistics and the loss. Token weights stay token-level (no cause) and are
counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

from rlvr.config import OffPolicyConfig


@dataclass(frozen=True)
class CorrectionSettings:
    """What to do about the behaviour-proximal gap (all off: today's "bypass" with nothing corrected).

    Attributes:
        token_cap: truncate each token's importance weight at this (None: no token weight).
        geometric_band: reject a row whose geometric-mean ratio leaves ``(low, high)`` (None: off).
        token_veto: reject a row with a token ratio below this (None: off).
        product: the product-form sequence weight: ``none``, ``truncate`` at ``product_cap``, or
            ``mask`` (reject a row above ``product_cap``).
        product_cap: the cap of the product weight.
    """

    token_cap: float | None = None
    geometric_band: tuple[float, float] | None = None
    token_veto: float | None = None
    product: Literal["none", "truncate", "mask"] = "none"
    product_cap: float = 3.0

    @classmethod
    def of(cls, cfg: OffPolicyConfig) -> CorrectionSettings:
        """From the config's ``off_policy`` section."""
        return cls(cfg.token_cap, cfg.geometric_band, cfg.token_veto, cfg.product, cfg.product_cap)

    @property
    def rejects(self) -> bool:
        """Whether a setting rejects whole rows (those must be known before the group statistics)."""
        return self.geometric_band is not None or self.token_veto is not None or self.product == "mask"


@dataclass
class Correction:
    """What :func:`correction` decided for one batch.

    Attributes:
        weights: ``[N, T]`` each token's loss weight (1 where nothing applies; detached).
        rejected: ``[N]`` rows a sequence mask rejected (the ``off_policy`` cause).
        metrics: ``offpolicy/*``: the mismatch (k1, k3 per token and per sequence), the weights'
            mean/min/max and the share truncated, the share of rows rejected by each mask.
    """

    weights: torch.Tensor
    rejected: torch.Tensor
    metrics: dict[str, float] = field(default_factory=dict)


def mismatch(behaviour: torch.Tensor, proximal: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """KL(behaviour || proximal) estimated on the sampled tokens: k1 (``log b - log p``) and k3
    (``r - 1 - log r`` with ``r = p / b``), per token and per sequence (summed over its tokens, then
    averaged over rows).

    Examples:
        >>> m = mismatch(torch.tensor([[-1.0, -2.0]]), torch.tensor([[-1.0, -2.0]]), torch.ones(1, 2))
        >>> m["offpolicy/k1"], m["offpolicy/k3"]
        (0.0, 0.0)
    """
    mask = mask.to(behaviour.dtype)
    log_r = (proximal - behaviour) * mask  # log(proximal / behaviour)
    k1 = -log_r
    k3 = (torch.exp(log_r) - 1 - log_r).clamp(min=0) * mask  # >= 0 (rounding aside)
    tokens = mask.sum().clamp(min=1)
    rows = (mask.sum(1) > 0).sum().clamp(min=1)
    return {
        "offpolicy/k1": float(k1.sum() / tokens),
        "offpolicy/k3": float(k3.sum() / tokens),
        "offpolicy/k1_seq": float(k1.sum() / rows),
        "offpolicy/k3_seq": float(k3.sum() / rows),
        "offpolicy/logprob_gap": float(log_r.abs().sum() / tokens),
    }


def token_weights(
    behaviour: torch.Tensor, proximal: torch.Tensor, mask: torch.Tensor, settings: CorrectionSettings
) -> torch.Tensor:
    """``[N, T]`` each token's loss weight (detached, 0 off ``mask``): the truncated token weight and
    the truncated product weight of :func:`correction`, row by row, so that it can be computed on a
    micro-batch of whole rows (the fused proximal: the training forward's own log-probs).

    Examples:
        >>> b = torch.tensor([[-1.0, -1.0]])
        >>> token_weights(b, torch.tensor([[-1.0, -0.5]]), torch.ones(1, 2), CorrectionSettings(token_cap=1.2))
        tensor([[1.0000, 1.2000]])
    """
    m = mask.to(behaviour.dtype)
    log_r = (proximal - behaviour).detach() * m
    weights = torch.ones_like(log_r)
    if settings.token_cap is not None:
        weights = torch.clamp(torch.exp(log_r), max=settings.token_cap)
    if settings.product == "truncate":
        weights = weights * torch.clamp(torch.exp(log_r.sum(1)), max=settings.product_cap)[:, None]
    return weights * m


def correction(
    behaviour: torch.Tensor, proximal: torch.Tensor, mask: torch.Tensor, settings: CorrectionSettings
) -> Correction:
    """Token weights and row rejections for one batch (see the module docstring).

    Args:
        behaviour: ``[N, T]`` the sampler's log-probs of the sampled tokens.
        proximal: ``[N, T]`` the trainer's, before this update.
        mask: ``[N, T]`` the tokens that count (the trained tokens).
        settings: what to apply.

    Examples:
        >>> b = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]])
        >>> p = torch.tensor([[-1.0, -0.5], [-3.0, -1.0]])  # row 1's first token: ratio e^-2
        >>> c = correction(b, p, torch.ones(2, 2), CorrectionSettings(token_cap=1.2, token_veto=0.2))
        >>> [round(w, 3) for w in c.weights[0].tolist()], c.rejected.tolist()
        ([1.0, 1.2], [False, True])
    """
    m = mask.to(behaviour.dtype)
    live = m.sum(1) > 0
    log_r = (proximal - behaviour).detach() * m  # [N, T]
    ratio = torch.exp(log_r)
    weights = token_weights(behaviour, proximal, mask, settings)
    rejected = torch.zeros(ratio.shape[0], dtype=torch.bool, device=ratio.device)
    out = mismatch(behaviour, proximal, mask)
    n_tok = m.sum().clamp(min=1)
    if settings.token_cap is not None:
        out["offpolicy/token_truncated"] = float(((ratio > settings.token_cap).to(m.dtype) * m).sum() / n_tok)
    if settings.geometric_band is not None:
        low, high = settings.geometric_band
        geo = torch.exp(log_r.sum(1) / m.sum(1).clamp(min=1))  # [N]
        out_band = live & ((geo < low) | (geo > high))
        rejected |= out_band
        out["offpolicy/geometric_rejected"] = float(out_band.float().sum() / live.sum().clamp(min=1))
        if bool(live.any()):
            out["offpolicy/geometric_mean_ratio"] = float(geo[live].mean())
    if settings.token_veto is not None:
        vetoed = live & ((ratio < settings.token_veto) & m.bool()).any(1)
        rejected |= vetoed
        out["offpolicy/veto_rejected"] = float(vetoed.float().sum() / live.sum().clamp(min=1))
    if settings.product == "mask":
        above = live & (torch.exp(log_r.sum(1)) > settings.product_cap)  # the product of the row's ratios
        rejected |= above
        out["offpolicy/product_rejected"] = float(above.float().sum() / live.sum().clamp(min=1))
    kept = m.bool() & ~rejected[:, None]
    weighted = settings.token_cap is not None or settings.product == "truncate"
    if weighted and bool(kept.any()):
        w = weights[kept]
        out.update(
            {
                "offpolicy/weight_mean": float(w.mean()),
                "offpolicy/weight_min": float(w.min()),
                "offpolicy/weight_max": float(w.max()),
            }
        )
    out["offpolicy/rejected"] = float(rejected.float().sum() / live.sum().clamp(min=1))
    return Correction(weights, rejected, out)
