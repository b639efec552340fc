"""One cause per rollout, from its verdict, its finish and its policy version (a pure function).

A rollout that scores 0 either could not be parsed (``no_answer``: a format death) or was
parsed and judged wrong (``wrong``: a verification death); the failure-aware trainer treats
them differently, so the mapping lives in exactly one place:

=========== ==============================================================================
cause       when (first rule that applies wins)
=========== ==============================================================================
stale       made by a policy version older than ``max_staleness`` steps
invalid     empty output, or the verifier timed out, failed, or its judge was ``uncertain``
            (says nothing about the answer)
bad_gold    the gold answer itself cannot be parsed
truncated   hit the length limit before its end-of-sequence token
correct     the verifier judged it correct
wrong       an answer was extracted and judged wrong (verification death)
no_answer   nothing could be extracted (format death)
=========== ==============================================================================
"""

from __future__ import annotations

from enum import Enum

from rlvr.types import Status


class Cause(str, Enum):
    """Why a rollout scored what it did."""

    CORRECT = "correct"
    WRONG = "wrong"
    NO_ANSWER = "no_answer"
    TRUNCATED = "truncated"
    INVALID = "invalid"
    STALE = "stale"
    BAD_GOLD = "bad_gold"

    def __str__(self) -> str:
        return self.value


def cause_of(
    status: Status,
    finish: str = "eos",
    *,
    text: str | None = None,
    version: int = 0,
    current_version: int = 0,
    max_staleness: int | None = None,
) -> Cause:
    """The cause of one rollout (see the module docstring for the rules and their order).

    Example:
        >>> cause_of(Status.WRONG, "length").value
        'truncated'
    """
    if max_staleness is not None and current_version - version > max_staleness:
        return Cause.STALE
    if (text is not None and not text.strip()) or status in (Status.TIMEOUT, Status.ERROR, Status.UNCERTAIN):
        return Cause.INVALID
    if status is Status.BAD_GOLD:
        return Cause.BAD_GOLD
    if finish == "length":
        return Cause.TRUNCATED
    return {Status.CORRECT: Cause.CORRECT, Status.WRONG: Cause.WRONG}.get(status, Cause.NO_ANSWER)
