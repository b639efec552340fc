"""TRL's rows as the failure step sees them: each reward function's value per row (through TRL's own
``_calculate_rewards``), the verdicts and components rlvr's rewards kept, rlvr's verifier for rows
no rlvr reward verified, the episode's cause where a row is one; and what the failure step can tell
apart on a given dataset and set of rewards."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import torch
from trl import GRPOTrainer

from rlvr.algo.advantages import Scale, scale_of
from rlvr.diagnostics.step import RolloutView
from rlvr.episodes.episode import env_scored
from rlvr.rewards.base import GOLD_COLUMNS, Reward, completion_text
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import Status, Verdict

#: Columns that let rlvr's verifier judge a row (its gold, or a code task's tests, or constraints).
VERIFIABLE = (*GOLD_COLUMNS, "tests", "test_spec", "constraints")


def local_views(trainer: Any, rows: list[dict[str, Any]], completion_ids: list[list[int]]) -> list[RolloutView]:
    """Each row as the failure-aware step sees it, scored by this trainer's reward functions
    (called as TRL calls them; rlvr's rewards cache their verdicts, so TRL's own call after
    this verifies nothing again)."""
    texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
    completions: list[Any] = texts
    if rows and isinstance(rows[0].get("prompt"), list):
        completions = [[{"role": "assistant", "content": t}] for t in texts]
    values = call_rewards(trainer, rows, completions, completion_ids)
    return row_views(trainer, rows, completion_ids, texts, completions, values)


def row_views(
    trainer: Any,
    rows: list[dict[str, Any]],
    completion_ids: list[list[int]],
    texts: list[str],
    completions: list[Any],
    values: list[list[float | None]],
    episodes: list[Any] | None = None,
) -> list[RolloutView]:
    """Views from each reward function's values per row; verdicts and components from what rlvr's
    rewards kept of their last call (``.last``), rlvr's verifier for rows none of them verified.
    ``episodes``: the rows are episodes (their cause, events, answer and finish join the view)."""

    verdicts, components, weights = kept_scores(trainer, rows, completions, values)
    stop = {*trainer.eos_token_ids, trainer._tokenizer.pad_token_id}
    version = trainer.state.global_step
    owned = trainer.fa.env_faults
    out = []
    for i, r in enumerate(rows):
        finish = "length" if not completion_ids[i] or completion_ids[i][-1] not in stop else "eos"
        vals = values[i]
        present = [(w, v) for w, v in zip(trainer.reward_weights.tolist(), vals) if v is not None]
        total = sum(w * v for w, v in present) if present else None  # TRL's nansum of what applied
        view = RolloutView(
            prompt_key(r),
            verdicts[i],
            total,
            components[i],
            finish,
            texts[i],
            version,
            weights,
            unscored=not present,
            values=tuple(vals),
        )
        ep = episodes[i] if episodes is not None else None
        if ep is not None:
            view = dataclasses.replace(
                view,
                finish=ep.finish,
                text=ep.answer,
                episode=ep.cause(owned),
                events=tuple(e.cause for e in ep.events),
            )
            if ep.reward is not None:
                view = env_scored(view, ep)
        out.append(view)
    return out


def call_rewards(
    trainer: Any, rows: list[dict[str, Any]], completions: list[Any], completion_ids: list[list[int]]
) -> list[list[float | None]]:
    """Every reward function's value for this process's rows (None where it declined), through
    TRL's own ``_calculate_rewards`` (reward models, async functions, environments, exactly as TRL
    calls them) with its logging hooks silenced: TRL's own call after this one logs. Every process
    calls it together (TRL gathers the values)."""
    prompts = [r.get("prompt") for r in rows]
    quiet = {"_log_completion_extra": lambda *a, **k: None, "_log_metric": lambda *a, **k: None}
    vars(trainer).update(quiet)  # shadow the two hooks on this instance for this one call
    try:
        got = GRPOTrainer._calculate_rewards(trainer, rows, prompts, completions, completion_ids)
    finally:
        for name in quiet:
            vars(trainer).pop(name, None)
    n, rank = len(rows), trainer.accelerator.process_index
    return values_of(got[rank * n : (rank + 1) * n])


def kept_scores(
    trainer: Any, rows: list[dict[str, Any]], completions: list[Any], values: list[list[float | None]]
) -> tuple[list[Verdict | None], list[dict[str, Any]], dict[str, float]]:
    n = len(rows)
    verdicts: list[Verdict | None] = [None] * n
    components: list[dict[str, Any]] = [{} for _ in range(n)]
    weights: dict[str, float] = {}
    for k, (func, name) in enumerate(zip(trainer.reward_funcs, trainer.reward_func_names)):
        scored = func.last if isinstance(func, Reward) and len(func.last) == n else None
        for i in range(n):
            if scored is not None and scored[i].verdict is not None and verdicts[i] is None:
                verdicts[i] = scored[i].verdict
            parts = scored[i].info.get("components") if scored is not None else None
            if parts:
                components[i].update(parts)
            else:
                components[i][name] = values[i][k]
        if scored and scored[0].info.get("weights"):
            weights = dict(scored[0].info["weights"])
    for i, r in enumerate(rows):  # no rlvr reward verified this row: rlvr's verifier does, given a gold
        if verdicts[i] is None and verifiable(r):
            verdicts[i] = verify_row(r, completions[i])
    return verdicts, components, weights


def prompt_key(row: dict[str, Any]) -> str:
    """The prompt a row stands for (quarantine counts per prompt): its ``prompt_id`` column when the
    dataset has one, else a digest of its prompt (of the whole row when it has none: environment-owned
    data), so no column is added to the user's rows.

    Examples:
        >>> prompt_key({"prompt_id": 7, "prompt": "x"}), prompt_key({"prompt": "2+2"}) == prompt_key({"prompt": "2+2"})
        ('7', True)
    """
    if row.get("prompt_id") is not None:
        return str(row["prompt_id"])
    what = row.get("prompt", row)
    return hashlib.sha1(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


def verifiable(row: dict[str, Any]) -> bool:
    """Whether rlvr's verifier can judge this row (it has a gold answer, tests or constraints)."""
    return any(row.get(c) is not None for c in VERIFIABLE)


