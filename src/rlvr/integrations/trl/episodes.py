"""Episodes on TRL's tool loop: every row's tools under a guard, the episode read back from TRL's messages.

TRL 1.16 runs tools inside ``GRPOTrainer._tool_call_loop``: it looks each call up in the row's
``_sync_tool_dicts[i]`` (``name in tools``, then ``tools[name](**arguments)``) and turns any
exception into an ``{"error": ...}`` message. :class:`GuardedTools` takes that dict's place: every
name is answered (one the row does not offer is the policy's ``unknown_tool``), every call runs
through the row's :class:`~rlvr.episodes.guard.Guard` (schema check, time limit, injected faults,
the cause of each failure recorded at the source) and its result is what the policy sees.

After TRL's loop, :func:`episode_of` reads one row's :class:`~rlvr.episodes.episode.Episode` from
what TRL kept (the assistant and tool messages, the tool mask) and the guard's outcomes, and
classifies what TRL leaves untraced: a final turn that still holds ``<tool_call>`` markup TRL could
not parse (``malformed_tool_call``: TRL ended the episode there as if it were the answer), a call
left unanswered after ``max_tool_calling_iterations`` rounds (``turn_limit``) or because its result
would not fit (``context_overflow``: TRL rolled it back), a result that left no tokens to answer
(``context_overflow``).

Environments (``environment_factory``) are built through :class:`GuardedFactory`: a factory or a
``reset`` that raises is the environment's ``env_crash`` for that row, not a crashed step.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rlvr.diagnostics.causes import Cause
from rlvr.episodes.env import release, tool_schema, tools_of
from rlvr.episodes.episode import ENVIRONMENT_FAULTS, Episode, Event, ToolCall, Turn
from rlvr.episodes.guard import CALL_END, Faults, Guard, Outcome, find_call
from rlvr.episodes.tools import EnvCrash
from rlvr.errors import ConfigError


class DeadEnvironment:
    """Stands in for an environment that could not be built or reset: every call is ``env_crash``."""

    def __init__(self, why: str) -> None:
        self.why = why

    def reset(self, **kwargs: Any) -> None:
        return None


class GuardedFactory:
    """An ``environment_factory`` whose instances never crash TRL's step: a factory that raises gives
    a :class:`DeadEnvironment`, a ``reset`` that raises marks its instance dead (``env_crash``)."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory
        self.__name__ = getattr(factory, "__name__", type(factory).__name__)

    def __call__(self) -> Any:
        try:
            env = self.factory()
        except Exception as e:
            return DeadEnvironment(f"the environment could not be built: {type(e).__name__}: {e}")
        reset = env.reset

        @functools.wraps(reset)
        def guarded_reset(**kwargs: Any) -> Any:
            env.__dict__.pop("_rlvr_dead", None)  # a pooled instance starts each episode alive
            try:
                return reset(**kwargs)
            except Exception as e:
                env.__dict__["_rlvr_dead"] = f"the environment could not start: {type(e).__name__}: {e}"
                return None

        env.reset = guarded_reset  # the instance's, so TRL's tool listing (by class) is unchanged
        return env


def dead_reason(env: Any) -> str | None:
    """Why ``env`` cannot run an episode (None: it can)."""
    if isinstance(env, DeadEnvironment):
        return env.why
    return getattr(env, "__dict__", {}).get("_rlvr_dead")


def guard_factories(factory: Any) -> Any:
    """TRL's ``environment_factory`` argument (one factory or a dict of them) with every factory guarded."""
    if factory is None:
        return None
    if isinstance(factory, Mapping):
        return {k: GuardedFactory(f) for k, f in factory.items()}
    return GuardedFactory(factory)


def check_tools(tools: Iterable[Callable[..., Any]], where: str = "tools") -> None:
    """Every tool can be described to the policy (a ConfigError naming it and the fix, before any
    process starts)."""

    for fn in tools:
        if not callable(fn):
            raise ConfigError(
                f"{where}: {fn!r} is not callable; a tool is a function with type hints and a Google-style docstring"
            )
        tool_schema(fn)


def _sync(fn: Callable[..., Any], loop: Any) -> Callable[..., Any]:
    """An async tool as a blocking call on TRL's event loop (the guard times it like any other)."""
    if not inspect.iscoroutinefunction(fn):
        return fn

    @functools.wraps(fn)
    def run(**kwargs: Any) -> Any:
        if loop is None:
            return asyncio.run(fn(**kwargs))
        return asyncio.run_coroutine_threadsafe(fn(**kwargs), loop).result()

    return run


