"""``code`` and ``code_pass_rate``: run the completion's program against the row's tests.

``code`` follows the seeds' table: every test passes +1, some fail -1, invalid code
(no code block, syntax error, failed build) -0.2. ``code_pass_rate`` is the
fraction of tests passed (0 for invalid code), a denser signal to log or to mix
in. Both read the same verdict (the sandbox runs once per row).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlvr.rewards.base import Reward, Scored, register
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import Status, Verdict
from rlvr.verify.code.verifier import DEFAULT_CODE_TIMEOUT

#: Columns read as the test specification before the generic gold columns.
GOLD_COLUMNS = ("tests", "test_spec", "test")


class _CodeReward(Reward):
    needs_verdict = True
    gold_columns = GOLD_COLUMNS

    def __init__(
        self, *, gold_field: str | None = None, timeout: float = DEFAULT_CODE_TIMEOUT, task: str = "code"
    ) -> None:
        super().__init__()
        self.gold_field, self.timeout, self.task = gold_field, timeout, task

    def value(self, v: Verdict) -> float | None:
        raise NotImplementedError

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        verdicts = row_verdicts(
            texts, columns, gold_field=self.gold_field, timeout=self.timeout, task=self.task, prefer=self.gold_columns
        )
        return [
            Scored(self.value(v), v, {k: v.details[k] for k in ("passed", "total") if k in v.details}) for v in verdicts
        ]


@register("code")
class Code(_CodeReward):
    """+1 all tests pass, -1 some fail, -0.2 invalid code; ``None`` for a bad spec or a sandbox error.

    Args:
        passed / failed / invalid: the three scores (the seeds' +1 / -1 / -0.2).
        gold_field: the column holding the test specification.
        timeout: wall seconds per row (all its runs).
    """

    name = "code"

    def __init__(self, *, passed: float = 1.0, failed: float = -1.0, invalid: float = -0.2, **kw: Any) -> None:
        super().__init__(**kw)
        self.passed, self.failed, self.invalid = passed, failed, invalid

    def value(self, v: Verdict) -> float | None:
        return {Status.CORRECT: self.passed, Status.WRONG: self.failed, Status.NO_ANSWER: self.invalid}.get(v.status)


@register("code_pass_rate")
class CodePassRate(_CodeReward):
    """The fraction of tests passed (0.0 for invalid code; ``None`` for a bad spec or a sandbox error)."""

    name = "code_pass_rate"

    def value(self, v: Verdict) -> float | None:
        if v.status is Status.NO_ANSWER:
            return 0.0
        if v.status in (Status.CORRECT, Status.WRONG):
            return float(v.details.get("pass_fraction", 1.0 if v.correct else 0.0))
        return None