def trl_scale(scale_rewards: Any) -> Scale:
    """TRL's ``scale_rewards`` (``group``, ``batch``, ``none``, or the older booleans) as rlvr's."""
    return scale_of(scale_rewards if isinstance(scale_rewards, bool) else str(scale_rewards))


def what_it_tells(dataset: Any, reward_funcs: Sequence[Any], episodes: Any) -> str:
    """What the failure step can tell apart on this trainer's data and rewards (logged once at start)."""
    columns = set(getattr(dataset, "column_names", None) or [])
    verifies = any(isinstance(f, Reward) and f.needs_verdict for f in reward_funcs)
    base = "truncated; invalid (a row no reward function could score)"
    if episodes:
        base += "; tool and environment faults (tool_error, env_timeout, env_crash) and the policy's own"
    if verifies or columns & set(VERIFIABLE):
        return f"verifying each completion (correct / wrong / no_answer / bad_gold), and {base}"
    return (
        f"no gold column and no rlvr reward: rows are scored by the reward functions alone (cause 'scored'); "
        f"it still tells {base}. Add a gold column ({' / '.join(GOLD_COLUMNS)}) to tell format deaths from "
        "verification deaths"
    )


def values_of(rewards_per_func: torch.Tensor) -> list[list[float | None]]:
    """TRL's ``[N, F]`` rewards (NaN: the function declined the row) as lists with None."""
    return [[None if v != v else float(v) for v in row] for row in rewards_per_func.tolist()]


def verify_row(row: dict[str, Any], completion: Any) -> Verdict:

    cols = {k: [v] for k, v in row.items() if k != "completion"}  # the prompt too: the question
    try:
        return row_verdicts([completion_text(completion)], cols)[0]
    except Exception as e:  # a row rlvr cannot read: invalid, said why, never a silent "wrong"
        return Verdict(Status.ERROR, reason=f"{type(e).__name__}: {e}"[:200])
