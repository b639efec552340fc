"""How much a step may redraw, and when the environment is down (engine-neutral, pure).

A step redraws the rows the failure step names (``invalid``, ``off_policy``, the environment's
faults) for the same prompts. Without a budget it runs ``failure.resample_tries`` rounds. With
``failure.redraw_budget`` it goes on while rows are to be redrawn and the budget lasts: at an
environment fault rate ``f`` a step needs ``1 / (1 - f)`` episodes per admitted row on average (10 at
0.9), so a few rounds leave most groups with one or two admitted rows, whose advantages are one coin
flip (+-0.71 for two) and whose step, divided by the few admitted tokens, moves the weights as far as
a full one.

An outage is not a high rate: when the first draw *and* the first redraw round had environment
faults and not one call the environment answered, the environment is taken to be down (at a steady
0.9 rate, 32 + 32 episodes all faulted by chance is 0.9^64, about 1 in 800; an episode that answered
without a call, or whose call the policy got wrong, says nothing about the environment) and, with
``failure.wait_out_outages``, the step stops redrawing and takes no optimizer step: training waits
the outage out instead of spending its budget on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rlvr.config import FailureConfig
from rlvr.diagnostics.causes import Cause

#: Rounds a budgeted step may run at most (a budget never spent by a step whose rows keep failing).
MAX_ROUNDS = 64


@dataclass
class Redraws:
    """One step's redraw rounds.

    Args:
        tries: rounds without a budget (``failure.resample_tries``).
        budget: extra episodes the step may spend (``redraw_budget`` x rows), None: rounds only.
        wait_out: stop at an outage (``failure.wait_out_outages``).

    Examples:
        >>> r = Redraws(tries=2, budget=5)
        >>> r.plan([1, 2, 3], attempt=1), r.plan([1, 2, 3], attempt=2), r.plan([1], attempt=3)
        ([1, 2, 3], [1, 2], [])
    """

    tries: int
    budget: int | None = None
    wait_out: bool = True
    spent: int = 0
    down: bool = False
    first_all_faulted: bool = False

    @classmethod
    def of(cls, failure: FailureConfig, rows: int) -> Redraws:
        """The step's redraws from the config, for a step of ``rows`` rollouts."""
        budget = None if failure.redraw_budget is None else int(failure.redraw_budget * rows)
        return cls(failure.resample_tries, budget, failure.wait_out_outages)

    def plan(self, wanted: Sequence[int], attempt: int) -> list[int]:
        """The rows to redraw in round ``attempt`` (1-based) of those ``wanted``; empty: stop."""
        if self.down or not wanted:
            return []
        if self.budget is None:
            return list(wanted) if attempt <= self.tries else []
        if attempt > MAX_ROUNDS:
            return []
        take = list(wanted[: max(self.budget - self.spent, 0)])
        self.spent += len(take)
        return take

    def observe(self, faulted: int, served: int, attempt: int) -> bool:
        """Record round ``attempt``'s rows with an environment fault and rows with a call the
        environment answered (``attempt`` 0: the first draw): it is down when the first draw and the
        first redraw round had faults and no answered call. Returns whether it is down now."""
        if not self.wait_out:
            return self.down
        all_faulted = faulted > 0 and served == 0
        if attempt == 0:
            self.first_all_faulted = all_faulted
        elif attempt == 1 and self.first_all_faulted and all_faulted:
            self.down = True
        return self.down


def env_counts(causes: Sequence[Cause], served: Sequence[bool], owned: frozenset[Cause]) -> tuple[int, int]:
    """``(faulted, served)``: rows whose cause is the environment's, and rows with a call the
    environment answered (``served``)."""
    return sum(c in owned for c in causes), sum(served)


def thin_groups(admit: torch.Tensor, group_size: int, min_rows: int) -> torch.Tensor:
    """``[N/G]`` groups with at least one but fewer than ``min_rows`` admitted rows.

    Examples:
        >>> thin_groups(torch.tensor([1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]).bool(), 4, 2).tolist()
        [True, False, False]
    """
    n = admit.view(-1, group_size).sum(1)
    return (n > 0) & (n < min_rows)


def step_scale(admit: torch.Tensor, rows: int) -> float:
    """The admitted share of the step's ``rows`` (``failure.thin_step_scale``)."""
    return float(admit.sum()) / max(rows, 1)
