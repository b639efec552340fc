"""``verifiers`` environments as rlvr episode environments (see :mod:`rlvr.data.verifiers_env`).

:func:`environment_class` wraps a ``vf.ToolEnv`` / ``vf.StatefulToolEnv`` in the class rlvr's
episodes run on every engine: ``reset(row)`` starts the row's state (the environment's own
``setup_state``), each tool a method with the tool's own signature and docstring (a
``StatefulToolEnv``'s hidden arguments filled by its ``update_tool_args``), ``reward`` the rubric.
A tool that raises is the environment's ``tool_error`` (the guard records it); ``verifiers`` itself
would hand the exception to the policy as the tool's message.

A ``vf.MultiTurnEnv`` that answers with its own ``env_response`` becomes a class with ``respond``
instead of tools: each turn of the policy is a step of ``state["trajectory"]``; when none of the
environment's stop conditions holds, its ``env_response`` is the reply; a ``final_env_response`` it
sets ends the episode (its messages seen by the rubric, as ``verifiers`` renders them).
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Sequence
from typing import Any

from rlvr.data.verifiers_env import converses, gold_fields, load, plain, verifiers_module
from rlvr.errors import ConfigError
from rlvr.types import EnvScore
from rlvr.verify.verifiers_rubric import new_state, run_async, score


class _Episode:
    """One episode of the verifiers environment ``vf_env`` (its subclass's): the row's fresh state
    (the environment's own ``setup_state``) and the episode's messages after the prompt."""

    vf_env: Any = None

    def __init__(self) -> None:
        self.state: Any = None
        self.messages: list[dict[str, Any]] = []

    def reset(self, row: dict[str, Any]) -> None:
        env = self.vf_env
        fields = gold_fields(row.get("gold"))
        self.state = new_state(env, fields, fields.get("prompt") or row.get("prompt") or [])
        self.messages = []
        setup = run_async(env.setup_state(self.state))
        if setup is not None:
            self.state = setup
        return None


def _described(name: str, fn: Callable[..., Any], hidden: Sequence[str]) -> Callable[..., Any]:
    """A method calling tool ``name`` with ``fn``'s visible parameters, type hints and docstring (what
    the policy is told, on every engine), the ``hidden`` ones left for ``update_tool_args``."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = dict(getattr(fn, "__annotations__", {}))
    params = [p for n, p in sig.parameters.items() if n not in hidden and n != "self"]
    shown = {p.name for p in params}

    def method(self: Any, **kwargs: Any) -> Any:
        return self._call(name, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = sig.replace(parameters=[self_param, *params])  # type: ignore[attr-defined]
    method.__annotations__ = {k: v for k, v in hints.items() if k in shown or k == "return"}
    return method


def environment_class(spec: str) -> type:
    """An rlvr environment class (``reset(row)``, tools as methods, ``reward(answer, row)``) running
    episodes of the tool environment ``spec`` names: a fresh state per episode, the environment's own
    tools (async ones awaited), its rubric as the episode's score; for a ``MultiTurnEnv`` with its own
    ``env_response``, a class whose ``respond`` is that response (see the module docstring).

    Raises:
        ConfigError: the environment has no tools and does not answer the policy's turns (a
            single-turn one: name it in ``data.path``).
    """
    env = load(spec)
    vf = verifiers_module()
    if converses(spec):
        return _dialogue_class(env)
    if not isinstance(env, vf.ToolEnv) or not env.tool_map:
        raise ConfigError(
            f"env.environment {spec!r} has no tools: a single-turn environment's rows go in data.path: {spec}"
        )
    hidden: dict[str, list[str]] = dict(getattr(env, "skipped_args", {}) or {})

    class VerifiersEpisode(_Episode):
        """One episode of a verifiers tool environment (made fresh per episode)."""

        vf_env = env

        def _call(self, name: str, args: dict[str, Any]) -> Any:
            call_id = f"call_{len(self.messages) // 2}"
            self.messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": call_id, "name": name, "arguments": json.dumps(args)}],
                }
            )
            if name in hidden:  # a StatefulToolEnv fills what the policy is not shown
                history = [*(plain(self.state["prompt"]) or []), *self.messages]
                args = env.update_tool_args(name, dict(args), history, self.state)
            result = run_async(env.tool_map[name](**args))
            self.messages.append({"role": "tool", "content": str(result), "tool_call_id": call_id})
            return result

        def reward(self, answer: str, row: dict[str, Any]) -> EnvScore:
            if self.state is None:
                self.reset(row)
            return score(env, self.state, [*self.messages, {"role": "assistant", "content": answer}])

    for name, fn in env.tool_map.items():
        setattr(VerifiersEpisode, name, _described(name, fn, hidden.get(name, ())))
    VerifiersEpisode.__name__ = VerifiersEpisode.__qualname__ = f"Verifiers_{type(env).__name__}"
    return VerifiersEpisode


def _dialogue_class(env: Any) -> type:
    """The rlvr environment class of a ``MultiTurnEnv`` that answers with its own ``env_response``."""
    from verifiers.legacy.utils.message_utils import normalize_messages

    def messages(value: Any) -> list[dict[str, Any]]:
        return list(plain(normalize_messages(value, field_name="env_response")))

    class VerifiersDialogue(_Episode):
        """One episode of a verifiers multi-turn environment (made fresh per episode)."""

        vf_env = env

        def respond(self, text: str) -> list[dict[str, Any]] | None:
            """The environment's reply to the policy's turn ``text``; None once a stop condition holds
            (checked after the turn, as the environment's own rollout does) or it set its final response."""
            history = [*(plain(self.state["prompt"]) or []), *self.messages]
            said = {"role": "assistant", "content": text}
            self.messages.append(said)
            step = {
                "prompt": normalize_messages(history, field_name="prompt"),
                "completion": normalize_messages([said], field_name="completion"),
                "response": None,
                "tokens": None,
                "reward": None,
                "advantage": None,
                "is_truncated": False,
                "trajectory_id": self.state.get("trajectory_id", ""),
                "extras": {},
            }
            run_async(env.add_trajectory_step(self.state, step))
            if run_async(env.is_completed(self.state)):
                return None
            reply = run_async(env.env_response(normalize_messages([*history, said]), self.state))
            final = self.state.get("final_env_response")
            if final is not None:  # the environment's last word: the rubric reads it, the policy does not answer
                self.messages += messages(final)
                return None
            got = messages(reply)
            self.messages += got
            return got

        def reward(self, answer: str, row: dict[str, Any]) -> EnvScore:
            if self.state is None:
                self.reset(row)
            said = [m for m in self.messages if m.get("role") == "assistant"]
            last = (
                [{"role": "assistant", "content": answer}]
                if answer and (not said or said[-1]["content"] != answer)
                else []
            )
            return score(env, self.state, [*self.messages, *last])

    VerifiersDialogue.__name__ = VerifiersDialogue.__qualname__ = f"Verifiers_{type(env).__name__}"
    return VerifiersDialogue
