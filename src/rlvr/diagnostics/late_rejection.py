"""Rows an engine's off-policy correction rejects after the failure step has decided.

rlvr's engine and TRL decide once the correction is known. verl decides when its replay buffer
hands out the batch, before the old log-probs are computed, and its ``rollout_correction`` then
zeroes the ``response_mask`` of the rows it rejects (``rollout_rs``). Those rows leave the group
baseline (``rlvr_grpo`` counts only rows with a mask) and the loss; here they get the cause
``off_policy`` (the engine's), the step's ``causes/*`` shares and excluded share are recomputed,
and the rows the correction only thinned token by token are counted, with no cause.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlvr.diagnostics.causes import Cause, shown


def masked_rows(before: Sequence[torch.Tensor], after: Sequence[torch.Tensor]) -> tuple[list[bool], int]:
    """``(rejected, tokens)``: per row, whether a correction zeroed a mask that had tokens; and the
    tokens it masked in the rows it kept (token-level rejection)."""
    rejected = [bool(b.sum() > 0 and a.sum() == 0) for b, a in zip(before, after, strict=True)]
    tokens = sum(int((b.bool() & ~a.bool()).sum()) for b, a, r in zip(before, after, rejected) if not r)
    return rejected, tokens


def reject_late(
    causes: Sequence[Cause], admit: torch.Tensor, rejected: Sequence[bool]
) -> tuple[list[Cause], torch.Tensor, dict[str, float]]:
    """The decision's causes and admission with the rejected rows made ``off_policy`` and out,
    and the metrics that change: ``causes/*``, ``failure/excluded_frac``, ``offpolicy/rejected``.

    Examples:
        >>> c, a, m = reject_late([Cause.CORRECT, Cause.WRONG], torch.tensor([True, True]), [True, False])
        >>> [x.value for x in c], a.tolist(), m["causes/off_policy"]
        (['off_policy', 'wrong'], [False, True], 0.5)
    """
    out = torch.tensor(list(rejected), dtype=torch.bool)
    new = [Cause.OFF_POLICY if r and ok else c for c, ok, r in zip(causes, admit.tolist(), rejected, strict=True)]
    admitted = admit.bool() & ~out
    n = max(len(new), 1)
    metrics = {f"causes/{c.value}": sum(x is c for x in new) / n for c in shown(new)}
    metrics["failure/excluded_frac"] = float((~admitted).float().mean()) if len(new) else 0.0
    metrics["offpolicy/rejected"] = sum(bool(r) for r in rejected) / n
    return new, admitted, metrics
