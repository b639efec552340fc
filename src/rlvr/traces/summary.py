"""What a sampling run found, per task: pass@1, pass@K, kept traces and the death causes."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskSummary:
    """One task's figures. ``pass_at_1``: the share of correct completions (the mean over prompts of
    each prompt's share); ``pass_at_k``: the share of prompts with at least one correct of its K."""

    prompts: int = 0
    completions: int = 0
    correct: int = 0
    solved_prompts: int = 0
    kept: int = 0
    causes: Counter[str] = field(default_factory=Counter)

    @property
    def pass_at_1(self) -> float:
        return self.correct / self.completions if self.completions else 0.0

    @property
    def pass_at_k(self) -> float:
        return self.solved_prompts / self.prompts if self.prompts else 0.0


def summarize(groups: Iterable[list[dict[str, Any]]]) -> dict[str, TaskSummary]:
    """Per task, from the rows of each prompt (every completion, kept or not)."""
    out: dict[str, TaskSummary] = defaultdict(TaskSummary)
    for rows in groups:
        if not rows:
            continue
        s = out[rows[0].get("task") or "math"]
        s.prompts += 1
        s.completions += len(rows)
        ok = sum((r.get("verdict") or {}).get("status") == "correct" for r in rows)
        s.correct += ok
        s.solved_prompts += ok > 0
        s.kept += sum(bool(r.get("kept")) for r in rows)
        s.causes.update(r.get("cause", "?") for r in rows)
    return dict(out)
