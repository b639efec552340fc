"""A ``verifiers`` environment's rubric as rlvr scores it (see :mod:`rlvr.data.verifiers_env`).

Each weighted reward function is called the way the rubric calls it (the arguments it names, async
ones awaited) but an exception is not turned into a 0: it is the environment failing to judge
(:class:`RewardFunctionError`; ``error`` on a single-turn row, ``tool_error`` on an episode).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlvr.data.verifiers_env import gold_fields, load, reward_functions, verifiers_module
from rlvr.types import EnvScore, Method, Status, Verdict


def _component(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", type(fn).__name__)
    return "format" if name.endswith("format_reward_func") else name


def run_async(coro_or_value: Any) -> Any:
    """An awaitable's value (run on a private event loop: the caller may be inside one), or the value."""
    if not inspect.isawaitable(coro_or_value):
        return coro_or_value

    async def wait() -> Any:
        return await coro_or_value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["v"] = asyncio.run(wait())
        except BaseException as e:
            box["e"] = e

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join()
    if "e" in box:
        raise box["e"]
    return box["v"]


class RewardFunctionError(RuntimeError):
    """A rubric's reward function raised: the environment failed to judge (its fault, not the policy's)."""


def new_state(env: Any, fields: Mapping[str, Any], prompt: Any) -> Any:
    """A fresh ``vf.State`` for one row, as the environment's own rollout starts one (no client)."""
    from verifiers.legacy.types import RolloutTiming
    from verifiers.legacy.utils.message_utils import normalize_messages

    vf = verifiers_module()
    info = fields.get("info") or {}
    task_input = {"prompt": prompt, "answer": fields.get("answer", ""), "info": info}
    task_input["example_id"] = fields.get("example_id", 0)
    if fields.get("task") is not None:
        task_input["task"] = fields["task"]
    state = vf.State(input=task_input)
    state["task"] = dict(task_input)
    state["prompt"] = normalize_messages(prompt, field_name="prompt") if isinstance(prompt, list | str) else prompt
    state.update(
        is_completed=False,
        is_truncated=False,
        tool_defs=list(getattr(env, "tool_defs", None) or []),
        trajectory=[],
        completion=None,
        reward=None,
        metrics=None,
        error=None,
        final_env_response=None,
        timing=RolloutTiming(),
        model="rlvr-policy",
        sampling_args=None,
    )
    return state


def score(env: Any, state: Any, completion: Sequence[Mapping[str, Any]]) -> EnvScore:
    """The rubric on one finished episode: each weighted function a component, their weighted sum the
    total; passed at the environment's ``pass_threshold``; ``answered`` when its parser finds an answer.

    Raises:
        RewardFunctionError: a reward function raised (named, with its exception).
    """
    from verifiers.legacy.utils.message_utils import normalize_messages

    state["completion"] = normalize_messages(list(completion), field_name="completion")
    state["is_completed"] = True
    rubric = env.rubric
    components: dict[str, float] = {}
    weights: dict[str, float] = {}
    for fn, weight in reward_functions(env):
        if weight == 0:
            continue  # a metric, not a reward
        objects = rubric.score_objects(state)
        sig = inspect.signature(fn)
        if not any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
            objects = {k: v for k, v in objects.items() if k in sig.parameters}
        name = _component(fn)
        try:
            value = float(run_async(fn(**objects)))
        except Exception as e:
            raise RewardFunctionError(f"reward function {name} raised {type(e).__name__}: {str(e)[:200]}") from None
        components[name] = components.get(name, 0.0) + value
        weights[name] = weight
    total = sum(weights[k] * v for k, v in components.items())
    parsed = env.parser.parse_answer(state["completion"])
    answered = parsed is not None and str(parsed).strip() != ""
    threshold = float(getattr(env, "pass_threshold", 0.5))
    return EnvScore(total, components, weights, passed=answered and total >= threshold, answered=answered)


def verify_verifiers(completion: str, gold: Any, timeout: float | None = None, **_: Any) -> Verdict:
    """The single-turn verifier of a verifiers environment's rows (their gold names the environment and
    the row): its rubric, as a verdict: ``no_answer`` when its parser finds no answer, ``correct`` at
    its pass threshold, ``error`` when a reward function raises; ``details`` hold the components."""
    try:
        fields = gold_fields(gold)
        env = load(fields["env"])
    except Exception as e:
        return Verdict(Status.BAD_GOLD, reason=f"not a verifiers row: {str(e)[:160]}", gold=str(gold)[:200])
    shown = str(fields.get("answer", ""))[:200]
    state = new_state(env, fields, fields.get("prompt") or [])
    try:
        s = score(env, state, [{"role": "assistant", "content": completion}])
    except RewardFunctionError as e:
        return Verdict(Status.ERROR, reason=str(e), gold=shown)
    details = {"reward": s.total, "components": s.components}
    if not s.answered:
        return Verdict(Status.NO_ANSWER, reason="the environment's parser finds no answer", gold=shown, details=details)
    extracted = str(env.parser.parse_answer(state["completion"]))[:200]
    status = Status.CORRECT if s.passed else Status.WRONG
    why = f"the rubric scores it {s.total:.3g} (pass at {getattr(env, 'pass_threshold', 0.5):g})"
    return Verdict(status, extracted, Method.STRUCTURAL, why, shown, details)
