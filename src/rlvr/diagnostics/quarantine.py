"""Quarantine: prompts whose rollouts keep dying leave the training set (reviewable, readmittable).

A group *dies* when every one of its rollouts has a cause in ``dying`` (``invalid`` by default:
empty output, verifier timeouts or errors). A prompt is quarantined after ``consecutive`` dead
groups in a row, or ``total`` dead groups overall. Quarantined prompts are written, with their
last failures, to ``RUN_DIR/quarantine.jsonl``; the trainer never samples them again, and
``rlvr quarantine RUN_DIR --readmit ID`` takes one back after review (the file is the truth:
a resumed run reads it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.diagnostics.causes import Cause

FILE = "quarantine.jsonl"


@dataclass
class Quarantine:
    """Per-prompt death counters and the quarantined set."""

    consecutive: int = 3
    total: int = 5
    dying: frozenset[Cause] = frozenset({Cause.INVALID})
    streak: dict[str, int] = field(default_factory=dict)
    dead: dict[str, int] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __contains__(self, prompt_id: str) -> bool:
        return prompt_id in self.entries

    def observe(
        self, prompt_id: str, causes: Sequence[Cause], step: int, failures: Sequence[dict[str, Any]] = ()
    ) -> bool:
        """Record one group of ``prompt_id``; True when this quarantines it."""
        if prompt_id in self.entries:
            return False
        if causes and all(c in self.dying for c in causes):
            self.streak[prompt_id] = self.streak.get(prompt_id, 0) + 1
            self.dead[prompt_id] = self.dead.get(prompt_id, 0) + 1
        else:
            self.streak[prompt_id] = 0
            return False
        s, d = self.streak[prompt_id], self.dead[prompt_id]
        if s >= self.consecutive or d >= self.total:
            why = f"{s} dead groups in a row" if s >= self.consecutive else f"{d} dead groups in total"
            self.entries[prompt_id] = {
                "prompt_id": prompt_id,
                "step": step,
                "reason": why,
                "failures": list(failures)[:8],
            }
            return True
        return False

    def state(self) -> dict[str, Any]:
        return {"streak": dict(self.streak), "dead": dict(self.dead)}

    def load(self, state: dict[str, Any], run_dir: Path, upto_step: int) -> None:
        """Counters from a checkpoint; the quarantined set from the run's file, as of ``upto_step``
        (entries written after the checkpoint will be made again by the resumed run)."""
        self.streak, self.dead = dict(state.get("streak", {})), dict(state.get("dead", {}))
        self.entries = {e["prompt_id"]: e for e in read(run_dir) if e.get("step", 0) <= upto_step}

    def write(self, run_dir: Path) -> Path:
        """Rewrite ``RUN_DIR/quarantine.jsonl`` atomically."""
        return _write(run_dir, self.entries.values())


def _write(run_dir: Path, entries: Iterable[dict[str, Any]]) -> Path:
    path = Path(run_dir) / FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read(run_dir: str | Path) -> list[dict[str, Any]]:
    """The quarantined prompts of a run (empty when none)."""
    path = Path(run_dir) / FILE
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def readmit(run_dir: str | Path, prompt_ids: Iterable[str]) -> list[str]:
    """Take prompts back into training; returns the ids that were actually quarantined."""
    wanted = set(prompt_ids)
    entries = read(run_dir)
    back = [e["prompt_id"] for e in entries if e["prompt_id"] in wanted]
    _write(Path(run_dir), [e for e in entries if e["prompt_id"] not in wanted])
    return back
