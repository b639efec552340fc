"""The turn loop of one episode, engine-neutral: the policy is a callable, the environment a fresh instance.

The loop alternates: the policy generates until it writes a tool call or a final answer; a call
goes through the :class:`~rlvr.episodes.guard.Guard` and its result is appended as a ``tool``
message; at most ``max_turns`` assistant turns and ``max_tokens`` generated tokens for the whole
episode. Each way it can end is recorded where it happens:

* a final answer (a turn without a call): ``finish`` is that turn's (``eos``, or ``length`` when
  the turn ran out of the episode's tokens: then the answer is judged, and ``truncated``); with an
  environment that responds (``respond``), a turn without a call is answered by its messages and
  the episode goes on until it says the episode is over (that turn is the answer);
* an environment fault (a call's event, or ``reset`` raising: ``env_crash``): ``fault``, the
  episode stops there, to be redrawn;
* ``max_turns`` turns without an answer: ``turn_limit``; no tokens left after a tool result:
  ``context_overflow`` (the policy's, in the gradient).

An engine supplies ``policy(messages, max_new_tokens) -> (text, finish, tokens)``; rlvr's own
engine keeps its KV cache across the turns, and TRL's and verl's loops have their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rlvr.diagnostics.causes import Cause
from rlvr.episodes.env import responds
from rlvr.episodes.episode import ENVIRONMENT_FAULTS, Episode
from rlvr.episodes.guard import Faults, Guard, find_call

#: ``policy(messages, max_new_tokens) -> (text, finish, generated tokens)``.
Policy = Callable[[Sequence[dict[str, str]], int], tuple[str, str, int]]


def run_episode(
    policy: Policy,
    make_env: Callable[[], object],
    row: dict[str, Any],
    prompt: str,
    *,
    max_turns: int = 4,
    max_tokens: int = 512,
    key: str = "",
    timeout_s: float = 10.0,
    max_result_chars: int = 2000,
    faults: Faults | None = None,
    env_faults: Iterable[Cause] = ENVIRONMENT_FAULTS,
) -> Episode:
    """Run one episode of ``row`` with a fresh environment from ``make_env`` (see the module docstring).

    ``key`` names the episode for the seeded fault injection (the prompt id and the draw).
    """
    if max_turns < 1:
        raise ValueError("env.max_turns must be at least 1")
    owned = frozenset(env_faults)
    ep = Episode(prompt=prompt)
    try:
        env = make_env()
        guard = Guard(env, key=key, timeout_s=timeout_s, max_result_chars=max_result_chars, faults=faults)
        observation = env.reset(row)  # type: ignore[attr-defined]
    except Exception as e:  # the session could not be created: the environment's fault
        ep.stopped(Cause.ENV_CRASH, 0, f"the environment could not start: {type(e).__name__}: {e}")
        return ep
    if observation:
        ep.prompt = f"{prompt}\n\n{observation}"
    messages = [{"role": "user", "content": ep.prompt}]
    for turn in range(max_turns):
        budget = max_tokens - ep.tokens
        if budget <= 0:
            ep.stopped(Cause.CONTEXT_OVERFLOW, turn, f"the episode's {max_tokens} tokens are spent")
            return ep
        text, finish, n = policy(messages, budget)
        markup = find_call(text) if guard.tools else None  # an environment without tools takes no calls
        if markup is None and (finish == "length" or not responds(env)):  # a final answer
            ep.answered(text, finish, n)
            return ep
        out = guard.call(markup, turn) if markup is not None else guard.respond(text, turn)
        if out.responded and out.event is None and out.reply is None:  # the environment says it is over
            ep.replies += 1
            ep.answered(text, finish, n)
            return ep
        said = out.reply if out.responded else [{"role": "tool", "content": out.result}]
        messages += [{"role": "assistant", "content": text}, *(said or ())]
        if out.record(ep, text, n, owned):
            return ep
    ep.stopped(Cause.TURN_LIMIT, max_turns - 1, f"{max_turns} turns without a final answer")
    return ep
