"""Injected verifier outages: a seeded share of verdicts replaced by ``timeout`` or ``error``.

A judge that is down or a sandbox that cannot start returns no verdict; the failure step exists
for those rows (they say nothing about the policy: out of the baseline and the loss, redrawn).
:class:`Outage` makes them happen on purpose, for tests and benchmarks (``rewards.outage``; off by
default): whether a row's verification "fails" is drawn from the seed, the completion and its gold,
so the same rollout always meets the same outcome and a redrawn one draws again.

Example:
    >>> from rlvr.types import Status, Verdict
    >>> down = Outage(rate=1.0, seed=0).apply([Verdict(Status.CORRECT)], ["42"], ["42"])
    >>> down[0].status in (Status.TIMEOUT, Status.ERROR), down[0].details["injected"]
    (True, True)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.types import Status, Verdict


@dataclass(frozen=True)
class Outage:
    """Replace a ``rate`` share of verdicts by a verifier failure (half ``timeout``, half ``error``)."""

    rate: float
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.rate <= 1:
            raise ValueError(f"rewards.outage must be in [0, 1], got {self.rate}")

    def _draw(self, text: str, gold: Any) -> float:
        h = hashlib.blake2b(f"{self.seed}\0{gold}\0{text}".encode(), digest_size=8).digest()
        return int.from_bytes(h, "big") / 2**64

    def hit(self, text: str, gold: Any) -> Verdict | None:
        """The failed verdict this row meets, or None (its own verdict stands)."""
        u = self._draw(text, gold)
        if u >= self.rate:
            return None
        status = Status.TIMEOUT if u < self.rate / 2 else Status.ERROR
        return Verdict(status, reason=f"injected verifier outage ({status.value})", gold=str(gold),
                       details={"injected": True})

    def apply(self, verdicts: Sequence[Verdict], texts: Sequence[str], golds: Sequence[Any]) -> list[Verdict]:
        """``verdicts`` with the rows this outage hits replaced."""
        if self.rate == 0:
            return list(verdicts)
        return [self.hit(t, g) or v for v, t, g in zip(verdicts, texts, golds)]
