"""``reasoning_steps``: reward visible step-by-step reasoning (seed 001's pattern)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rlvr.errors import ConfigError
from rlvr.rewards.base import Reward, Scored, register

#: ``Step 1:``, a numbered line ``1.``, bullets, and ordinal transitions.
STEP_PATTERN = r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)"


@register("reasoning_steps")
class ReasoningSteps(Reward):
    """``min(1, count / target)`` where ``count`` is the number of step markers.

    Args:
        target: markers needed for full credit (3 in the seeds).
        pattern: the step-marker regex (multiline).
    """

    name = "reasoning_steps"

    def __init__(self, *, target: int = 3, pattern: str = STEP_PATTERN) -> None:
        super().__init__()
        if target < 1:
            raise ConfigError(f"reasoning_steps target must be >= 1, got {target}")
        self.target = target
        self.pattern = pattern
        self._re = re.compile(pattern, re.MULTILINE)

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        out = []
        for t in texts:
            n = len(self._re.findall(t))
            out.append(Scored(min(1.0, n / self.target), info={"steps": n}))
        return out
