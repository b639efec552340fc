"""Atomic checkpoints: everything needed to continue a run exactly where it stopped.

A checkpoint is a folder ``checkpoints/step-<N>`` written under a temporary name and
renamed into place (a rename is atomic), then ``checkpoints/latest`` is replaced
atomically to name it. A run killed mid-save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import torch


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save(run_dir: Path, step: int, state: dict[str, Any], keep: int = 2) -> Path:
    """Write ``state`` (tensors and plain values) as checkpoint ``step``; keep the last ``keep``."""
    root = run_dir / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step}"
    tmp = root / f".step-{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    payload = dict(state)
    payload["rng"] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    torch.save(payload, tmp / "state.pt")
    with open(tmp / "state.pt", "rb") as f:
        os.fsync(f.fileno())
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    _atomic_write(root / "latest", final.name)
    for old in sorted(root.glob("step-*"), key=lambda p: int(p.name.split("-")[1]))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, or None."""
    pointer = run_dir / "checkpoints" / "latest"
    if not pointer.exists():
        return None
    path = run_dir / "checkpoints" / pointer.read_text().strip()
    return path if (path / "state.pt").exists() else None


def load(path: Path, map_location: Any = None) -> dict[str, Any]:
    """A checkpoint's state (its tensors on ``map_location``, default where they were saved);
    restores the global RNGs as they were when it was saved."""
    state = torch.load(path / "state.pt", weights_only=False, map_location=map_location)
    torch.set_rng_state(state["rng"]["torch"].cpu())
    random.setstate(state["rng"]["python"])
    return state
