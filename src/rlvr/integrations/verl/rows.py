"""One verl trajectory scored the rlvr way: total, components, verdict, cause and row admission.

Engine-neutral and verl-free (no verl import), so it is tested in rlvr's main environment and called
by the reward manager (:mod:`.manager`) inside verl's reward workers. The ``reward_extra_info`` it
returns has the same keys on every row, which verl needs to batch them and which its own metrics
and ``algorithm.filter_groups`` (dynamic sampling on ``acc``) read: ``acc`` (0/1), ``total`` (the
weighted reward; None when nothing applied), ``status`` (the verdict), ``cause`` (rlvr's death
cause), ``admit`` (0/1: may the row enter the group baseline and the loss, by what one row shows),
``finish``, ``pred`` (the extracted answer: verl's maj@N metrics vote on it), ``reason``,
``completion`` (capped), ``episode`` / ``episode_cause`` / ``tool_calls`` (what ``rlvr_tool_agent``
recorded of a multi-turn episode: its JSON, its own cause; "", "", 0 for a single-turn row),
``env_reward`` / ``env_components`` (an environment that judges its episodes, a ``verifiers``
rubric: its reward and its components as JSON; None, "" otherwise), and every one of rlvr's reward
components (None where it did not apply: on every row of an environment that judges with components).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlvr.diagnostics.causes import Cause, cause_of
from rlvr.episodes.episode import ENVIRONMENT_FAULTS, Episode, env_scored, own_cause
from rlvr.rewards import Total
from rlvr.types import EnvScore, RewardBreakdown

#: Where ``rlvr_tool_agent`` leaves an episode's record in the agent loop's extra fields (verl hands
#: them to the reward manager as ``tool_extra_fields``).
EPISODE_KEY = "rlvr_episode"
#: Causes that keep a row out of its group's baseline and out of the loss whatever the options.
NEVER_ADMITTED = frozenset({Cause.INVALID, Cause.BAD_GOLD, Cause.STALE, Cause.OFF_POLICY})
#: verl ``data_source`` values that name a task other than maths (others: maths).
TASK_BY_SOURCE: dict[str, str] = {"mbpp": "code", "humaneval": "code", "openai_humaneval": "code", "ifeval": "ifeval"}


@dataclass(frozen=True)
class ScoredRow:
    """A trajectory's reward (what verl puts at the last response token) and its extra info."""

    score: float
    extra: dict[str, Any]


def episode_cause(record: Mapping[str, Any] | None, env_faults: frozenset[Cause] = ENVIRONMENT_FAULTS) -> Cause | None:
    """An episode record's own cause (``rlvr_tool_agent``'s ``rlvr_episode``): an environment fault
    first, else the policy fault that ended it (turn limit, context overflow); None: the answer decides."""
    return own_cause([Cause(e["cause"]) for e in (record or {}).get("events", [])], env_faults)


def score_row(
    total: Total,
    text: str,
    gold: Any,
    *,
    finish: str = "eos",
    data_source: str | None = None,
    extra_info: Mapping[str, Any] | None = None,
    step: int | None = None,
    exclude_truncated: bool = False,
    completion_chars: int = 2000,
    episode: Mapping[str, Any] | None = None,
) -> ScoredRow:
    """Score one completion against its gold and say what killed it, if anything.

    Args:
        total: the weighted rewards (rlvr's :class:`Total`).
        finish: ``eos`` or ``length`` (the response ran to its length limit without ending).
        data_source: verl's ``data_source`` (names the verifier where :data:`TASK_BY_SOURCE` knows it;
            ``extra_info["task"]`` wins).
        extra_info: the dataset row's ``extra_info``; ``task``, ``prompt``, ``language`` and
            ``steps`` reach the rewards as columns.
        step: the training step (reward weight schedules).
        exclude_truncated: truncated rows are not admitted either.
        episode: what ``rlvr_tool_agent`` recorded (:mod:`rlvr.integrations.verl.agent`): its final
            answer is what is judged (never a tool's output), its own cause wins; when its
            environment judged (``judge: environment``, :func:`rlvr.integrations.verl.environments.judge`)
            the environment's score is the row's, as on rlvr's engine (:func:`rlvr.episodes.episode.env_scored`).
    """
    info = dict(extra_info or {})
    task = info.get("task") or TASK_BY_SOURCE.get(str(data_source or "").lower())
    columns: dict[str, Any] = {"gold": [gold], "task": [task]}
    for key in ("prompt", "language", "steps"):
        if key in info:
            columns[key] = [info[key]]
    if episode is not None:  # the final turn only: a number a tool printed is not the policy's answer
        text = str(episode.get("answer", ""))
    record: Mapping[str, Any] = episode or {}
    judged = record.get("judge") == "environment"
    env_parts: dict[str, float] = {}
    if judged and "score" in record:  # the environment's rubric judged it: its total, its verdict
        none = RewardBreakdown(None, dict.fromkeys(total.rewards), total.weights_at(step or 0))
        row = env_scored(none, Episode(prompt="", answer=text, reward=0.0, score=EnvScore(**record["score"])))
        env_parts = dict(row.components)
        row = dataclasses.replace(row, components=dict(none.components))  # the same keys on every row
    elif judged and "reward" not in record:  # the environment failed before it could judge
        row = RewardBreakdown(None, dict.fromkeys(total.rewards), total.weights_at(step or 0))
    else:
        row = total.breakdown([text], step=step, **columns)[0]
        if judged:  # the environment's number is the accuracy
            row = env_scored(row, Episode(prompt="", answer=text, reward=float(record["reward"])))
    v = row.verdict
    cause = cause_of(v.status, finish, text=text) if v is not None and row.total is not None else Cause.INVALID
    own = episode_cause(episode) if episode is not None else None
    cause = own or cause
    admitted = (
        cause not in NEVER_ADMITTED
        and cause not in ENVIRONMENT_FAULTS
        and not (exclude_truncated and cause is Cause.TRUNCATED)
    )
    extra: dict[str, Any] = {
        "acc": 1.0 if v is not None and v.correct else 0.0,
        "total": row.total,
        "status": v.status.value if v is not None else "none",
        "cause": cause.value,
        "admit": 1.0 if admitted else 0.0,
        "finish": finish,
        "pred": (v.extracted or "") if v is not None else "",
        "reason": (v.reason or "")[:300] if v is not None else "no reward applied",
        "completion": text[:completion_chars],
        "episode": json.dumps(dict(episode)) if episode is not None else "",
        "episode_cause": own.value if own is not None else "",
        "tool_calls": float(episode.get("tool_calls", 0)) if episode is not None else 0.0,
        "env_reward": record["score"]["total"] if "score" in record else record.get("reward") if judged else None,
        "env_components": json.dumps(env_parts) if env_parts else "",
    }
    extra.update(row.components)
    return ScoredRow(float(row.total) if row.total is not None else 0.0, extra)


def finish_of(response_ids: Any, valid_length: int, eos_ids: set[int]) -> str:
    """``length`` when the response filled its whole width without an end-of-sequence token."""
    n = int(valid_length)
    width = int(response_ids.shape[-1])
    if n == 0:
        return "eos"  # empty: the verdict makes it invalid, not truncated
    return "length" if n >= width and int(response_ids[n - 1]) not in eos_ids else "eos"
