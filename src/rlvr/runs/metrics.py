"""``metrics.jsonl``: one line per step (optionally mirrored to TensorBoard and Weights & Biases), and the
append-on-resume rule every per-step log of the run folder follows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.data.jsonl import read_log


def open_step_log(path: Path, resume_step: int | None) -> Any:
    """Open a per-step JSONL log for appending: fresh for a new run; on resume, cut to the lines of
    steps up to the checkpoint (the later ones will be produced again, identically)."""
    if resume_step is not None and path.exists():
        keep = [
            ln
            for ln in path.read_text().splitlines()
            if ln.strip() and (s := _step_of(ln)) is not None and s <= resume_step
        ]
        path.write_text("".join(ln + "\n" for ln in keep))
    elif resume_step is None and path.exists():
        path.unlink()
    return open(path, "a", encoding="utf-8")


class MetricsLog:
    """Append-only ``metrics.jsonl`` (see :func:`open_step_log` for resuming)."""

    def __init__(
        self,
        run_dir: Path,
        resume_step: int | None = None,
        tensorboard: bool = False,
        wandb: bool = False,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.path = run_dir / "metrics.jsonl"
        self._f = open_step_log(self.path, resume_step)
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
    """All metric lines of a run (a torn last line, from a killed writer, skipped).

    Raises:
        ValueError: a line other than the last is not a JSON object (names the file and line).
    """
    p = Path(run_dir) / "metrics.jsonl"
    return read_log(p)[0] if p.exists() else []