class GuardedTools(dict):  # type: ignore[type-arg]
    """One row's tools as TRL's tool loop looks them up (see the module docstring); the outcome of
    every call it made, in order, is kept in :attr:`outcomes`."""

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]],
        *,
        key: str,
        timeout_s: float,
        max_result_chars: int,
        faults: Faults | None,
        loop: Any = None,
        dead: str | None = None,
        step: int | None = None,
    ) -> None:
        super().__init__()
        self.guard = Guard(
            {n: _sync(f, loop) for n, f in tools.items()},
            key=key,
            timeout_s=timeout_s,
            max_result_chars=max_result_chars,
            faults=faults,
            step=step,
        )
        self.dead = dead
        self.outcomes: list[Outcome] = []

    def __contains__(self, name: object) -> bool:
        return True

    def __getitem__(self, name: str) -> Callable[..., str]:
        def call(**arguments: Any) -> str:
            turn = len(self.outcomes)
            if self.dead is not None:  # the session is gone: no call can run
                out = Outcome(
                    f"error: {self.dead}", ToolCall(name, arguments), Event(Cause.ENV_CRASH, turn, self.dead, name)
                )
            else:
                out = self.guard.invoke(name, arguments, turn)
            self.outcomes.append(out)
            if out.event is not None:  # raised, so TRL's loop counts it as it counts a failed call
                raise ToolFailed(out.result)  # (tools/failure_frequency) and answers {"error": ...}
            return out.result

        call.__name__ = name
        return call


class ToolFailed(Exception):
    """A guarded call that failed (its event is recorded): TRL's tool loop catches it as a failure."""


