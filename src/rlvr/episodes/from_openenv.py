"""OpenEnv environments as rlvr episode environments (``pip install 'rlvr[envs]'``).

An OpenEnv environment is a server (``reset`` / ``step`` with a typed action and observation),
reached over a WebSocket session per episode. ``env.environment: openenv:<url>`` names one
already running on this machine; ``env.environment: openenv`` with ``env.server: <command>`` has
rlvr start it (``{port}`` in the command is a free port), wait for its ``/health``, and stop it
when the run ends. What maps to what:

* ``reset`` -> the episode's start: a fresh session, reset with the row's ``id`` as its episode id
  (and the row's ``openenv_reset`` mapping, if any, as reset's own arguments); the observation
  joins the prompt;
* ``step`` -> the policy's one tool, ``step`` (or the name ``?tool=<name>`` gives it), whose
  arguments are the action's fields (described from the server's ``/schema``, checked against it
  before the call); the observation is the tool's result, as the server wrote it; a call after
  ``done`` is answered "the episode is over; give your final answer";
* the rewards ``step`` returned, summed -> the episode's score (component ``env_reward``; the
  episode passes when it is above 0).

Whose fault: a server that cannot be reached, a session it refuses (capacity) or a connection that
drops is ``env_crash`` (an outage of every call is waited out like rlvr's own tools' outages); an
error the server raises while stepping is ``tool_error``; a step past the guard's limit is
``env_timeout``; an action the server finds invalid is the policy's (the error is its result).
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import functools
import inspect
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from typing import Any
from urllib.parse import parse_qsl

from rlvr.episodes.tools import EnvCrash
from rlvr.errors import ConfigError
from rlvr.types import EnvScore

SCHEME = "openenv"
#: Seconds a server rlvr started has to answer ``/health``.
START_S = 60.0
#: Seconds an episode's session has to close.
CLOSE_S = 2.0
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list}
#: Server error codes that mean the session itself failed (the environment's crash, not a step's error).
_SESSION_CODES = ("CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    import requests

    try:
        return requests.get(f"{url}/health", timeout=2).status_code == 200
    except requests.RequestException:
        return False


#: The servers rlvr started, by URL: how to stop each (:func:`stop_server`).
_STARTED: dict[str, Any] = {}


def _die_with_parent() -> None:
    """In the server's process, before it runs: ask Linux to end it when the process that started it
    dies (a run killed by a signal runs no exit handler; its server must not outlive it)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the exit handler and stop_server remain
        pass


def stop_server(url: str) -> None:
    """Stop the server rlvr started at ``url`` (its whole process group); nothing when there is none."""
    stop = _STARTED.pop(url, None)
    if stop is not None:
        stop()


def start_server(command: str, *, wait_s: float = START_S) -> str:
    """Start ``command`` (``{port}`` replaced by a free port) in a session of its own, wait until its
    ``/health`` answers, and stop it (the whole process group) when the run ends (:func:`stop_server`),
    when this process exits, or when it is killed (the server is told to end with it). Returns its URL.

    Raises:
        ConfigError: the command exits or does not answer within ``wait_s`` (with its output's tail).
    """
    port = _free_port()
    argv = shlex.split(command.replace("{port}", str(port)))
    url = f"http://127.0.0.1:{port}"
    try:
        # the death signal is tied to the thread that starts the server: only the main thread lives as
        # long as the process (a worker thread's end would take the server with it)
        main = threading.current_thread() is threading.main_thread()
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
            preexec_fn=_die_with_parent if main and sys.platform == "linux" else None,
        )
    except OSError as e:
        raise ConfigError(f"env.server {command!r} cannot start: {e}") from None

    def stop() -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    atexit.register(stop)
    _STARTED[url] = stop
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = (proc.stdout.read() if proc.stdout else "")[-800:]
            raise ConfigError(f"env.server {command!r} exited with status {proc.returncode} before serving: {out}")
        if _healthy(url):
            if proc.stdout is not None:  # nobody reads the server's output from here on: let it go nowhere
                proc.stdout.close()
            return url
        time.sleep(0.2)
    stop()
    raise ConfigError(f"env.server {command!r} did not answer {url}/health within {wait_s:g}s")


