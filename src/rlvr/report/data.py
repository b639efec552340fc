"""What a report shows, read from a run folder: every plot's series and every table's rows.

Pure functions over the run's files (``metrics.jsonl``, ``rollouts.jsonl``,
``quarantine.jsonl``, ``config.yaml``), so each can be tested without drawing.
A run that is still going or was killed is fine: a cut-off last line is skipped
and said (:attr:`RunData.notes`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.data.jsonl import read_log
from rlvr.diagnostics.causes import Cause, shown
from rlvr.report.table import FAILED, CauseTable, alarm_lines, cause_table, outages

Series = tuple[list[int], list[float]]


@dataclass
class RunData:
    """One run, read once.

    Attributes:
        name: the label in legends (the folder name).
        path: the run folder.
        steps: the per-step metric lines (training steps, in order, one per step).
        evals: held-out evaluations ``(step, accuracy)``.
        rollouts: the rollout records (empty when the run kept none).
        quarantine: quarantined prompts.
        notes: what the reader should know (cut-off lines, missing files).
    """

    name: str
    path: Path
    steps: list[dict[str, Any]] = field(default_factory=list)
    evals: list[tuple[int, float]] = field(default_factory=list)
    rollouts: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def load_run(path: str | Path) -> RunData:
    """Read a run folder (see the module docstring).

    Raises:
        FileNotFoundError: the folder has no ``metrics.jsonl`` (not a run).
    """
    path = Path(path)
    metrics_file = path / "metrics.jsonl"
    if not metrics_file.exists():
        raise FileNotFoundError(f"{path}: no metrics.jsonl (not a training run folder)")
    run = RunData(name=path.resolve().name, path=path)
    lines, torn = read_log(metrics_file)
    if torn:
        run.notes.append("metrics.jsonl: the last line was cut off (the run is still going, or was killed); skipped")
    by_step: dict[int, dict[str, Any]] = {}
    for m in lines:
        if "step" not in m:
            continue
        if "eval/accuracy" in m:
            run.evals.append((int(m["step"]), float(m["eval/accuracy"])))
        if "reward/total/mean" in m or "loss/policy" in m:
            by_step[int(m["step"])] = m  # a resumed run rewrites steps: the last line for a step wins
    run.steps = [by_step[s] for s in sorted(by_step)]
    run.evals = sorted(dict(run.evals).items())
    rollouts_file = path / "rollouts.jsonl"
    if rollouts_file.exists():
        run.rollouts, torn = read_log(rollouts_file)
        if torn:
            run.notes.append("rollouts.jsonl: the last line was cut off; skipped")
    else:
        run.notes.append("no rollouts.jsonl (run.log_rollouts was off): no cause table or failed samples")
    q = path / "quarantine.jsonl"
    if q.exists():
        run.quarantine, _ = read_log(q)
    if not run.steps:
        run.notes.append("no training step has finished yet")
    return run


def series(run: RunData, key: str) -> Series:
    """``(steps, values)`` of one metric, skipping steps where it is missing or null."""
    pts = [(m["step"], float(m[key])) for m in run.steps if m.get(key) is not None]
    return [s for s, _ in pts], [v for _, v in pts]


def reward_components(run: RunData) -> dict[str, tuple[list[int], list[float], list[float], list[float]]]:
    """Per reward component: ``(steps, mean, band low, band high)``; ``total`` first.

    The band never shows values the reward cannot take: for a 0/1 reward (accuracy, format) it
    is the Wilson interval of the step's proportion (one standard error, like +-1 std); for any
    other it is +-1 std clipped to the values the step actually had (older runs, without them,
    to [0, 1] for 0/1-looking rewards).
    """
    names = sorted(
        {k.split("/")[1] for m in run.steps for k in m if k.startswith("reward/") and k.endswith("/mean")},
        key=lambda n: (n != "total", n),
    )
    out = {}
    for name in names:
        steps, means, lows, highs = [], [], [], []
        for m in run.steps:
            if m.get(f"reward/{name}/mean") is None:
                continue
            mean, std = float(m[f"reward/{name}/mean"]), float(m.get(f"reward/{name}/std") or 0.0)
            lo, hi = _band(m, name, mean, std)
            steps.append(m["step"])
            means.append(mean)
            lows.append(lo)
            highs.append(hi)
        out[name] = (steps, means, lows, highs)
    return out


def _band(m: dict[str, Any], name: str, mean: float, std: float) -> tuple[float, float]:
    key = f"reward/{name}"
    n = m.get(f"{key}/n")
    if m.get(f"{key}/binary") and n:
        return wilson(mean, int(n))
    lo, hi = m.get(f"{key}/min"), m.get(f"{key}/max")
    if lo is None or hi is None:  # a run from before min/max were logged
        lo, hi = (0.0, 1.0) if 0.0 <= mean <= 1.0 and std <= 0.5 + 1e-9 else (-math.inf, math.inf)
    return max(mean - std, float(lo)), min(mean + std, float(hi))


def wilson(p: float, n: int, z: float = 1.0) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` over ``n`` trials (always inside [0, 1]).

    Examples:
        >>> [round(x, 3) for x in wilson(0.0, 64)]
        [0.0, 0.015]
    """
    if n <= 0:
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


