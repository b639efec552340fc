"""One cause per rollout, from its verdict, its finish and its policy version (a pure function).

A rollout that scores 0 either could not be parsed (``no_answer``: a format death) or was
parsed and judged wrong (``wrong``: a verification death); the failure-aware trainer treats
them differently, so the mapping lives in exactly one place:

=========== ==============================================================================
cause       when (first rule that applies wins)
=========== ==============================================================================
stale       made by a policy version older than ``max_staleness`` steps
off_policy  the engine's sampler and the trainer disagree on it beyond the off-policy correction's
            sequence mask (:mod:`rlvr.algo.correction`): precision, a fast sampler, a stale buffer
invalid     empty output, or the verifier timed out, failed, or its judge was ``uncertain``
            (says nothing about the answer)
bad_gold    the gold answer itself cannot be parsed
truncated   hit the length limit before its end-of-sequence token
correct     the verifier judged it correct
wrong       an answer was extracted and judged wrong (verification death)
no_answer   nothing could be extracted (format death)
scored      no verifier judged it (no gold, no verifying reward): its reward functions
            scored it, and it counts with that reward (a TRL user's own rewards)
=========== ==============================================================================

A rollout none of its reward functions could score (each said "not applicable": TRL's ``None``)
is ``invalid``, as TRL leaves such a row out of its group's statistics.

Episodes with tools (:mod:`rlvr.episodes`) add the causes their events record where they happen,
each owned by the environment or by the policy (``env.fault_causes``):

=================== ====== =================================================================
cause               owner  when
=================== ====== =================================================================
tool_error          env    a tool failed on a well-formed call (a service error)
env_timeout         env    the environment ran past its limit (not the policy's own code)
env_crash           env    the session or sandbox died or could not be created
malformed_tool_call policy tool-call markup that does not parse
unknown_tool        policy a call to a tool the environment does not offer
bad_arguments       policy arguments that do not fit the tool's schema
turn_limit          policy ``env.max_turns`` turns without a final answer
context_overflow    policy the episode's token budget ran out
=================== ====== =================================================================

An environment fault comes right after ``stale`` (it says nothing about the policy); a policy
fault that ended the episode comes after ``bad_gold``; the others are events only.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    OFF_POLICY = "off_policy"
    BAD_GOLD = "bad_gold"
    SCORED = "scored"
    # episodes: the environment's faults
    TOOL_ERROR = "tool_error"
    ENV_TIMEOUT = "env_timeout"
    ENV_CRASH = "env_crash"
    # episodes: the policy's
    MALFORMED_TOOL_CALL = "malformed_tool_call"
    UNKNOWN_TOOL = "unknown_tool"
    BAD_ARGUMENTS = "bad_arguments"
    TURN_LIMIT = "turn_limit"
    CONTEXT_OVERFLOW = "context_overflow"

    def __str__(self) -> str:
        return self.value


#: The causes before episodes (every rollout's metrics list these; episode causes when they occur).
SINGLE_TURN = (Cause.CORRECT, Cause.WRONG, Cause.NO_ANSWER, Cause.TRUNCATED, Cause.INVALID, Cause.STALE, Cause.BAD_GOLD)
#: Every cause a rollout can have whatever its engine (episode causes are the rest).
ROLLOUT = (*SINGLE_TURN, Cause.SCORED, Cause.OFF_POLICY)
#: Causes the engine owns: the rollout says nothing about the policy (always out of the group).
ENGINE_FAULTS = frozenset({Cause.STALE, Cause.OFF_POLICY})
#: Episode causes the environment owns by default.
ENV_FAULTS = frozenset({Cause.TOOL_ERROR, Cause.ENV_TIMEOUT, Cause.ENV_CRASH})


def shown(present: Iterable[Cause | str] = ()) -> list[Cause]:
    """The causes a table or a metric set lists: every single-turn cause, and the episode causes
    that occur in ``present`` (an iterable of causes or their values; a value that names no cause,
    from a log written by another version, is passed over)."""
    values = {c.value for c in Cause}
    seen = {Cause(c) for c in present if c in values}
    return [*SINGLE_TURN, *(c for c in Cause if c not in SINGLE_TURN and c in seen)]


def cause_of(
    status: Status | None,
    finish: str = "eos",
    *,
    text: str | None = None,
    version: int = 0,
    current_version: int = 0,
    max_staleness: int | None = None,
    episode: Cause | None = None,
    env_faults: frozenset[Cause] | None = None,
    off_policy: bool = False,
) -> Cause:
    """The cause of one rollout (see the module docstring for the rules and their order).

    ``status``: the verifier's verdict, or None when no verifier judged the rollout (its rewards
    scored it). ``episode``: an episode's own cause (:meth:`rlvr.episodes.Episode.cause`), when it
    has one; ``env_faults``: which causes are the environment's (default: tool_error, env_timeout,
    env_crash). ``off_policy``: the engine's off-policy correction rejected the row (it follows
    ``stale``: both are the engine's, and say nothing about the policy).

    Examples:
        >>> cause_of(Status.WRONG, "length").value
        'truncated'
        >>> cause_of(Status.CORRECT, episode=Cause.TOOL_ERROR).value
        'tool_error'
        >>> cause_of(None).value, cause_of(None, "length").value
        ('scored', 'truncated')
    """
    if max_staleness is not None and current_version - version > max_staleness:
        return Cause.STALE
    if off_policy:
        return Cause.OFF_POLICY
    env = ENV_FAULTS if env_faults is None else env_faults
    if episode is not None and episode in env:
        return episode
    if status is None:  # no verifier: the reward functions' score stands (an empty answer is an answer)
        if episode is not None:
            return episode
        return Cause.TRUNCATED if finish == "length" else Cause.SCORED
    if (text is not None and not text.strip() and episode is None) or status in (
        Status.TIMEOUT,
        Status.ERROR,
        Status.UNCERTAIN,
    ):
        return Cause.INVALID
    if status is Status.BAD_GOLD:
        return Cause.BAD_GOLD
    if episode is not None:  # the policy's fault that ended the episode: its reward stands
        return episode
    if finish == "length":
        return Cause.TRUNCATED
    return {Status.CORRECT: Cause.CORRECT, Status.WRONG: Cause.WRONG}.get(status, Cause.NO_ANSWER)
