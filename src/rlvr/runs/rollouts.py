"""``rollouts.jsonl``: one line per rollout, written by every engine, read by ``rlvr causes`` and ``rlvr report``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.data.jsonl import read_log
from rlvr.runs.metrics import open_step_log


class RolloutLog:
    """``rollouts.jsonl``: one line per rollout (prompt id, completion, finish, policy version, cause,
    verdict, every reward component, total, advantage), the material of death-cause reports."""

    def __init__(self, run_dir: Path, resume_step: int | None = None) -> None:
        self.path = run_dir / "rollouts.jsonl"
        self._f = open_step_log(self.path, resume_step)

    def log(self, step: int, records: list[dict[str, Any]]) -> None:
        self._f.write("".join(json.dumps({"step": step, **r}, ensure_ascii=False) + "\n" for r in records))
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def read_rollouts(run_dir: str | Path) -> tuple[list[dict[str, Any]], bool]:
    """The rollout records of a run, and whether a torn last line (a killed writer) was skipped."""
    path = Path(run_dir) / "rollouts.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no rollout log (was the run made with run.log_rollouts: true?)")
    return read_log(path)
