"""Injected truncation: a seeded share of sampled completions cut short, as a token budget cuts them.

A rollout that reaches ``max_new_tokens`` before its end-of-sequence token is ``truncated``: its
answer never came, so its 0 says nothing about the reasoning before the cut (the failure step can
leave such rows out and redraw them, ``failure.exclude_truncated``). How often that happens
depends on the model and the budget; :class:`Truncation` makes it happen at a chosen rate, for
tests and benchmarks (``rollout.truncation``; off by default). Cutting a sampled completion at
position ``k`` is exactly what a budget of ``k`` tokens would have produced (the first ``k``
tokens are drawn the same way), so both engines cut after sampling and before the rewards:
rlvr's own (:meth:`rlvr.sampling.batch.RolloutBatch.cut`) and TRL's (the failure-aware trainer's
single-turn sampling). Held-out evaluation is never cut.

Whether a completion is cut, and where, is drawn from the seed, the prompt and the completion, so
the same rollout always meets the same fate and a redrawn one draws again.

Examples:
    >>> cut = Truncation(rate=1.0, seed=0)
    >>> n = cut.length([5, 6], [10, 11, 12, 13, 2], eos={2})
    >>> 1 <= n <= 4   # cut before the eos: the completion ends truncated
    True
    >>> Truncation(rate=0.0).length([5, 6], [10, 11, 2], eos={2}) is None
    True
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rlvr.seeded import uniforms


@dataclass(frozen=True)
class Truncation:
    """Cut a ``rate`` share of completions at a uniformly drawn point before their end."""

    rate: float
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.rate <= 1:
            raise ValueError(f"rollout.truncation must be in [0, 1], got {self.rate}")

    def length(self, prompt: Sequence[int], completion: Sequence[int], eos: Collection[int]) -> int | None:
        """The number of tokens ``completion`` keeps, or None when it is not cut.

        A cut keeps at least one token and never the end-of-sequence token (so the row ends
        ``truncated``); a completion with nothing before its end is never cut.
        """
        if self.rate == 0:
            return None
        body = len(completion)
        while body and completion[body - 1] in eos:
            body -= 1
        if body < 1 or (body == len(completion) and body < 2):
            return None  # nothing to cut before the end
        hit, where = uniforms(self.seed, list(prompt), list(completion), n=2)
        if hit >= self.rate:
            return None
        # keep 1..body tokens when the completion ended (its eos dropped), 1..body-1 when it was already cut
        top = body if body < len(completion) else body - 1
        return 1 + min(int(where * top), top - 1)
