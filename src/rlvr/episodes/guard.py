"""The guard around an environment: every tool call parsed, checked, timed and recorded at the source.

The policy writes a call as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the
Hermes / Qwen2.5 markup that chat templates render). :meth:`Guard.call` turns one such text into
the tool's result and, when something went wrong, the :class:`~rlvr.episodes.episode.Event` that
says what and whose fault:

* markup that does not parse: ``malformed_tool_call``; a name the environment does not offer:
  ``unknown_tool``; arguments outside the tool's schema: ``bad_arguments`` (the policy's faults:
  the error goes back to it as the tool's result and the episode goes on);
* a tool that raises on a well-formed call: ``tool_error``; one that runs past ``timeout_s``:
  ``env_timeout`` (the environment's own time: a stretch where a tool runs the policy's program
  under a limit of its own, :func:`~rlvr.episodes.clock.policy_time`, is not counted); an
  :class:`~rlvr.episodes.tools.EnvCrash` (a sandbox or session that died):
  ``env_crash`` (the environment's: the episode ends there, to be redrawn);
* a result longer than ``max_result_chars`` is cut to it (said in the result and the turn).

An environment that answers the policy's turns (its ``respond``, :mod:`rlvr.episodes.env`) is run
by :meth:`Guard.respond` under the same rules: timed, its exceptions the environment's
``tool_error`` (``env_crash`` for an :class:`~rlvr.episodes.tools.EnvCrash`), a reply that is not
messages its ``tool_error`` too, each message's text made encodable and cut as a result is.

:class:`Faults` injects the environment's faults on purpose, seeded per episode and call, for
tests and benchmarks (off by default).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from rlvr.diagnostics.causes import Cause
from rlvr.encoding import encodable, unencodable
from rlvr.episodes.clock import TEARDOWN_S, CallClock
from rlvr.episodes.env import tool_schema, tools_of
from rlvr.episodes.episode import Episode, Event, ToolCall, Turn
from rlvr.episodes.tools import EnvCrash

_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
FAULT_KINDS = (Cause.TOOL_ERROR, Cause.ENV_TIMEOUT, Cause.ENV_CRASH)


CALL_END = "</tool_call>"


def call_markup(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as the policy writes it (compact JSON)."""
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments}, separators=(',', ':'))}{CALL_END}"


def result_markup(result: str) -> str:
    """A tool's result as it is appended to the policy's sequence (the Hermes ``tool_response`` tag)."""
    return f"<tool_response>{result}</tool_response>"


def find_call(text: str) -> str | None:
    """The markup of the first tool call in an assistant turn (None: the turn is a final answer)."""
    m = _CALL.search(text)
    return m.group(1) if m else None


def bad_arguments(name: str, args: Any, parameters: Mapping[str, Any] | None) -> str | None:
    """Why ``args`` cannot go to tool ``name`` (not a JSON object, or outside its schema's
    ``parameters``), None when they can: the policy's ``bad_arguments`` on every engine."""
    if not isinstance(args, dict):
        return f"the arguments of {name} must be an object, got {type(args).__name__}"
    for key, value in args.items():  # text no tool can be handed (a lone surrogate from a JSON escape)
        if isinstance(value, str) and (why := unencodable(value)) is not None:
            return f"bad arguments for {name}: {key!r} cannot be written as UTF-8 ({why})"
    if not parameters:
        return None

    try:
        jsonschema.validate(args, dict(parameters))
    except jsonschema.ValidationError as e:
        return f"bad arguments for {name}: {e.message}"
    return None