class EvalEnvironment:
    """A TRL row's tools as rlvr's turn loop takes them (held-out episodes): a fresh TRL environment
    per episode, reset from its row as TRL resets it, its tools and TRL's standalone ones in
    :attr:`tools`."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.env: Any = None
        self.tools: dict[str, Callable[..., Any]] = {}

    def reset(self, row: dict[str, Any]) -> Any:
        t, obs = self.trainer, None
        if t.environment_factories is not None:
            name = row.get("environment") if t._multi_environment else None
            self.env = t.environment_factories[name]()
            obs = self.env.reset(
                **({k: v for k, v in row.items() if k != "environment"} if t._multi_environment else row)
            )
            if (why := dead_reason(self.env)) is not None:
                raise EnvCrash(why)
        loop = getattr(t, "async_loop", None)
        self.tools = {n: _sync(f, loop) for n, f in row_tools(t._standalone_tools, self.env).items()}
        return obs if isinstance(obs, str) else None

    def close(self) -> None:
        """The episode is over: its environment's session ends (an rlvr environment on TRL's tool loop)."""
        own = getattr(self.env, "_close", None)  # an rlvr environment wrapped for TRL: its own session
        if callable(own):
            own()
        else:
            release(self.env)


def trl_environment(cls: type) -> type:
    """An rlvr environment class (``reset(row)``, tools as methods, optional ``reward(answer, row)``) as
    TRL's ``environment_factory`` takes one: ``reset(**row)`` starts a fresh rlvr environment (TRL
    pools and resets its instances; an rlvr episode always starts clean) and its observation is
    joined to the prompt after a blank line, as on rlvr's engine; the tools are methods of the class
    with the rlvr tools' signatures and docstrings (TRL's schemas); ``reward`` is not a TRL tool,
    :class:`~rlvr.integrations.trl.FailureAwareGRPOTrainer` asks it to judge the answer."""

    names = list(tools_of(cls()))

    def __init__(self: Any) -> None:
        self._rlvr_env = cls()

    def _close(self: Any) -> None:  # private: TRL lists the class's public methods as tools
        release(self._rlvr_env)

    def reset(self: Any, **row: Any) -> str | None:
        self._close()  # the previous episode's session ends here (an OpenEnv server caps its sessions)
        self._rlvr_env = cls()
        obs = self._rlvr_env.reset({**row, "id": row.get("id", row.get("prompt_id"))})
        return f"\n\n{obs}" if obs else None

    ns: dict[str, Any] = {
        "__init__": __init__,
        "reset": reset,
        "_close": _close,
        "__doc__": f"{cls.__name__} for TRL's tool loop",
    }
    for name in names:

        def method(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            return getattr(self._rlvr_env, _name)(*args, **kwargs)

        ns[name] = functools.wraps(getattr(cls, name))(method)
    return type(f"TRL{cls.__name__}", (), ns)


def trl_methods(env: Any) -> list[Callable[..., Any]]:
    """An environment's tools as TRL lists them: the public functions of its class but ``reset`` and
    ``get_reward``, bound to it."""
    return [
        getattr(env, n)
        for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    ]


def row_tools(standalone: Iterable[Callable[..., Any]], env: Any) -> dict[str, Callable[..., Any]]:
    """A row's tools by name, as TRL's loop builds them: its standalone tools and its environment's
    methods (None: none), a sync tool before an async one of the same name, as TRL looks them up."""
    tools = [*standalone, *(trl_methods(env) if env is not None else [])]
    sync = {t.__name__: t for t in tools if not inspect.iscoroutinefunction(t)}
    return {**{t.__name__: t for t in tools if inspect.iscoroutinefunction(t)}, **sync}


def _segments(mask: Sequence[int]) -> list[tuple[int, int]]:
    """``(start, length)`` of each run of policy tokens (1s) in a tool mask: one per assistant message."""
    out: list[tuple[int, int]] = []
    for i, bit in enumerate(mask):
        if bit and (i == 0 or not mask[i - 1]):
            out.append((i, 0))
        if bit:
            out[-1] = (out[-1][0], out[-1][1] + 1)
    return out


def episode_of(
    messages: Sequence[Mapping[str, Any]],
    completion_ids: Sequence[int],
    tool_mask: Sequence[int] | None,
    outcomes: Sequence[Outcome],
    *,
    prompt: str,
    tokenizer: Any,
    stop_ids: Iterable[int],
    max_iterations: int,
    dead: str | None = None,
    env_faults: Iterable[Cause] = ENVIRONMENT_FAULTS,
) -> Episode:
    """One row's episode from TRL's messages and the guard's outcomes (see the module docstring)."""
    owned = frozenset(env_faults)
    ep = Episode(prompt=prompt)
    mask = list(tool_mask) if tool_mask is not None else [1] * len(completion_ids)
    spans = _segments(mask)
    if dead is not None:
        ep.events.append(Event(Cause.ENV_CRASH, 0, dead))
    queue = list(outcomes)
    pending: list[Outcome] = []
    rounds = seg = 0
    msgs = list(messages)
    for k, m in enumerate(msgs):
        role = m.get("role")
        if role == "assistant":
            start, tokens = spans[seg] if seg < len(spans) else (0, 0)
            calls = m.get("tool_calls") or []
            if not calls:
                raw = tokenizer.decode(completion_ids[start : start + tokens]) if tokens else ""
                content = str(m.get("content") or "")
                if k == len(msgs) - 1:
                    stop = set(stop_ids)
                    finish = "eos" if completion_ids and completion_ids[-1] in stop else "length"
                    # markup TRL could not parse ended the episode as if it were the answer; a call the
                    # budget cut before it closed is truncation, not a malformed call
                    if find_call(raw) is not None and (CALL_END in raw or finish == "eos"):
                        ep.events.append(
                            Event(
                                Cause.MALFORMED_TOOL_CALL,
                                seg,
                                f"the tool call does not parse (TRL ended the episode on it): {raw[-200:]!r}",
                            )
                        )
                    ep.answered(content, finish, tokens)
                else:
                    ep.turns.append(Turn("assistant", content, tokens=tokens))
                    ep.tokens += tokens
            for j, c in enumerate(calls):
                fn = c.get("function", {}) if isinstance(c, Mapping) else {}
                name = str(fn.get("name", c.get("name", "?") if isinstance(c, Mapping) else "?"))
                args = fn.get("arguments", {})
                if not isinstance(c, Mapping) or c.get("type", "function") != "function":
                    out = Outcome(
                        "error",
                        None,
                        Event(
                            Cause.MALFORMED_TOOL_CALL,
                            seg,
                            f"a call of type {c.get('type') if isinstance(c, Mapping) else c!r}",
                            name,
                        ),
                    )
                elif not isinstance(args, dict):  # TRL's **arguments failed before any tool ran
                    out = Outcome(
                        "error",
                        ToolCall(name, {"_": args}),
                        Event(Cause.BAD_ARGUMENTS, seg, f"the arguments of {name} must be an object", name),
                    )
                else:
                    out = queue.pop(0) if queue else Outcome("", ToolCall(name, args))
                    if out.event is not None:
                        out.event = Event(out.event.cause, seg, out.event.detail, out.event.tool, out.event.latency_s)
                ep.turns.append(
                    Turn(
                        "assistant",
                        str(m.get("content") or "") if j == 0 else "",
                        out.call or ToolCall(name, {}),
                        tokens if j == 0 else 0,
                    )
                )
                ep.tokens += tokens if j == 0 else 0
                if out.event is not None:
                    ep.events.append(out.event)
                pending.append(out)
            seg += 1
        elif role == "tool":
            out = pending.pop(0) if pending else Outcome("")
            ep.turns.append(Turn("tool", str(m.get("content", "")), latency_s=out.latency_s))
            if not pending:
                rounds += 1
    last = msgs[-1] if msgs else {}
    if last.get("role") == "assistant" and last.get("tool_calls"):  # a call TRL never answered
        if rounds >= max_iterations:
            ep.stopped(Cause.TURN_LIMIT, seg - 1, f"{max_iterations} tool rounds without a final answer")
        else:
            ep.stopped(Cause.CONTEXT_OVERFLOW, seg - 1, "the tool's result did not fit the completion budget")
    elif last.get("role") == "tool":  # the result left no token to answer with
        ep.stopped(Cause.CONTEXT_OVERFLOW, seg, "no tokens left to answer after the tool's result")
    for out in queue:  # calls of a round TRL rolled back (overflow): they ran, their faults count
        if out.event is not None:
            ep.events.append(out.event)
    if ep.fault(owned) is not None:
        ep.finish = "fault"
    return ep


__all__ = [
    "DeadEnvironment",
    "EvalEnvironment",
    "GuardedFactory",
    "GuardedTools",
    "ToolFailed",
    "check_tools",
    "dead_reason",
    "episode_of",
    "guard_factories",
    "row_tools",
    "trl_environment",
    "trl_methods",
]
