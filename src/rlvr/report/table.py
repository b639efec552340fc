"""The death-cause table of a run, from its ``rollouts.jsonl`` (``rlvr causes``).

Per task and over the run: the count and rate of each cause; the format-death and
verification-death rates in the first, middle and last third of the steps; the prompts
that die most; and, on request, a Markdown file of randomly sampled failed rollouts per
cause for a person to read.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.diagnostics.alarms import SHARE_THRESHOLD
from rlvr.diagnostics.causes import ENV_FAULTS, ROLLOUT, Cause

FAILED = (Cause.WRONG, Cause.NO_ANSWER, Cause.TRUNCATED, Cause.INVALID, Cause.STALE, Cause.OFF_POLICY, Cause.BAD_GOLD)


@dataclass
class CauseTable:
    """What ``rlvr causes`` prints."""

    rows: int = 0
    steps: int = 0
    by_task: dict[str, Counter[str]] = field(default_factory=dict)
    phases: list[tuple[str, int, int, float, float]] = field(default_factory=list)  # name, from, to, fmt, ver
    deadliest: list[tuple[str, int, int, str]] = field(default_factory=list)  # prompt id, deaths, seen, prompt
    torn_last_line: bool = False


def whose_fault(counts: dict[str, int], env_faults: frozenset[str] | None = None) -> dict[str, dict[str, int]]:
    """The episode causes among ``counts`` split by owner: ``{"environment": {...}, "policy": {...}}``
    (empty dicts for a run without episodes). ``env_faults``: the run's ``failure.env_faults``."""

    env = env_faults if env_faults is not None else frozenset(c.value for c in ENV_FAULTS)
    single = {c.value for c in ROLLOUT}
    out: dict[str, dict[str, int]] = {"environment": {}, "policy": {}}
    for cause, n in sorted(counts.items()):
        if cause not in single and n:
            out["environment" if cause in env else "policy"][cause] = n
    return out


def outages(metrics: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """The stretches of steps the environment was down (``env/down``), as ``(first, last)``.

    Examples:
        >>> outages([{"step": s, "env/down": float(s in (3, 4, 5, 9))} for s in range(1, 11)])
        [(3, 5), (9, 9)]
    """
    out: list[tuple[int, int]] = []
    for m in metrics:
        if not m.get("env/down"):
            continue
        if out and out[-1][1] == m["step"] - 1:
            out[-1] = (out[-1][0], m["step"])
        else:
            out.append((m["step"], m["step"]))
    return out


def alarm_lines(metrics: list[dict[str, Any]]) -> list[tuple[str, int, int | None, float]]:
    """``(alarm, steps on which it fired, first such step, peak value)`` from a run's metrics."""

    out = []
    for name, limit in (
        ("multiple_answers", SHARE_THRESHOLD),
        ("answer_in_reasoning", SHARE_THRESHOLD),
        ("format_without_accuracy", 0.5),
        ("code_tamper", 0.0),
        ("grader_talk", 0.0),
    ):
        vals = [(m["step"], m[f"alarms/{name}"]) for m in metrics if m.get(f"alarms/{name}") is not None]
        fired = [s for s, v in vals if v > limit]
        out.append((name, len(fired), fired[0] if fired else None, max((v for _, v in vals), default=0.0)))
    return out


def cause_table(rows: list[dict[str, Any]], top: int = 10) -> CauseTable:
    """Aggregate rollout records (see the module docstring)."""
    t = CauseTable(rows=len(rows))
    steps = sorted({r["step"] for r in rows})
    t.steps = len(steps)
    by_task: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by_task[r.get("task") or "?"][r["cause"]] += 1
        by_task["all"][r["cause"]] += 1
    t.by_task = dict(by_task)
    if steps:
        thirds = [
            steps[: max(1, len(steps) // 3)],
            steps[len(steps) // 3 : 2 * len(steps) // 3 or 1],
            steps[2 * len(steps) // 3 :],
        ]
        for name, part in zip(("start", "middle", "end"), thirds):
            if not part:
                continue
            sel = [r for r in rows if part[0] <= r["step"] <= part[-1]]
            n = max(len(sel), 1)
            t.phases.append(
                (
                    name,
                    part[0],
                    part[-1],
                    sum(r["cause"] == "no_answer" for r in sel) / n,
                    sum(r["cause"] == "wrong" for r in sel) / n,
                )
            )
    seen: Counter[str] = Counter(r["prompt_id"] for r in rows)
    deaths: Counter[str] = Counter(r["prompt_id"] for r in rows if r["cause"] != "correct")
    text = {r["prompt_id"]: r.get("prompt", "") for r in rows}
    t.deadliest = [(pid, d, seen[pid], text[pid]) for pid, d in deaths.most_common(top)]
    return t


def write_samples(rows: list[dict[str, Any]], path: str | Path, per_cause: int = 50, seed: int = 0) -> Path:
    """A Markdown review file: up to ``per_cause`` random failed rollouts for each cause."""
    rng = random.Random(seed)
    out = ["# Failed rollouts to review", ""]
    for cause in FAILED:
        pool = [r for r in rows if r["cause"] == cause.value]
        if not pool:
            continue
        picked = rng.sample(pool, min(per_cause, len(pool)))
        out += [f"## {cause.value} ({len(picked)} of {len(pool)})", ""]
        for r in picked:
            v = r.get("verdict") or {}
            out += [
                f"### step {r['step']}, prompt `{r['prompt_id']}`",
                "",
                f"- prompt: {r.get('prompt', '')!r}",
                f"- gold: `{r.get('gold', v.get('gold', ''))}`",
                f"- extracted: `{v.get('extracted', '')}`",
                f"- reason: {v.get('reason', '')}",
                f"- finish: {r.get('finish')}, total reward: {r.get('total')}",
                "",
                "```text",
                r.get("completion", ""),
                "```",
                "",
            ]
    p = Path(path)
    p.write_text("\n".join(out), encoding="utf-8")
    return p
