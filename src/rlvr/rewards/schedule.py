"""Reward weights that change over training: piecewise-linear in the step.

Seed 001's curriculum: format and correctness first, reasoning steps in the middle,
concision and diversity late. A weight is a constant or a list of ``[step, weight]``
points; between points it is interpolated linearly, outside them it is held.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.errors import ConfigError


@dataclass(frozen=True)
class Schedule:
    """A piecewise-linear weight over training steps.

    Examples:
        >>> Schedule.parse([[0, 0.0], [100, 1.0]]).at(25)
        0.25
    """

    steps: tuple[int, ...]
    weights: tuple[float, ...]

    def at(self, step: int) -> float:
        """The weight in force at ``step``."""
        i = bisect.bisect_right(self.steps, step)
        if i == 0:
            return self.weights[0]
        if i == len(self.steps):
            return self.weights[-1]
        s0, s1 = self.steps[i - 1], self.steps[i]
        w0, w1 = self.weights[i - 1], self.weights[i]
        return w0 + (w1 - w0) * (step - s0) / (s1 - s0)

    @classmethod
    def parse(cls, spec: Any, name: str = "weight") -> Schedule:
        """A number, a list of ``[step, weight]`` pairs, or a ``{step: weight}`` mapping."""
        if isinstance(spec, Schedule):
            return spec
        if isinstance(spec, int | float) and not isinstance(spec, bool):
            return cls((0,), (float(spec),))
        pairs: Sequence[Any] = list(spec.items()) if isinstance(spec, Mapping) else spec
        try:
            points = sorted((int(s), float(w)) for s, w in pairs)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: a weight is a number or a list of [step, weight] pairs, got {spec!r}") from None
        if not points:
            raise ConfigError(f"{name}: an empty schedule; give a number or [step, weight] pairs")
        steps = [s for s, _ in points]
        if len(set(steps)) != len(steps):
            raise ConfigError(f"{name}: the schedule repeats a step: {steps}")
        if steps[0] < 0:
            raise ConfigError(f"{name}: schedule steps must be >= 0, got {steps[0]}")
        return cls(tuple(steps), tuple(w for _, w in points))
