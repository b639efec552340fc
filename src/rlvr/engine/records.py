"""What rlvr's engine writes of a step: its ``rollouts.jsonl`` lines and the metrics only it knows."""

from __future__ import annotations

from typing import Any

import torch

from rlvr.diagnostics.step import Decision, rollout_record
from rlvr.episodes import tool_metrics
from rlvr.sampling import RolloutBatch
from rlvr.sampling.rows import Replaced, ScoredRows


def eval_metrics(ev: dict[str, Any]) -> dict[str, float]:
    """A held-out evaluation as metrics: ``eval/accuracy``, ``eval/truncated``, ``eval/<status>``
    (and ``eval/tool_calls``, ``eval/tool_rate`` for episodes)."""
    return {
        "eval/accuracy": ev["accuracy"],
        "eval/truncated": ev["truncated"],
        **{f"eval/{k}": v for k, v in ev["statuses"].items()},
        **{f"eval/{k}": ev[k] for k in ("tool_calls", "tool_rate") if k in ev},
    }


def rollout_lines(rows: ScoredRows, d: Decision, replaced: list[Replaced]) -> list[dict[str, Any]]:
    """``rollouts.jsonl`` lines: every rollout of the step, then the originals the redraws replaced."""
    kept = [
        rollout_record(
            v,
            d.causes[i],
            rows.samples[i],
            advantage=float(d.advantages[i]),
            admitted=bool(d.admit[i]),
            episode=rows.episode(i),
        )
        for i, v in enumerate(rows.views)
    ]
    gone = [
        rollout_record(
            o.view,
            o.cause,
            rows.samples[o.row],
            advantage=0.0,
            admitted=False,
            replaced=True,
            attempt=o.attempt,
            episode=o.episode,
        )
        for o in replaced
    ]
    return kept + gone


def engine_metrics(
    batch: RolloutBatch, upd: dict[str, float], times: tuple[float, float, float, float], bf16_rollouts: bool
) -> dict[str, Any]:
    """What only this engine knows: the decoding masks, lengths, the update, timings
    (``times``: the step's start, end of generation, of scoring, of the update)."""
    t0, t_gen, t_score, t_end = times
    m: dict[str, Any] = {}
    if batch.decode_stats is not None:
        m.update(batch.decode_stats.metrics())
    if batch.episodes is not None:
        m.update(tool_metrics([ep for ep in batch.episodes if ep is not None]))
    lengths = batch.loss_mask.sum(1).float()  # the policy's own tokens
    m["rollout/bf16"] = float(bf16_rollouts)  # what rollout.dtype (auto) chose
    m["completions/mean_length"] = float(lengths.mean())
    m["completions/p90_length"] = float(torch.quantile(lengths, 0.9))
    m["completions/truncated_frac"] = float(batch.truncated.float().mean())
    m.update(upd)
    m["tokens_per_s"] = float(lengths.sum()) / (t_end - t0)
    m["time/step_s"], m["time/generate_s"] = t_end - t0, t_gen - t0
    m["time/score_s"], m["time/update_s"] = t_score - t_gen, t_end - t_score
    return m
