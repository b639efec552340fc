"""Per-step metrics: one JSONL line per step, optionally TensorBoard and Weights & Biases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch


def _open_for_run(path: Path, resume_step: int | None) -> Any:
    """Open a per-step JSONL log for appending: fresh for a new run; on resume, cut to the lines of
    steps up to the checkpoint (the later ones will be produced again, identically)."""
    if resume_step is not None and path.exists():
        keep = [ln for ln in path.read_text().splitlines()
                if ln.strip() and (s := _step_of(ln)) is not None and s <= resume_step]
        path.write_text("".join(ln + "\n" for ln in keep))
    elif resume_step is None and path.exists():
        path.unlink()
    return open(path, "a", encoding="utf-8")


class RolloutLog:
    """``rollouts.jsonl``: one line per rollout (prompt id, completion, finish, policy version, cause,
    verdict, every reward component, total, advantage), the material of death-cause reports."""

    def __init__(self, run_dir: Path, resume_step: int | None = None) -> None:
        self.path = run_dir / "rollouts.jsonl"
        self._f = _open_for_run(self.path, resume_step)

    def log(self, step: int, records: list[dict[str, Any]]) -> None:
        self._f.write("".join(json.dumps({"step": step, **r}, ensure_ascii=False) + "\n" for r in records))
        self._f.flush()

    def close(self) -> None:
        self._f.close()


class MetricsLog:
    """Append-only ``metrics.jsonl`` (see :func:`_open_for_run` for resuming)."""

    def __init__(self, run_dir: Path, resume_step: int | None = None, tensorboard: bool = False,
                 wandb: bool = False, config: dict[str, Any] | None = None) -> None:
        self.path = run_dir / "metrics.jsonl"
        self._f = _open_for_run(self.path, resume_step)
        self._tb = self._wb = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(run_dir / "tensorboard"))
        if wandb:
            import wandb as wb

            self._wb = wb.init(project="rlvr", dir=str(run_dir), config=config or {}, resume="allow")

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        """Write one step's metrics (numbers; nested dicts are flattened with ``/``)."""
        flat = {"step": step, **_flatten(metrics)}
        self._f.write(json.dumps(flat) + "\n")
        self._f.flush()
        if self._tb is not None:
            for k, v in flat.items():
                if isinstance(v, int | float) and k != "step":
                    self._tb.add_scalar(k, v, step)
        if self._wb is not None:
            self._wb.log(flat, step=step)

    def close(self) -> None:
        self._f.close()
        if self._tb is not None:
            self._tb.close()
        if self._wb is not None:
            self._wb.finish()


def reward_stats(name: str, values: list[float]) -> dict[str, float | None]:
    """``reward/<name>/mean|std|min|max|n`` of one step's values, and ``binary`` (1.0 when every value
    is 0 or 1: the report then draws a proportion's interval, not a +-std band past [0, 1])."""
    key = f"reward/{name}"
    if not values:
        return {f"{key}/mean": None, f"{key}/std": None}
    t = torch.tensor(values, dtype=torch.float64)
    return {f"{key}/mean": float(t.mean()), f"{key}/std": float(t.std()) if len(values) > 1 else None,
            f"{key}/min": float(t.min()), f"{key}/max": float(t.max()), f"{key}/n": float(len(values)),
            f"{key}/binary": float(bool(((t == 0) | (t == 1)).all()))}


def _step_of(line: str) -> int | None:
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return None


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "/"))
        else:
            out[key] = v
    return out


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """All metric lines of a run."""
    p = Path(run_dir) / "metrics.jsonl"
    return [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()] if p.exists() else []
