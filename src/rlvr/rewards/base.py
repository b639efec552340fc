"""The reward contract, the registry, and the helpers every reward shares.

A reward is a callable ``fn(completions, **columns) -> list[float | None]`` (TRL's
contract: ``completions`` are strings or chat messages, every dataset column
arrives as a keyword, ``None`` means "not applicable to this row"). rlvr's rewards
are :class:`Reward` objects, so they also have :meth:`Reward.score`, which returns
a :class:`Scored` per row with the verifier's verdict and the reward's own
diagnostics, and they keep the last call's :class:`Scored` list in ``.last`` (the
side channel when TRL is the caller).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rlvr.errors import ConfigError, DataError
from rlvr.registry import Registry
from rlvr.types import Verdict

#: Column names read as the gold answer, in order of preference.
GOLD_COLUMNS = ("gold", "answer", "solution", "ground_truth", "target", "reference")
#: Keywords TRL passes that are not dataset columns.
_TRAINER_KWARGS = ("trainer_state", "log_extra", "log_metric", "environments")


@dataclass(frozen=True)
class Scored:
    """One row's reward with what was learned computing it.

    Attributes:
        value: the reward (``None``: not applicable to this row).
        verdict: the verifier's verdict, for rewards that verify.
        info: reward-specific diagnostics (which tag was missing, step signals...).
    """

    value: float | None
    verdict: Verdict | None = None
    info: dict[str, Any] = field(default_factory=dict)


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the assistant content of chat messages (after the
    last ``tool`` message, or the last message of an environment that answers the policy's turns,
    when there is one: an episode's final answer).

    Examples:
        >>> completion_text([{"role": "assistant", "content": "3"}, {"role": "user", "content": "higher"},
        ...                  {"role": "assistant", "content": "7"}])
        '7'
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return str(completion.get("content", ""))
    if isinstance(completion, Sequence):
        msgs = [m for m in completion if isinstance(m, Mapping)]
        # an episode with tools (TRL's tool loop): the answer is what the policy wrote after the last
        # tool result, never a number it wrote before a call or one a tool printed
        last_tool = max((i for i, m in enumerate(msgs) if m.get("role") in ("tool", "user")), default=-1)
        parts = [
            str(m.get("content", "") or "") for m in msgs[last_tool + 1 :] if m.get("role", "assistant") == "assistant"
        ]
        return "\n".join(parts)
    raise DataError(f"a completion must be a string or chat messages, got {type(completion).__name__}")


def prompt_text(prompt: Any) -> str:
    """The text of a prompt: a string, or the last user message of a conversation."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        users = [str(m.get("content", "")) for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
        if users:
            return users[-1]
        return "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, Mapping))
    return str(prompt)


def column(columns: Mapping[str, Any], name: str, n: int) -> list[Any] | None:
    """Column ``name`` as a list of length ``n``, or ``None`` when absent; a scalar is broadcast."""
    if name not in columns or columns[name] is None:
        return None
    value = columns[name]
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value] * n
    if len(value) != n:
        raise DataError(f"column {name!r} has {len(value)} values for {n} completions")
    return list(value)


def gold_column(
    columns: Mapping[str, Any], n: int, field_name: str | None = None, prefer: Sequence[str] = ()
) -> list[Any]:
    """The gold answers: column ``field_name``, else the first of ``prefer`` + :data:`GOLD_COLUMNS` present."""
    names = (field_name,) if field_name else (*prefer, *GOLD_COLUMNS)
    for name in names:
        if (values := column(columns, name, n)) is not None:
            return values
    have = sorted(k for k in columns if k not in _TRAINER_KWARGS)
    want = " / ".join(names)
    raise DataError(f"no gold-answer column: expected {want}; the rows have {have or 'no columns'}")


class Reward:
    """Base class: subclasses set ``name`` and implement :meth:`_score` on plain texts."""

    name: ClassVar[str] = "reward"
    #: True when the reward needs the verifier's verdict for each row.
    needs_verdict: ClassVar[bool] = False
    #: Columns read as the gold before :data:`GOLD_COLUMNS` (``tests`` for code).
    gold_columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.__name__ = self.name  # what TRL names the metric: rewards/<name>/mean
        self.last: list[Scored] = []

    def score(self, completions: Sequence[Any], **columns: Any) -> list[Scored]:
        """Score every row, keeping the verdicts and diagnostics."""
        texts = [completion_text(c) for c in completions]
        out = self._score(texts, columns)
        if len(out) != len(texts):  # a bug in a reward, never silently misaligned
            raise RuntimeError(f"reward {self.name!r} returned {len(out)} scores for {len(texts)} rows")
        return out

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float | None]:
        self.last = self.score(completions, **columns)
        log_extra = columns.get("log_extra")
        if log_extra is not None and self.needs_verdict and not columns.get("_quiet"):
            log_extra(f"{self.name}_status", [s.verdict.status.value if s.verdict else "" for s in self.last])
        return [s.value for s in self.last]

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        raise NotImplementedError

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_") and k not in ("last",))
        return f"{type(self).__name__}({opts})"


#: Every reward :func:`build_reward` can build, by name (aliases included).
REWARDS: Registry[Callable[..., Reward]] = Registry("reward")


def register(name: str, *aliases: str) -> Callable[[type[Reward]], type[Reward]]:
    """Class decorator: make a :class:`Reward` buildable by ``name`` (and aliases)."""
    return REWARDS.register(name, *aliases)


def register_alias(alias: str, name: str, **options: Any) -> None:
    """``alias`` builds reward ``name`` with ``options`` (``tag_count`` = format in tag-count mode)."""
    REWARDS.add(alias, functools.partial(REWARDS.get(name), **options))


def available_rewards() -> list[str]:
    """Every name :func:`build_reward` accepts."""
    return REWARDS.names()


def build_reward(name: str, **options: Any) -> Reward:
    """Build a registered reward by name with its options.

    Raises:
        ConfigError: unknown name, or an option the reward does not take.
    """
    make = REWARDS.get(name)
    try:
        reward = make(**options)
    except TypeError as e:
        raise ConfigError(f"reward {name!r}: {e}") from None
    reward.__name__ = name  # an alias logs under the name it was asked for
    return reward
