"""``accuracy``: did the verifier judge the answer correct?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlvr.rewards.base import Reward, Scored, register
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import Status, Verdict
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT


@register("accuracy")
class Accuracy(Reward):
    """1.0 correct; 0.0 wrong or no answer; ``bad_gold`` (0.5) when the gold cannot be parsed.

    Args:
        bad_gold: the score when the gold is unparsable. 0.5 is the seeds' neutral
            score; ``None`` (recommended for training) drops the row from this
            reward instead of feeding the policy a constant.
        undecided: the score for ``timeout`` / ``error`` verdicts; ``None`` by
            default, because those say nothing about the answer (never "wrong").
        strict: no last-number fallback when extracting the answer.
        gold_field: read the gold from this column (default: gold/answer/solution/...).
        timeout: seconds per verification.
    """

    name = "accuracy"
    needs_verdict = True

    def __init__(
        self,
        *,
        bad_gold: float | None = 0.5,
        undecided: float | None = None,
        strict: bool = False,
        gold_field: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__()
        self.bad_gold = bad_gold
        self.undecided = undecided
        self.strict = strict
        self.gold_field = gold_field
        self.timeout = timeout

    def value(self, status: Status) -> float | None:
        """The reward for one verdict status."""
        if status is Status.CORRECT:
            return 1.0
        if status in (Status.WRONG, Status.NO_ANSWER):
            return 0.0
        if status is Status.BAD_GOLD:
            return self.bad_gold
        return self.undecided

    def of(self, verdict: Verdict) -> float | None:
        """The reward for one verdict (by its status; subclasses may read more of it)."""
        return self.value(verdict.status)

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        verdicts = row_verdicts(texts, columns, gold_field=self.gold_field, strict=self.strict, timeout=self.timeout)
        return [Scored(self.of(v), v) for v in verdicts]