def _schema(url: str) -> dict[str, Any]:
    import requests

    try:
        got = requests.get(f"{url}/schema", timeout=10)
        got.raise_for_status()
        return dict(got.json()["action"])
    except (requests.RequestException, ValueError, KeyError) as e:
        raise ConfigError(f"env.environment openenv:{url}: no action schema at {url}/schema: {e}") from None


def _step_method(action: dict[str, Any], name: str = "step") -> Any:
    """The tool ``name(self, **fields)`` (``step`` unless the spec names it) described from the
    action's JSON schema: a parameter, a type and a docstring line per field (``metadata``, OpenEnv's
    own bookkeeping, left out)."""
    props = {k: v for k, v in (action.get("properties") or {}).items() if k != "metadata"}
    required = set(action.get("required") or ())
    params, hints, lines = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)], {}, []
    for field, p in props.items():
        py = _JSON_TYPES.get(p.get("type", ""), dict)
        kind = inspect.Parameter.KEYWORD_ONLY
        if field in required:
            params.append(inspect.Parameter(field, kind, annotation=py))
            hints[field] = py
        else:
            params.append(inspect.Parameter(field, kind, default=None, annotation=py | None))
            hints[field] = py | None
        desc = (p.get("description") or p.get("title") or field).replace("\n", " ")
        lines.append(f"    {field}: {desc}")

    def step(self: Any, **fields: Any) -> str:
        return str(self._step({k: v for k, v in fields.items() if v is not None}))

    title = action.get("title") or "action"
    doc = (action.get("description") or f"Take one {title} in the environment.").strip().splitlines()[0]
    step.__name__ = step.__qualname__ = name
    step.__doc__ = f"{doc}\n\nArgs:\n" + "\n".join(lines) if lines else doc
    step.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    step.__annotations__ = {**hints, "return": str}
    return step


def _text(observation: Any) -> str:
    """An observation as the policy reads it: its one text field, else its fields as JSON ("" when it
    has nothing to show: a reset that only starts the episode adds nothing to the prompt)."""
    if not isinstance(observation, dict):
        return str(observation)
    shown = {k: v for k, v in observation.items() if k not in ("done", "reward", "metadata") and v not in (None, "")}
    if not shown:
        return ""
    if len(shown) == 1 and isinstance(next(iter(shown.values())), str):
        return str(next(iter(shown.values())))
    return json.dumps(shown, default=str, ensure_ascii=False)


def _server_error(e: Exception) -> Exception | str:
    """What a client exception is: an :class:`EnvCrash` (the session failed), the policy's error
    text (an action the server finds invalid), or the exception itself (a step's ``tool_error``)."""
    text = str(e)
    if isinstance(e, ConnectionError | OSError) or type(e).__name__.startswith("ConnectionClosed"):
        return EnvCrash(f"the OpenEnv session failed: {type(e).__name__}: {text[:200]}")
    if any(code in text for code in _SESSION_CODES):
        return EnvCrash(f"the OpenEnv server refused the session: {text[:200]}")
    if "VALIDATION_ERROR" in text or "INVALID_JSON" in text:
        return f"error: the environment rejected the action: {text[:300]}"
    return e


def _close(client: Any) -> None:
    """Close a sync OpenEnv client within a few seconds, whatever the server does: its session is
    told to close, its event loop stopped. Never from that loop's own thread (it would wait on itself)."""
    if threading.current_thread() is getattr(client, "_loop_thread", None):
        return
    loop = getattr(client, "_loop", None)
    if loop is not None and loop.is_running():
        try:
            asyncio.run_coroutine_threadsafe(client.async_client.disconnect(), loop).result(timeout=CLOSE_S)
        except Exception:  # a session that is already gone, or a server that does not answer
            pass
    try:
        client._stop_loop()
    except Exception:
        pass


