"""``instruction``: does the answer meet the row's format constraints (JSON, schema, regex, length)?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlvr.rewards.base import Reward, Scored, register
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import Status


@register("instruction")
class Instruction(Reward):
    """1.0 when every constraint holds, else 0.0 (or the fraction that hold, with ``partial``).

    A completion with no answer, or no JSON where JSON is required, scores 0.0 (its
    verdict is ``no_answer``: a format death); a bad constraint set gives ``None``.

    Args:
        partial: score the fraction of constraints that hold instead of all-or-nothing.
        gold_field: the column holding the constraint set.
    """

    name = "instruction"
    needs_verdict = True
    gold_columns = ("constraints",)

    def __init__(self, *, partial: bool = False, gold_field: str | None = None, task: str = "instruction") -> None:
        super().__init__()
        self.partial, self.gold_field, self.task = partial, gold_field, task

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        out = []
        for v in row_verdicts(texts, columns, gold_field=self.gold_field, task=self.task, prefer=self.gold_columns):
            if v.status is Status.CORRECT:
                value: float | None = 1.0
            elif v.status in (Status.WRONG, Status.NO_ANSWER):
                value = float(v.details.get("pass_fraction", 0.0)) if self.partial else 0.0
            else:
                value = None
            out.append(Scored(value, v, {"constraints": v.details.get("constraints", [])}))
        return out