def unbindable(name: str, fn: Callable[..., Any], args: Mapping[str, Any]) -> str | None:
    """Why the tool's own signature does not take ``args`` (an argument it has no parameter for, a
    required one missing: a schema need not forbid extra keys), None when it does. The call never
    starts, so the mistake is the policy's (``bad_arguments``), not a ``TypeError`` the tool raised."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the schema check is all there is
        return None
    try:
        sig.bind(**args)
    except TypeError as e:
        return f"bad arguments for {name}: {e}"
    return None


@dataclass(frozen=True)
class Faults:
    """Injected environment faults: ``rates`` per kind (``tool_error``, ``env_timeout``, ``env_crash``),
    drawn from ``seed`` and the episode's key and call number (the same episode, the same faults);
    and ``outages``, ``[start, end)`` step ranges during which every call fails (``env_crash``: the
    tool server is down for a stretch of steps, not a coin flip per episode).

    Examples:
        >>> f = Faults(outages=((3, 5),))
        >>> [f.draw("ep", 1, step) for step in (2, 3, 4, 5)]
        [None, <Cause.ENV_CRASH: 'env_crash'>, <Cause.ENV_CRASH: 'env_crash'>, None]
    """

    rates: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    outages: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        bad = [k for k in self.rates if k not in {c.value for c in FAULT_KINDS}]
        if bad or any(not 0 <= r <= 1 for r in self.rates.values()):
            raise ValueError(
                f"env.faults: kinds are {', '.join(c.value for c in FAULT_KINDS)} with rates in "
                f"[0, 1]; got {dict(self.rates)}"
            )

    def down(self, step: int | None) -> bool:
        """Whether an outage covers training step ``step`` (1-based; None: no step known)."""
        return step is not None and any(a <= step < b for a, b in self.outages)

    def draw(self, key: str, call: int, step: int | None = None) -> Cause | None:
        """The fault injected into call ``call`` of episode ``key`` (of training step ``step``), if any."""
        if self.down(step):
            return Cause.ENV_CRASH
        if not self.rates:
            return None
        u = random.Random(f"{self.seed}:{key}:{call}").random()
        for kind in FAULT_KINDS:
            u -= self.rates.get(kind.value, 0.0)
            if u < 0:
                return kind
        return None


@dataclass
class Outcome:
    """One call's result text, the call as parsed (None when it did not parse), and its event."""

    result: str
    call: ToolCall | None = None
    event: Event | None = None
    cut: bool = False
    latency_s: float = 0.0
    responded: bool = False  # the environment answering a turn without a call (:meth:`Guard.respond`)
    reply: list[dict[str, str]] | None = None  # its messages; None: the episode is over

    def record(self, ep: Episode, text: str, tokens: int, owned: frozenset[Cause]) -> bool:
        """Add the assistant turn that made this call, the tool turn that answers it (or the
        environment's messages) and its event to ``ep``; True when the event is the environment's
        fault (``owned``): the episode ends there."""
        ep.turns.append(Turn("assistant", text, self.call, tokens))
        if self.responded:  # the environment's messages answering the turn (none when it failed)
            ep.turns += [Turn(m["role"], m["content"], latency_s=self.latency_s) for m in self.reply or ()]
        else:
            ep.turns.append(Turn("tool", self.result, latency_s=self.latency_s))
        ep.tokens += tokens
        if self.event is None:
            ep.replies += self.responded
            return False
        ep.events.append(self.event)
        if self.event.cause in owned:
            ep.finish = "fault"
            return True
        return False