#: The causes stacked in the deaths plot, bottom to top.
DEATHS = (
    ("no_answer", "format death"),
    ("wrong", "verification death"),
    ("truncated", "truncated"),
    ("invalid", "invalid"),
)


def death_rates(run: RunData) -> tuple[list[int], dict[str, list[float]]]:
    """Per step, the share of rollouts of each death cause (:data:`DEATHS`)."""
    steps = [m["step"] for m in run.steps]
    return steps, {c: [float(m.get(f"causes/{c}", 0.0) or 0.0) for m in run.steps] for c, _ in DEATHS}


def cold_start_switches(run: RunData) -> list[int]:
    """Steps where the cold start ended (format deaths rejoin the advantage from then on)."""
    return [m["step"] for m in run.steps if m.get("failure/cold_start_ended")]


def env_outages(run: RunData) -> list[tuple[int, int]]:
    """The stretches of steps the environment was down (``env/down``)."""

    return outages(run.steps)


def causes_by_task(run: RunData) -> CauseTable | None:
    """The death-cause table (``None`` without rollouts)."""
    return cause_table(run.rollouts) if run.rollouts else None


def alarms(run: RunData) -> list[tuple[str, int, int | None, float]]:
    """Reward-hacking alarms: ``(name, steps fired, first step, peak)``."""
    return alarm_lines(run.steps)


def highlight(completion: str, extracted: str) -> tuple[str, str, str]:
    """``(before, answer, after)``: the completion split around the last occurrence of the extracted answer."""
    if extracted:
        i = completion.rfind(extracted)
        if i >= 0:
            return completion[:i], extracted, completion[i + len(extracted) :]
    return completion, "", ""


def failed_samples(run: RunData, per_cause: int = 8, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Up to ``per_cause`` random failed rollouts per cause, ready to show (answer highlighted; an
    episode's turns and events with it)."""
    rng = random.Random(seed)
    out: dict[str, list[dict[str, Any]]] = {}
    met = {str(r["cause"]) for r in run.rollouts if r.get("cause")}
    episode_causes = [c for c in shown(met) if c not in FAILED and c is not Cause.CORRECT]
    for cause in (*FAILED, *episode_causes):
        pool = [r for r in run.rollouts if r.get("cause") == cause.value and not r.get("replaced")]
        if not pool:
            continue
        picked = sorted(rng.sample(pool, min(per_cause, len(pool))), key=lambda r: r.get("step", 0))
        rows = []
        for r in picked:
            v = r.get("verdict") or {}
            before, answer, after = highlight(str(r.get("completion", "")), str(v.get("extracted") or ""))
            rows.append(
                {
                    "step": r.get("step"),
                    "prompt_id": r.get("prompt_id"),
                    "task": r.get("task"),
                    "prompt": r.get("prompt", ""),
                    "gold": r.get("gold", v.get("gold", "")),
                    "status": v.get("status", ""),
                    "reason": v.get("reason", ""),
                    "finish": r.get("finish"),
                    "total": r.get("total"),
                    "before": before,
                    "answer": answer,
                    "after": after,
                    "turns": (r.get("episode") or {}).get("turns") or [],
                    "events": (r.get("episode") or {}).get("events") or [],
                }
            )
        out[cause.value] = rows
    return out
