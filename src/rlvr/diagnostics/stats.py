"""Per-step statistics of reward components (what ``reward/<name>/*`` metrics hold)."""

from __future__ import annotations

import torch


def reward_stats(name: str, values: list[float]) -> dict[str, float | None]:
    """``reward/<name>/mean|std|min|max|n`` of one step's values, and ``binary`` (1.0 when every value
    is 0 or 1: the report then draws a proportion's interval, not a +-std band past [0, 1])."""
    key = f"reward/{name}"
    if not values:
        return {f"{key}/mean": None, f"{key}/std": None}
    t = torch.tensor(values, dtype=torch.float64)
    return {
        f"{key}/mean": float(t.mean()),
        f"{key}/std": float(t.std()) if len(values) > 1 else None,
        f"{key}/min": float(t.min()),
        f"{key}/max": float(t.max()),
        f"{key}/n": float(len(values)),
        f"{key}/binary": float(bool(((t == 0) | (t == 1)).all())),
    }
