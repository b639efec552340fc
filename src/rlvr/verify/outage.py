"""Injected verifier outages (a seeded share of verdicts replaced by ``timeout`` or ``error``) and
injected bad golds (a seeded share of gold answers that cannot be parsed).

A judge that is down or a sandbox that cannot start returns no verdict; the failure step exists
for those rows (they say nothing about the policy: out of the baseline and the loss, redrawn).
:class:`Outage` makes them happen on purpose, for tests and benchmarks (``rewards.outage``; off by
default): whether a row's verification "fails" is drawn from the seed, the completion and its gold,
so the same rollout always meets the same outcome and a redrawn one draws again.

A gold answer that cannot be parsed (a broken dataset row) makes every rollout of its prompt
``bad_gold``: no reward can be computed, whatever the policy wrote. ``bad_gold`` makes a share of
golds so (``rewards.bad_gold``), drawn from the seed and the gold alone, so a bad gold stays bad
for the whole run, as a broken row does; its prompt is the failure step's to quarantine.

Examples:
    >>> from rlvr.types import Status, Verdict
    >>> down = Outage(rate=1.0, seed=0).apply([Verdict(Status.CORRECT)], ["42"], ["42"])
    >>> down[0].status in (Status.TIMEOUT, Status.ERROR), down[0].details["injected"]
    (True, True)
    >>> Outage(rate=0.0, bad_gold=1.0).apply([Verdict(Status.CORRECT)], ["42"], ["42"])[0].status.value
    'bad_gold'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.seeded import uniforms
from rlvr.types import Status, Verdict


@dataclass(frozen=True)
class Outage:
    """Replace a ``rate`` share of verdicts by a verifier failure (half ``timeout``, half ``error``),
    and every verdict against a ``bad_gold`` share of golds by ``bad_gold``."""

    rate: float
    seed: int = 0
    bad_gold: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.rate <= 1:
            raise ValueError(f"rewards.outage must be in [0, 1], got {self.rate}")
        if not 0 <= self.bad_gold <= 1:
            raise ValueError(f"rewards.bad_gold must be in [0, 1], got {self.bad_gold}")

    def gold_is_bad(self, gold: Any) -> bool:
        """Whether this gold is one the injection broke (the same answer for the whole run)."""
        return uniforms(self.seed, "bad gold", gold)[0] < self.bad_gold

    def hit(self, text: str, gold: Any) -> Verdict | None:
        """The failed verdict this row meets, or None (its own verdict stands)."""
        if self.bad_gold and self.gold_is_bad(gold):
            return Verdict(
                Status.BAD_GOLD, reason="injected unparsable gold", gold=str(gold), details={"injected": True}
            )
        u = uniforms(self.seed, gold, text)[0]
        if u >= self.rate:
            return None
        status = Status.TIMEOUT if u < self.rate / 2 else Status.ERROR
        return Verdict(
            status, reason=f"injected verifier outage ({status.value})", gold=str(gold), details={"injected": True}
        )

    def apply(self, verdicts: Sequence[Verdict], texts: Sequence[str], golds: Sequence[Any]) -> list[Verdict]:
        """``verdicts`` with the rows this outage hits replaced."""
        if self.rate == 0 and self.bad_gold == 0:
            return list(verdicts)
        return [self.hit(t, g) or v for v, t, g in zip(verdicts, texts, golds)]
