"""``partial_score``: the verifier's own graded score (reasoning-gym's ``score_answer``), not just 0/1."""

from __future__ import annotations

from rlvr.rewards.accuracy import Accuracy
from rlvr.rewards.base import register
from rlvr.types import Status, Verdict


@register("partial_score")
class PartialScore(Accuracy):
    """As ``accuracy``, but a ``wrong`` verdict that carries a score (``details["score"]``, e.g. a
    reasoning-gym answer half right) gets that score instead of 0. Options as ``accuracy``'s."""

    name = "partial_score"

    def of(self, verdict: Verdict) -> float | None:
        score = verdict.details.get("score") if verdict.status is Status.WRONG else None
        return float(score) if isinstance(score, int | float) else self.value(verdict.status)