def _close_later(client: Any) -> None:
    """Close a sync OpenEnv client without waiting (from a finaliser: the collector may run on the
    client's own loop thread, or while the interpreter shuts down, when no thread can start): its
    session is told to close on its own loop, which then stops."""
    loop = getattr(client, "_loop", None)
    if sys.is_finalizing() or loop is None or not loop.is_running():
        return
    try:
        done = asyncio.run_coroutine_threadsafe(client.async_client.disconnect(), loop)
        done.add_done_callback(lambda _: loop.call_soon_threadsafe(loop.stop))
    except RuntimeError:  # the loop closed meanwhile
        pass


def environment_class(spec: str, server: str | None = None, timeout_s: float = 10.0) -> type:
    """An rlvr environment class for the OpenEnv environment ``spec`` names (``openenv:<url>``, or
    ``openenv`` with ``server``, a command rlvr starts; ``?tool=<name>`` names its step tool), one
    WebSocket session per episode.

    Raises:
        ConfigError: no URL and no server, a server that does not start, or no action schema.
    """
    head, _, query = spec.partition("?")
    options = dict(parse_qsl(query))
    unknown = sorted(set(options) - {"tool"})
    if unknown:
        raise ConfigError(f"env.environment {spec!r}: unknown option(s) {', '.join(unknown)} (known: tool)")
    tool = options.get("tool", "step")
    if not tool.isidentifier() or tool.startswith("_") or tool in ("reset", "reward", "close"):
        raise ConfigError(f"env.environment {spec!r}: tool={tool!r} cannot name a tool (a Python identifier)")
    url = head.removeprefix(SCHEME).removeprefix(":").rstrip("/")
    if server is not None:
        url = start_server(server)
    elif not url:
        raise ConfigError("env.environment: openenv needs a URL (openenv:http://127.0.0.1:8000) or env.server")
    try:
        from openenv.core import GenericEnvClient
    except ImportError as e:
        raise ConfigError(f"OpenEnv environments need openenv-core: pip install 'rlvr[envs]' ({e})") from None
    action = _schema(url)

    class OpenEnvEpisode:
        """One episode of an OpenEnv environment: a session of its own."""

        base_url = url
        shutdown = staticmethod(functools.partial(stop_server, url))  # the run is over: its server too

        def __init__(self) -> None:
            self.client: Any = None
            self.rewards: list[float] = []
            self.done = False

        def reset(self, row: dict[str, Any]) -> str | None:
            self.close()
            rid = str(row.get("id", row.get("prompt_id", "")))
            kwargs = dict(row.get("openenv_reset") or {})
            kwargs.setdefault("seed", zlib.crc32(rid.encode()) % 2**31)
            self.client = GenericEnvClient(
                base_url=url, connect_timeout_s=timeout_s, message_timeout_s=timeout_s + 5
            ).sync()
            try:
                self.client.connect()
                result = self.client.reset(episode_id=rid[:255] or None, **kwargs)
            except Exception as e:
                raise EnvCrash(f"the OpenEnv environment at {url} could not reset: {type(e).__name__}: {e}") from None
            self.rewards, self.done = [], bool(result.done)
            return _text(result.observation) or None

        def _step(self, fields: dict[str, Any]) -> str:
            if self.client is None or self.done:
                return "error: the episode is over; give your final answer"
            try:
                result = self.client.step(fields)
            except Exception as e:
                got = _server_error(e)
                if isinstance(got, str):
                    return got
                raise got from None
            self.rewards.append(float(result.reward or 0.0))
            self.done = bool(result.done)
            return _text(result.observation)  # as written: a note would cost the policy's budget

        def reward(self, answer: str, row: dict[str, Any]) -> EnvScore:
            total = float(sum(self.rewards))
            self.close()
            answered = bool(answer.strip())
            return EnvScore(total, {"env_reward": total}, {"env_reward": 1.0}, passed=total > 0, answered=answered)

        def close(self) -> None:
            """End the session (bounded: a dead server never holds the run)."""
            client, self.client = self.client, None
            if client is not None:
                _close(client)

        def __del__(self) -> None:
            client, self.client = getattr(self, "client", None), None
            if client is not None:
                _close_later(client)

    setattr(OpenEnvEpisode, tool, _step_method(action, tool))
    return OpenEnvEpisode
