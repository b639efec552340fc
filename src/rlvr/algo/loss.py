"""The clipped policy-ratio loss, its aggregation variants, and the k3 KL (pure functions).

Per token: ``ratio = exp(logp - old_logp)``;
``l = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A)`` (+ ``beta * k3``).
The variants differ only in how token losses become one number. Each divides by a
:class:`Normalizer` computed once over the *whole* batch's trained tokens (admitted rows, the
policy's own sampled tokens: no tool result, no token the grammar forced) and passed to every
micro-batch, so:

* gradient accumulation over micro-batches, in any order, equals one full-batch step exactly;
* a row left out of the loss (its tokens out of the mask) weighs exactly as if it had never been
  sampled: it counts in no normaliser;
* padding changes nothing: no normaliser reads the batch's width.

=========== ===================================================================================
aggregation divides the sum of token losses by
=========== ===================================================================================
``grpo``    each sequence's own token count, then the number of trained sequences
``dr_grpo`` trained sequences x the *configured* maximum completion length (a constant: Dr. GRPO)
``dapo``    the number of trained tokens in the batch (token-level, DAPO)
=========== ===================================================================================

A trained sequence is a row with at least one trained token. Variants are registered in
:data:`AGGREGATIONS` (``algo.loss`` accepts any registered name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from rlvr.registry import Registry

Aggregate = Callable[[torch.Tensor, torch.Tensor, "Normalizer"], torch.Tensor]


@dataclass(frozen=True)
class Normalizer:
    """Whole-batch counts the aggregations divide by (computed once, before micro-batching).

    Attributes:
        sequences: rows with at least one trained token.
        tokens: trained tokens.
        max_len: the configured maximum completion length (Dr. GRPO's constant).
    """

    sequences: int
    tokens: int
    max_len: int

    @classmethod
    def of(cls, mask: torch.Tensor, *, max_len: int) -> Normalizer:
        """From a full batch's trained-token mask ``[N, T]`` (excluded rows all zero) and the
        configured maximum completion length.

        Examples:
            >>> Normalizer.of(torch.tensor([[1, 1, 0], [0, 0, 0], [1, 0, 0]]), max_len=8)
            Normalizer(sequences=2, tokens=3, max_len=8)
        """
        return cls(sequences=max(int((mask.sum(1) > 0).sum()), 1), tokens=max(int(mask.sum()), 1), max_len=max_len)


def _grpo(per_token: torch.Tensor, mask: torch.Tensor, norm: Normalizer) -> torch.Tensor:
    per_seq = (per_token * mask).sum(1) / mask.sum(1).clamp(min=1)
    return per_seq.sum() / norm.sequences


def _dr_grpo(per_token: torch.Tensor, mask: torch.Tensor, norm: Normalizer) -> torch.Tensor:
    return (per_token * mask).sum() / (norm.sequences * norm.max_len)


def _dapo(per_token: torch.Tensor, mask: torch.Tensor, norm: Normalizer) -> torch.Tensor:
    return (per_token * mask).sum() / norm.tokens


#: Loss aggregations by name (``algo.loss``); ``fn(per_token [N, T], mask [N, T], norm) -> loss``.
AGGREGATIONS: Registry[Aggregate] = Registry("loss aggregation")
AGGREGATIONS.add("grpo", _grpo)
AGGREGATIONS.add("dr_grpo", _dr_grpo)
AGGREGATIONS.add("dapo", _dapo)


def register_aggregation(name: str, fn: Aggregate) -> None:
    """Add a loss aggregation variant (then selectable as ``algo.loss: <name>`` in the config).

    ``fn`` must divide by the :class:`Normalizer` it is given, never by a count of its own
    micro-batch, or accumulation and exclusion stop being exact."""
    AGGREGATIONS.add(name, fn)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || ref) per token: ``exp(r - l) - (r - l) - 1`` (>= 0).

    Clamped as verl's ``low_var_kl`` is (the log-ratio to +-20, the estimate to 10): a token the
    reference finds near-impossible would otherwise put ``exp(20)``-sized terms in the loss.

    Examples:
        >>> float(k3_kl(torch.tensor([0.0]), torch.tensor([0.0])))
        0.0
        >>> float(k3_kl(torch.tensor([-30.0]), torch.tensor([0.0])))
        10.0
    """
    d = (ref_logp - logp).clamp(-20.0, 20.0)
    return (torch.exp(d) - d - 1).clamp(max=10.0)


@dataclass(frozen=True)
class LossStats:
    """Diagnostics of one loss evaluation (floats, detached)."""

    policy: float
    kl: float
    clipfrac: float
    approx_kl: float
    ratio_mean: float


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    norm: Normalizer,
    *,
    aggregation: str = "dapo",
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    beta: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """The GRPO objective for one (micro-)batch.

    Args:
        logp: ``[N, T]`` current per-token log-probs (with grad).
        old_logp: ``[N, T]`` log-probs of the policy that sampled the tokens.
        advantages: ``[N]`` one per sequence.
        mask: ``[N, T]`` 1 for completion tokens that count.
        norm: whole-batch counts (see :class:`Normalizer`).
        aggregation: ``grpo``, ``dr_grpo``, ``dapo`` or a registered variant.
        epsilon: the lower clip range, ``1 - epsilon``.
        epsilon_high: the upper clip range, ``1 + epsilon_high`` (clip-higher when
            ``epsilon_high > epsilon``; None means symmetric).
        beta: weight of the k3 KL to ``ref_logp`` (0: no reference needed).
        is_weights: ``[N, T]`` detached importance weights of the behaviour/proximal gap
            (:func:`rlvr.algo.correction.correction`) on each token's policy term (not the KL term,
            as verl and TRL apply them); None: 1.

    Returns:
        ``(loss, stats)``.
    """
    eps_hi = epsilon if epsilon_high is None else epsilon_high
    mask = mask.to(logp.dtype)
    log_ratio = logp - old_logp
    ratio = torch.exp(log_ratio)
    adv = advantages[:, None]
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + eps_hi) * adv
    policy_term = -torch.min(unclipped, clipped)
    if is_weights is not None:
        policy_term = policy_term * is_weights.detach().to(policy_term.dtype)
    per_token = policy_term
    kl = torch.zeros((), dtype=logp.dtype, device=logp.device)
    if beta:
        if ref_logp is None:
            raise ValueError("beta > 0 needs ref_logp (the reference model's log-probs)")
        kl_tok = k3_kl(logp, ref_logp)
        per_token = per_token + beta * kl_tok
        kl = (kl_tok * mask).sum() / mask.sum().clamp(min=1)
    agg = AGGREGATIONS.get(aggregation)  # an unknown name: a ConfigError listing the registered ones
    loss = agg(per_token, mask, norm)
    with torch.no_grad():
        n = mask.sum().clamp(min=1)
        was_clipped = ((ratio < 1 - epsilon) & (adv < 0)) | ((ratio > 1 + eps_hi) & (adv > 0))
        stats = LossStats(
            policy=float(agg(policy_term, mask, norm)),
            kl=float(kl),
            clipfrac=float((was_clipped.to(mask.dtype) * mask).sum() / n),
            approx_kl=float((((ratio - 1) - log_ratio) * mask).sum() / n),
            ratio_mean=float((ratio * mask).sum() / n),
        )
    return loss, stats


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """``log softmax(logits / temperature)`` at ``tokens``: ``[N, T, V], [N, T] -> [N, T]``.

    Uses ``logsumexp`` rather than a full ``log_softmax`` so a large vocabulary is
    never materialised twice.
    """
    logits = logits.float() / temperature if temperature != 1.0 else logits.float()
    picked = logits.gather(-1, tokens[..., None]).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)
