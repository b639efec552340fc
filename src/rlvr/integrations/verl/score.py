"""verl's custom reward function: ``compute_score(data_source, solution_str, ground_truth, extra_info)``.

Point verl at it in the trainer config (with verl's own reward managers; rlvr's ``rlvr`` reward
manager, :mod:`rlvr.integrations.verl.manager`, goes further)::

    reward:
      custom_reward_function:
        path: pkg://rlvr.integrations.verl.score     # or the file path of this module
        name: compute_score

It returns verl's dict form: ``score`` (the weighted total) plus every component,
``acc`` and the verdict ``status``, which verl's reward manager collects into
``reward_extra_info`` so the death causes reach its logs. ``extra_info`` may carry
``task`` (which verifier), ``prompt`` and ``language`` (for language consistency),
``steps`` (for the process reward) and ``weights`` (a per-row override). The maths verifier's
reading conventions come from the function's ``reward_kwargs`` (``conventions: {ratio_as_fraction:
false}``: :mod:`rlvr.verify.math.conventions`), as a config's ``rewards.conventions`` sets them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from rlvr.config import ConventionsConfig
from rlvr.rewards.combine import DEFAULT_WEIGHTS, Total
from rlvr.verify.math.conventions import Conventions, set_default

#: verl ``data_source`` values that name a task other than maths.
_TASK_BY_SOURCE: dict[str, str] = {}


@lru_cache(maxsize=64)
def _total(weights_key: tuple[tuple[str, Any], ...]) -> Total:
    return Total(dict(weights_key))


_in_use: list[tuple[tuple[str, Any], ...]] = [()]  # the conventions last set here (none: the defaults)


def _use_conventions(key: tuple[tuple[str, Any], ...]) -> None:
    """Make the conventions ``key`` names the process's default, when they are not already."""
    if key != _in_use[0]:
        # checked as a config's rewards.conventions is: a ValidationError names a convention that is none
        set_default(Conventions(**ConventionsConfig(**dict(key)).model_dump()))
        _in_use[0] = key


def _freeze(weights: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    def hashable(v: Any) -> Any:
        return tuple(tuple(p) for p in v) if isinstance(v, list) else v

    return tuple(sorted((k, hashable(v)) for k, v in weights.items()))


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Score one verl rollout: ``{"score": total, "acc": ..., "status": ..., <component>: ...}``.

    Examples:
        >>> compute_score("openai/gsm8k", "<think>2+2</think><answer>4</answer>", "4")["score"]
        1.1
    """
    info = dict(extra_info or {})
    _use_conventions(_freeze(kwargs.get("conventions") or {}))
    weights = info.get("weights") or kwargs.get("weights") or DEFAULT_WEIGHTS
    total = _total(_freeze(weights))
    columns: dict[str, Any] = {"gold": [ground_truth], "task": [info.get("task") or _TASK_BY_SOURCE.get(data_source)]}
    for key in ("prompt", "language", "steps"):
        if key in info:
            columns[key] = [info[key]]
    row = total.breakdown([solution_str], step=info.get("global_step"), **columns)[0]
    out: dict[str, Any] = {"score": row.total if row.total is not None else 0.0}
    for name, value in row.components.items():
        out[name] = value if value is not None else float("nan")
    status = row.verdict.status.value if row.verdict else "n/a"
    out["acc"] = bool(row.verdict.correct) if row.verdict else False
    out["status"] = status
    return out
