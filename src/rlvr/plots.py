"""Plots of a run: held-out accuracy and the two deaths (format vs verification) over steps."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def plot_run(metrics: Sequence[dict[str, Any]], path: str | Path, title: str = "GRPO run") -> Path:
    """Write a PNG: held-out greedy accuracy, and per-step format / verification death rates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [m["step"] for m in metrics if "verify/wrong" in m]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    ev = [(m["step"], m["eval/accuracy"]) for m in metrics if "eval/accuracy" in m]
    if ev:
        a1.plot(*zip(*ev), marker="o", label="held-out greedy accuracy")
    train_acc = [(m["step"], m["verify/correct"]) for m in metrics if "verify/correct" in m]
    if train_acc:
        a1.plot(*zip(*train_acc), alpha=0.35, label="rollout accuracy (sampled)")
    a1.set_xlabel("step")
    a1.set_ylim(0, 1)
    a1.set_title("accuracy")
    a1.legend()
    for key, label in (
        ("verify/no_answer", "format death (no answer parsed)"),
        ("verify/wrong", "verification death (parsed, wrong)"),
        ("completions/truncated_frac", "truncated"),
    ):
        ys = [m.get(key, 0.0) for m in metrics if "verify/wrong" in m]
        if any(ys):
            a2.plot(steps, ys, label=label)
    a2.set_xlabel("step")
    a2.set_ylim(0, 1)
    a2.set_title("rollout deaths per step")
    a2.legend()
    fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