class Guard:
    """Runs an environment's tool calls under the rules above (one guard per episode).

    ``env``: the environment whose public methods are the tools, or a mapping ``name -> callable``
    (an engine's own tool list: TRL's ``tools``, a verl tool).
    """

    def __init__(
        self,
        env: object | Mapping[str, Callable[..., Any]],
        *,
        key: str = "",
        timeout_s: float = 10.0,
        max_result_chars: int = 2000,
        faults: Faults | None = None,
        step: int | None = None,
    ) -> None:
        self.env, self.key, self.timeout_s, self.max_result_chars = env, key, timeout_s, max_result_chars
        self.faults, self.step = faults or Faults(), step
        self.tools = dict(env) if isinstance(env, Mapping) else tools_of(env)
        self.schemas = {name: tool_schema(fn) for name, fn in self.tools.items()}
        self.calls = 0

    def call(self, markup: str, turn: int) -> Outcome:
        """Parse, check and run one call (see the module docstring for what each failure is)."""
        try:
            req = json.loads(markup.strip())
            name, args = req["name"], req.get("arguments", {})
            if isinstance(args, str):
                args = json.loads(args)
            if not isinstance(name, str) or not isinstance(args, dict):
                raise TypeError("name must be a string and arguments an object")
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            return self._policy(Cause.MALFORMED_TOOL_CALL, turn, f"the tool call does not parse: {e}")
        return self.invoke(name, args, turn)

    def invoke(self, name: str, args: Any, turn: int) -> Outcome:
        """Check and run a call an engine has already parsed (TRL's ``tool_calls``, verl's)."""
        if (why := bad_arguments(name, args, None)) is not None:  # not an object: before its name is looked up
            return self._policy(Cause.BAD_ARGUMENTS, turn, why, call=ToolCall(name, {"_": args}))
        call = ToolCall(name, args)
        if name not in self.tools:
            return self._policy(
                Cause.UNKNOWN_TOOL, turn, f"no tool {name!r}; tools: {', '.join(self.tools)}", call=call
            )
        if (why := bad_arguments(name, args, self.schemas[name]["function"].get("parameters"))) is not None:
            return self._policy(Cause.BAD_ARGUMENTS, turn, why, call=call)
        if (why := unbindable(name, self.tools[name], args)) is not None:
            return self._policy(Cause.BAD_ARGUMENTS, turn, why, call=call)
        return self._run(call, turn)

    def _policy(self, cause: Cause, turn: int, why: str, call: ToolCall | None = None) -> Outcome:
        return Outcome(f"error: {why}", call, Event(cause, turn, why, call.name if call else ""))

    def _run(self, call: ToolCall, turn: int) -> Outcome:
        ran = self._timed(call.name, lambda: self.tools[call.name](**call.arguments), turn, call)
        if isinstance(ran, Outcome):
            return ran
        value, latency = ran
        text = encodable(value if isinstance(value, str) else json.dumps(value, default=str))
        text, cut = self._cut(text)
        return Outcome(text, call, None, cut, latency)

    def _cut(self, text: str) -> tuple[str, bool]:
        if len(text) <= self.max_result_chars:
            return text, False
        return text[: self.max_result_chars] + f"... [cut at {self.max_result_chars} characters]", True

    def respond(self, text: str, turn: int) -> Outcome:
        """The environment's answer to a turn without a call (its ``respond(text)``), run as a call
        is (timed, faults injected, its exceptions the environment's): ``reply`` holds its messages
        (``{"role", "content"}``, text made encodable and cut at ``max_result_chars``), None when it
        says the episode is over."""
        fn = getattr(self.env, "respond", None)
        assert callable(fn), "respond is asked of an environment that has one"
        ran = self._timed("respond", lambda: fn(text), turn, None)
        if isinstance(ran, Outcome):
            return dataclasses.replace(ran, responded=True)
        value, latency = ran
        try:
            reply = messages_of(value)
        except TypeError as e:  # the environment answered with something that is no message
            why = f"respond returned {e}"
            event = Event(Cause.TOOL_ERROR, turn, why, "respond", latency)
            return Outcome(f"error: {why}", None, event, latency_s=latency, responded=True)
        cut = False
        if reply is not None:
            for m in reply:
                m["content"], c = self._cut(encodable(m["content"]))
                cut = cut or c
        return Outcome("", None, None, cut, latency, responded=True, reply=reply)

    def _timed(
        self, name: str, work_fn: Callable[[], Any], turn: int, call: ToolCall | None
    ) -> tuple[Any, float] | Outcome:
        """``work_fn()`` under the limit, as one of the environment's calls: ``(its value, seconds)``,
        or the failed call's :class:`Outcome` (an injected fault, past the limit, raised)."""
        self.calls += 1
        start = time.monotonic()
        injected = self.faults.draw(self.key, self.calls, self.step)
        if injected is not None:
            why = "injected outage" if self.faults.down(self.step) else f"injected {injected.value}"
            return Outcome(f"error: {why}", call, Event(injected, turn, why, name))
        box: dict[str, Any] = {}
        clock = CallClock()

        def work() -> None:
            with clock.running():
                try:
                    box["value"] = work_fn()
                except BaseException as e:  # every failure of the tool is recorded
                    box["error"] = e

        worker = threading.Thread(target=work, daemon=True, name=f"rlvr-tool-{name}")
        worker.start()
        # the limit counts the environment's own time: the policy's program, which the tool bounds
        # and reports itself (episodes.clock.policy_time), is left out, up to its limit and a teardown's grace
        while True:
            worker.join(max(0.05, self.timeout_s - clock.environment_s()))
            if not worker.is_alive() or clock.environment_s() >= self.timeout_s or clock.overdue():
                break
        latency = time.monotonic() - start
        if worker.is_alive():  # left to finish on its own: a daemon thread holds no process or file of ours
            why = (
                f"{name}'s sandbox did not come back within {TEARDOWN_S:g}s of its own limit"
                if clock.overdue()
                else f"{name} ran past {self.timeout_s:g}s"
            )
            return Outcome(f"error: {why}", call, Event(Cause.ENV_TIMEOUT, turn, why, name, latency), latency_s=latency)
        if "error" in box:
            e = box["error"]
            cause = Cause.ENV_CRASH if isinstance(e, EnvCrash) else Cause.TOOL_ERROR
            why = encodable(f"{type(e).__name__}: {str(e)[:300]}")
            return Outcome(f"error: {why}", call, Event(cause, turn, why, name, latency), latency_s=latency)
        return box.get("value"), latency


def messages_of(value: Any) -> list[dict[str, str]] | None:
    """An environment's reply as ``{"role", "content"}`` messages: None (the episode is over), a text
    (one user message), or messages (dicts or objects with ``role`` and ``content``; an empty list
    says nothing, so the episode is over).

    Raises:
        TypeError: anything else, or a message without text content.

    Examples:
        >>> messages_of("higher")
        [{'role': 'user', 'content': 'higher'}]
        >>> messages_of(None) is None and messages_of([]) is None
        True
    """
    if value is None:
        return None
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list | tuple):
        raise TypeError(f"{type(value).__name__}, not a text or a list of messages")
    out = []
    for m in value:
        get = m.get if isinstance(m, Mapping) else lambda k, m=m: getattr(m, k, None)
        role, content = get("role"), get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise TypeError(f"a message without a role and text content: {str(m)[:120]}")
        out.append({"role": role, "content": content})
    return out or None
