"""Records shared across rlvr: the verifier's structured verdict.

A verdict never collapses to a bare bool: a rollout that scores 0 either died of
*format* (``no_answer``: nothing could be extracted) or of *verification*
(``wrong``: extracted, judged unequal). Timeouts and internal errors are their own
statuses and are never reported as ``wrong``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Status(str, Enum):
    """Outcome of one verification."""

    CORRECT = "correct"
    WRONG = "wrong"  # answer extracted, judged unequal: a verification death
    NO_ANSWER = "no_answer"  # nothing extractable: a format death
    BAD_GOLD = "bad_gold"  # the gold itself cannot be parsed
    TIMEOUT = "timeout"
    ERROR = "error"
    UNCERTAIN = "uncertain"  # the LLM judge could not be trusted (down, garbage, a reply that failed its checks)

    def __str__(self) -> str:  # so f"{status}" prints "correct", not "Status.CORRECT"
        return self.value


class Method(str, Enum):
    """How equality (or inequality) was decided."""

    STRING = "string"
    NUMERIC = "numeric"
    SYMBOLIC = "symbolic"
    STRUCTURAL = "structural"
    EXECUTION = "execution"  # the program was run against tests
    CONSTRAINT = "constraint"  # format constraints were checked (instruction following)
    JUDGE = "judge"  # an LLM judge decided
    NONE = "none"  # nothing was compared (no answer, bad gold, timeout, error)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Verdict:
    """The structured result of verifying one completion against one gold answer.

    Attributes:
        status: what happened (see :class:`Status`).
        extracted: the answer span taken from the completion ("" when none).
        method: how equality was decided.
        reason: one human-readable line.
        gold: the answer span taken from the gold ("" when unparsable).
        details: verifier-specific extras (e.g. which extraction rule fired).
    """

    status: Status
    extracted: str = ""
    method: Method = Method.NONE
    reason: str = ""
    gold: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        """True only for :attr:`Status.CORRECT`."""
        return self.status is Status.CORRECT

    @property
    def format_death(self) -> bool:
        """Nothing could be extracted from the completion."""
        return self.status is Status.NO_ANSWER

    @property
    def verification_death(self) -> bool:
        """An answer was extracted and judged wrong."""
        return self.status is Status.WRONG

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (enums as their string values)."""
        d = asdict(self)
        d["status"] = self.status.value
        d["method"] = self.method.value
        d["correct"] = self.correct
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """Inverse of :meth:`to_dict` (extra keys are ignored)."""
        return cls(
            status=Status(d["status"]),
            extracted=d.get("extracted", ""),
            method=Method(d.get("method", "none")),
            reason=d.get("reason", ""),
            gold=d.get("gold", ""),
            details=dict(d.get("details") or {}),
        )


@dataclass(frozen=True)
class RewardBreakdown:
    """One rollout's rewards: the weighted total *and* every component it was built from.

    Attributes:
        total: ``sum(weights[k] * components[k])`` over the components that are not
            ``None``; ``None`` when every component is ``None`` (nothing applied).
        components: each named reward's value (``None``: not applicable to this row).
        weights: the weight in force for each component when this row was scored.
        verdict: the verifier's verdict for the row, when a component needed one.
    """

    total: float | None
    components: dict[str, float | None]
    weights: dict[str, float]
    verdict: Verdict | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "total": self.total,
            "components": dict(self.components),
            "weights": dict(self.weights),
            "verdict": self.verdict.to_dict() if self.verdict is not None else None,
        }


@dataclass(frozen=True)
class EnvScore:
    """An environment's own judgement of an episode (a published environment's rubric, an OpenEnv
    server's rewards): its components kept apart, as rlvr's own rewards are.

    Attributes:
        total: the weighted sum of ``components`` (the environment's reward).
        components: each reward function's value, by name (``format`` for a parser's format reward).
        weights: each component's weight.
        passed: the episode counts as solved (``correct``; else ``wrong``).
        answered: an answer was found at all (False: ``no_answer``, the format's death).
    """

    total: float
    components: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    passed: bool = False
    answered: bool = True
