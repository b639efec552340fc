"""Environments: a small class with ``reset`` and tools, as TRL's ``environment_factory`` has it.

A user's environment is a class whose instance is made fresh for every episode (so an episode
redrawn after an environment fault starts clean)::

    class Shop:
        def reset(self, row: dict) -> str | None:
            '''Start an episode from a data row; the text returned joins the prompt.'''
            self.stock = dict(row["stock"])
            return f"The shop has {len(self.stock)} items."

        def price(self, item: str) -> float:
            '''The price of an item.

            Args:
                item: the item's name.
            '''
            return self.stock[item]

Its public methods other than ``reset``, ``respond``, ``reward`` and ``close`` are its tools; each
tool's JSON schema is taken from its type hints and its Google-style docstring
(``transformers.utils.get_json_schema``, as TRL does), and every call is checked against it before
the tool runs. An optional ``reward(answer, row) -> float`` replaces the task's verifier for the
final answer. An optional ``respond(text) -> str | list[dict] | None`` makes the environment a party
to the conversation (a game, a simulated user, a tutor: ``verifiers``' ``MultiTurnEnv``): a turn
without a tool call is not the final answer but a message the environment answers, with a user
message (or a list of messages) that joins the conversation, or with ``None`` when the episode is
over (that turn is the answer). Such an environment needs no tools. An exception
a tool raises on a well-formed call is the environment's fault (``tool_error``); to hand the
policy an error that is its own (its code that raised, a number it got wrong), a tool *returns*
the error text: see :class:`rlvr.episodes.tools.PythonTool`.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rlvr.episodes.from_openenv import environment_class as openenv_class
from rlvr.episodes.from_verifiers import environment_class as verifiers_class
from rlvr.episodes.tools import toolbox
from rlvr.errors import ConfigError

_RESERVED = {"reset", "respond", "reward", "close"}
logger = logging.getLogger(__name__)


class Environment(Protocol):
    """What rlvr needs of an environment (tools are its other public methods)."""

    def reset(self, row: dict[str, Any]) -> str | None:
        """Start an episode from a data row; the text returned (if any) joins the prompt."""


def responds(env: object) -> bool:
    """Whether the environment (an instance or its class) answers turns without a call (``respond``)."""
    return callable(getattr(env, "respond", None))


def tools_of(env: object) -> dict[str, Callable[..., Any]]:
    """The environment's tools: its public bound methods, but ``reset``, ``respond``, ``reward`` and
    ``close``; or,
    when it has a ``tools`` mapping (``name -> callable``, an engine's own tool list), those."""
    listed = getattr(env, "tools", None)
    if isinstance(listed, Mapping):
        return dict(listed)
    return {
        name: fn
        for name, fn in inspect.getmembers(env, callable)
        if not name.startswith("_") and name not in _RESERVED and inspect.ismethod(fn)
    }


#: Schemas already described, by the function behind a tool and whether it is bound (the same
#: method of every fresh environment has one schema: parsing its docstring costs ~10 ms, and every
#: episode's guard asks for it).
_SCHEMAS: dict[tuple[Any, bool], dict[str, Any]] = {}


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI-style schema of one tool, from its type hints and docstring (a fresh copy).

    Raises:
        ConfigError: the tool cannot be described (no docstring, an argument without a type or
            without a line in ``Args:``), naming the tool and what to add.
    """

    from transformers.utils import get_json_schema

    inner = inspect.unwrap(getattr(fn, "__func__", fn))  # a wrapper (an async tool run blocking) describes its tool
    key = (getattr(inner, "__func__", inner), hasattr(fn, "__self__") or hasattr(inner, "__self__"))
    try:  # keyed by a function, never an instance: the cache keeps no environment alive
        schema = _SCHEMAS.get(key)
        cacheable = True
    except TypeError:  # a callable object that cannot be hashed: described every time
        schema, cacheable = None, False
    if schema is None:
        try:
            schema = get_json_schema(fn)
        except Exception as e:  # transformers' DocstringParsingException / TypeHintParsingException
            raise ConfigError(
                f"tool {getattr(fn, '__name__', fn)!r} cannot be described to the policy: {e} (give "
                "it type hints and a Google-style docstring with an Args: line per argument)"
            ) from None
        if cacheable:
            _SCHEMAS[key] = schema
    return copy.deepcopy(schema)


def shutdown(env_cls: type | None) -> None:
    """The run is over: let the environment class release what it holds for the whole run (an
    OpenEnv server rlvr started). Environments that hold nothing have no ``shutdown``."""
    stop = getattr(env_cls, "shutdown", None) if env_cls is not None else None
    if callable(stop):
        stop()


def release(env: object | None) -> None:
    """An episode is over: its environment lets go of what it holds for the episode (a server session,
    a sandbox) through its ``close``, when it has one. A close that fails is the environment's own
    affair (logged), never the run's: the episode has been judged already."""
    stop = getattr(env, "close", None) if env is not None else None
    if callable(stop):
        try:
            stop()
        except Exception as e:
            logger.warning("closing %s failed: %s: %s", type(env).__name__, type(e).__name__, e)


def load_environment(spec: str, server: str | None = None, timeout_s: float = 10.0) -> type:
    """The environment class ``spec`` names: ``module:Class``; ``verifiers:<module>[?argument=value]``
    (a ``verifiers`` tool environment, :mod:`rlvr.episodes.from_verifiers`); ``openenv:<url>``, or
    ``openenv`` with ``server`` (a command rlvr starts), an OpenEnv environment
    (:mod:`rlvr.episodes.from_openenv`). A ConfigError names what is missing."""
    if spec.startswith("verifiers:"):
        return verifiers_class(spec)
    if spec.partition("?")[0] == "openenv" or spec.startswith("openenv:"):
        return openenv_class(spec, server, timeout_s)
    if server is not None:
        raise ConfigError(f"env.server is for OpenEnv environments (env.environment: openenv), not {spec!r}")
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ConfigError(f"env.environment {spec!r}: expected 'module:Class'")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"env.environment {spec!r} cannot be loaded: {e}") from None
    if not callable(getattr(cls, "reset", None)):
        raise ConfigError(f"env.environment {spec!r} has no reset(row) method")
    return cls


def environment_class(
    tools: list[str], environment: str | None, server: str | None = None, timeout_s: float = 10.0
) -> type:
    """The environment class an ``env`` config section names: a tool-only one offering the built-in
    ``tools``, or the one ``environment`` names (:func:`load_environment`)."""
    if environment is not None:
        return load_environment(environment, server, timeout_s)

    return toolbox(tools)


def check_environment(cls: type) -> dict[str, dict[str, Any]]:
    """Build one instance of ``cls`` and describe its tools, before a run spends anything: a class
    that raises on construction, offers neither tools nor ``respond``, or has a tool the policy cannot be told how to
    call is a :class:`ConfigError` naming it. (The guard's ``tool_timeout_s`` needs no relation to a
    tool's own limit: it does not count the policy's program, :mod:`rlvr.episodes.clock`.)

    Returns:
        Each tool's schema, by name.
    """
    try:
        env = cls()
    except Exception as e:
        raise ConfigError(f"env: the environment {cls.__name__} cannot be built: {type(e).__name__}: {e}") from None
    tools = tools_of(env)
    if not tools and not responds(env):
        raise ConfigError(
            f"env: the environment {cls.__name__} offers no tools (public methods other than reset, respond, "
            "reward and close) and does not respond to the policy's turns (respond)"
        )
    return {name: tool_schema(fn) for name, fn in tools.items()}
