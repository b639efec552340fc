"""An episode is data: its turns, the events that happened in them (each with its cause), and how it ended.

Nothing downstream parses text back to learn what happened: an event is recorded where it
happens (the guard around a tool call, the turn loop), with the cause it stands for and who owns
that cause (:data:`ENVIRONMENT_FAULTS`: the environment's; everything else: the policy's).
Engines render an episode to tokens and masks (tool-result tokens carry no loss); the failure step
reads its :meth:`Episode.fault` and :meth:`Episode.ended_by` beside the verdict of its answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rlvr.diagnostics.causes import ENV_FAULTS, Cause
from rlvr.types import EnvScore, Status, Verdict

#: Causes that are the environment's fault by default: the episode leaves its group's baseline and
#: the loss and is redrawn with a fresh environment (``env.fault_causes`` changes the table).
ENVIRONMENT_FAULTS = ENV_FAULTS
#: Causes of the policy's own making: they stay in the gradient with their reward.
POLICY_FAULTS = frozenset(
    {Cause.MALFORMED_TOOL_CALL, Cause.UNKNOWN_TOOL, Cause.BAD_ARGUMENTS, Cause.TURN_LIMIT, Cause.CONTEXT_OVERFLOW}
)
#: Policy faults that end the episode (the others are answered with the error and the episode goes on).
ENDING_POLICY_FAULTS = frozenset({Cause.TURN_LIMIT, Cause.CONTEXT_OVERFLOW})
#: What a parsed call can fail of (one event per failed call): the environment's faults, a tool that
#: does not exist, arguments that do not fit.
CALL_FAILURES = frozenset({*ENV_FAULTS, Cause.UNKNOWN_TOOL, Cause.BAD_ARGUMENTS})


@dataclass(frozen=True)
class ToolCall:
    """A call the policy made: the tool's name and its arguments (as parsed)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Event:
    """Something that happened in an episode, recorded where it happened.

    Attributes:
        cause: what it stands for (``tool_error``, ``malformed_tool_call``, ``turn_limit``...).
        turn: the index of the turn it happened in.
        detail: what happened, in words (the exception, the unparsable markup...).
        tool: the tool involved, if any.
        latency_s: how long the call took, when it was a call.
    """

    cause: Cause
    turn: int
    detail: str = ""
    tool: str = ""
    latency_s: float = 0.0


@dataclass(frozen=True)
class Turn:
    """One turn: ``assistant`` (the policy's text, maybe a tool call) or ``tool`` (a tool's result,
    with how long the call ran: ``latency_s``, 0 when it never ran)."""

    role: str
    content: str
    call: ToolCall | None = None
    tokens: int = 0
    latency_s: float = 0.0


def own_cause(causes: Sequence[Cause], owned: Iterable[Cause] = ENVIRONMENT_FAULTS) -> Cause | None:
    """An episode's own cause from its events' causes, in order: an environment fault first (it says
    nothing of the policy), else the policy fault that ended it; None when the answer decides. Every
    engine's record of an episode reads through it (an :class:`Episode`, verl's ``rlvr_episode``)."""
    owned = frozenset(owned)
    return next((c for c in causes if c in owned), None) or next(
        (c for c in reversed(causes) if c in ENDING_POLICY_FAULTS), None
    )


