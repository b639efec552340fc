"""``partial_score``: the verifier's own graded score (reasoning-gym's ``score_answer``), not just 0/1."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlvr.rewards.accuracy import Accuracy
from rlvr.rewards.base import Scored, register
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import Status


@register("partial_score")
class PartialScore(Accuracy):
    """As ``accuracy``, but a ``wrong`` verdict that carries a score (``details["score"]``, e.g. a
    reasoning-gym answer half right) gets that score instead of 0. Options as ``accuracy``'s."""

    name = "partial_score"

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        verdicts = row_verdicts(texts, columns, gold_field=self.gold_field, strict=self.strict, timeout=self.timeout)
        out = []
        for v in verdicts:
            score = v.details.get("score") if v.status is Status.WRONG else None
            out.append(Scored(float(score) if isinstance(score, int | float) else self.value(v.status), v))
        return out
