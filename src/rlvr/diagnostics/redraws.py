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


#: Steps over which the admitted share is watched before advising the thin-step policy.
ADVICE_WINDOW = 5


@dataclass
class ThinAdvice:
    """Says once, when most rows of the last steps stayed out, that the thin-step policy is off.

    The policy (``redraw_budget``, ``min_group_rows``, ``thin_step_scale``) costs episodes and is off
    by default: at 0.2 and 0.5 environment faults two redraw rounds refill the groups; at 0.9 they
    do not, and the defaults end 5 SE below the fault-free run where the policy ends level with it.
    A run whose excluded share stays above one half over ``ADVICE_WINDOW`` steps is in that regime.

    Examples:
        >>> a = ThinAdvice(FailureConfig())
        >>> [a.observe(s, 0.8) is not None for s in range(1, 7)]
        [False, False, False, False, True, False]
        >>> ThinAdvice(FailureConfig(redraw_budget=12)).observe(5, 0.9) is None
        True
    """

    failure: FailureConfig
    recent: list[float] | None = None
    given_at: int | None = None

    def observe(self, step: int, excluded: float) -> str | None:
        """The advice on the step it first applies (None on every other step)."""
        f = self.failure
        if self.given_at is not None or f.redraw_budget is not None or f.min_group_rows > 1 or f.thin_step_scale:
            return None
        self.recent = [*(self.recent or [])[-(ADVICE_WINDOW - 1) :], excluded]
        if len(self.recent) < ADVICE_WINDOW or sum(self.recent) / ADVICE_WINDOW <= 0.5:
            return None
        self.given_at = step
        return (
            f"step {step}: {sum(self.recent) / ADVICE_WINDOW:.0%} of the rows of the last {ADVICE_WINDOW} steps "
            "stayed out of the loss; two redraw rounds do not refill such groups. Set failure.redraw_budget: 12, "
            "failure.min_group_rows: 2 and failure.thin_step_scale: true (docs: guides/episodes.md, "
            "'When most episodes die'), or fix what fails."
        )