@dataclass
class Episode:
    """One multi-turn rollout.

    Attributes:
        prompt: the prompt the policy saw first (with the environment's observation).
        turns: assistant and tool turns, in order.
        events: what happened, with causes (see :class:`Event`).
        answer: the final assistant text (what the task's verifier judges), "" when none.
        finish: ``eos`` (the policy answered), ``length`` (its last turn hit the token limit),
            ``turn_limit``, ``context_overflow`` or ``fault`` (the environment failed).
        tokens: tokens the policy generated over the whole episode.
        reward: the environment's own reward for the answer (its ``reward(answer, row)``), when it
            has one; None: the task's verifier judges the answer.
        score: the environment's judgement with its components, when its ``reward`` returns an
            :class:`~rlvr.types.EnvScore` (a published environment's rubric); ``reward`` is its total.
        replies: the policy's turns an environment that responds answered (its messages, or its
            word that the episode is over).
    """

    prompt: str
    turns: list[Turn] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    answer: str = ""
    finish: str = "eos"
    tokens: int = 0
    reward: float | None = None
    score: EnvScore | None = None
    replies: int = 0

    def answered(self, text: str, finish: str, tokens: int) -> None:
        """The final turn (no call): its text is the answer the task's verifier judges."""
        self.turns.append(Turn("assistant", text, tokens=tokens))
        self.tokens += tokens
        self.answer, self.finish = text, finish

    def stopped(self, cause: Cause, turn: int, detail: str) -> None:
        """The episode ends here with ``cause`` (``turn_limit``, ``context_overflow``, or ``env_crash``
        when the environment could not start: finish ``fault``)."""
        self.events.append(Event(cause, turn, detail))
        self.finish = "fault" if cause in ENVIRONMENT_FAULTS else cause.value

    def fault(self, owned: Iterable[Cause] = ENVIRONMENT_FAULTS) -> Cause | None:
        """The first event that is the environment's fault (None when the environment held)."""
        owned = frozenset(owned)
        return next((e.cause for e in self.events if e.cause in owned), None)

    def ended_by(self) -> Cause | None:
        """The policy fault that ended the episode (turn limit, context overflow), or None."""
        return next((e.cause for e in reversed(self.events) if e.cause in ENDING_POLICY_FAULTS), None)

    def cause(self, owned: Iterable[Cause] = ENVIRONMENT_FAULTS) -> Cause | None:
        """The episode's own cause, before its answer is judged (:func:`own_cause` of its events)."""
        return own_cause([e.cause for e in self.events], owned)

    def calls(self) -> list[ToolCall]:
        """Every tool call the policy made."""
        return [t.call for t in self.turns if t.call is not None]

    def served(self) -> int:
        """Calls the environment answered (every parsed call less those that failed) and turns it
        replied to: evidence the environment was up."""
        return len(self.calls()) - sum(e.cause in CALL_FAILURES for e in self.events) + self.replies

    def record(self) -> dict[str, Any]:
        """The episode for ``rollouts.jsonl``: turns, events with their causes, the finish."""
        return {
            "turns": [{k: v for k, v in asdict(t).items() if v not in (None, 0)} for t in self.turns],
            "events": [{**asdict(e), "cause": e.cause.value} for e in self.events],
            "finish": self.finish,
            "tokens": self.tokens,
            "tool_calls": len(self.calls()),
            **({"replies": self.replies} if self.replies else {}),
            **({"reward": self.reward} if self.reward is not None else {}),
            **({"env_components": dict(self.score.components)} if self.score is not None else {}),
        }

    def judge(self, fn: Callable[[str, dict[str, Any]], Any], row: dict[str, Any], turn: int) -> None:
        """The environment judges the answer (its ``reward(answer, row)``: a number, or an
        :class:`~rlvr.types.EnvScore` with components); a ``reward`` that raises is the environment
        failing to judge (``tool_error``: its fault, not the policy's), never a 0."""
        try:
            got = fn(self.answer, row)
        except Exception as e:
            self.stopped(Cause.TOOL_ERROR, turn, f"reward raised {type(e).__name__}: {str(e)[:300]}")
            return
        if isinstance(got, EnvScore):
            self.score, self.reward = got, float(got.total)
        else:
            self.reward = float(got)


def env_scored(scored: Any, episode: Episode) -> Any:
    """``scored`` (a reward breakdown or a :class:`~rlvr.diagnostics.step.RolloutView`: a dataclass
    with ``components``, ``weights``, ``total``, ``verdict``) with the environment's reward as its
    accuracy: the total re-weighed, the verdict saying who judged. An environment that judges with
    components (:attr:`Episode.score`) replaces them all: its components and weights, its total, and
    a verdict that tells a missing answer (``no_answer``) from a failed one (``wrong``)."""

    assert episode.reward is not None
    if (s := episode.score) is not None:
        parts = ", ".join(f"{k} {v:g}" for k, v in s.components.items())
        status = Status.CORRECT if s.passed else Status.WRONG if s.answered else Status.NO_ANSWER
        verdict = Verdict(
            status,
            extracted=episode.answer[-200:] if s.answered else "",
            reason=f"the environment's rubric: {s.total:g} ({parts})"[:300],
            details={"components": dict(s.components)},
        )
        return dataclasses.replace(
            scored, components=dict(s.components), weights=dict(s.weights), total=s.total, verdict=verdict
        )
    comps = {**scored.components, "accuracy": episode.reward}
    total = sum(scored.weights.get(k, 0.0) * v for k, v in comps.items() if v is not None)
    verdict = Verdict(
        Status.CORRECT if episode.reward > 0 else Status.WRONG,
        extracted=episode.answer[-200:],
        reason=f"the environment's reward: {episode.reward:g}",
    )
    return dataclasses.replace(scored, components=comps, total=total, verdict=verdict)
