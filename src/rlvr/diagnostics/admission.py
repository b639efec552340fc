"""Which rollouts count: the admission mask for group statistics and the loss (pure functions).

A rollout left out gets no gradient and does not move its group's mean or std:

* ``invalid``, ``stale`` and ``off_policy`` rollouts, always (they say nothing about the answer or
  the policy);
* episodes that died of the environment (``tool_error``, ``env_timeout``, ``env_crash``: the
  ``also_out`` causes the failure step passes, ``failure.env_faults``), always: masking the loss
  alone would still let them move their siblings' baseline;
* ``bad_gold`` rows, always (no reward can be computed);
* ``truncated`` rollouts, when ``exclude_truncated`` is set;
* ``no_answer`` (format deaths) during the **cold start**: until the running format-death rate
  falls below a threshold, the model is still learning the format and a 0 for an unparsable
  answer would push down the reasoning that came before it (seed 003). After the switch they
  count, with their reward;
* every rollout of a zero-variance group, when ``drop_flat_groups`` is set (they carry no signal
  and only dilute the token normaliser).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from rlvr.algo.advantages import flat_groups
from rlvr.diagnostics.causes import Cause

ALWAYS_OUT = frozenset({Cause.INVALID, Cause.STALE, Cause.OFF_POLICY, Cause.BAD_GOLD})


def admission(
    causes: Sequence[Cause],
    rewards: torch.Tensor,
    group_size: int,
    *,
    exclude_truncated: bool = False,
    cold_start: bool = False,
    drop_flat_groups: bool = False,
    also_out: frozenset[Cause] = frozenset(),
) -> torch.Tensor:
    """``[N]`` bool: True for the rollouts that enter the group statistics and the loss."""
    out = set(ALWAYS_OUT) | also_out
    if exclude_truncated:
        out.add(Cause.TRUNCATED)
    if cold_start:
        out.add(Cause.NO_ANSWER)
    mask = torch.tensor([c not in out for c in causes], dtype=torch.bool) & ~torch.isnan(rewards)
    if drop_flat_groups:
        flat = flat_groups(torch.nan_to_num(rewards), group_size, mask)
        mask = mask & ~flat.repeat_interleave(group_size)
    return mask


@dataclass
class ColdStart:
    """The cold-start switch: on until the mean format-death rate of the last ``window`` steps is
    below ``threshold``; once off it stays off.

    Examples:
        >>> cs = ColdStart(threshold=0.05, window=2)
        >>> [cs.update(r) for r in (0.4, 0.1, 0.02, 0.01, 0.5)]
        [True, True, True, False, False]
    """

    threshold: float = 0.05
    window: int = 10
    active: bool = True
    switched_at: int | None = None
    history: deque[float] = field(default_factory=deque)

    def update(self, format_death_rate: float, step: int = 0) -> bool:
        """Record this step's rate; return whether the cold start is still on *for this step*."""
        if not self.active:
            return False
        self.history.append(format_death_rate)
        while len(self.history) > self.window:
            self.history.popleft()
        if len(self.history) == self.window and sum(self.history) / self.window < self.threshold:
            self.active = False
            self.switched_at = step
        return self.switched_at != step

    def state(self) -> dict[str, Any]:
        return {"active": self.active, "switched_at": self.switched_at, "history": list(self.history)}

    def load(self, state: dict[str, Any]) -> None:
        self.active, self.switched_at = state["active"], state["switched_at"]
        self.history = deque(state["history"])
