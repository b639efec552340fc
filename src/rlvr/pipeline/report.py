"""The stages side by side: a table (console and ``report.json``) and a plot (``pipeline.png``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

COLUMNS = ("accuracy", "format_deaths", "verification_deaths", "truncated", "mean_tokens")


def rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per measured model (the starting model first), plus each sample stage's figures."""
    out = []
    for r in records:
        row: dict[str, Any] = {"stage": r["stage"], "kind": r["kind"], "seconds": r.get("seconds")}
        if r.get("measured"):
            row.update({k: r["measured"][k] for k in COLUMNS})
            if "constrained" in r["measured"]:
                row["constrained_accuracy"] = r["measured"]["constrained"]["accuracy"]
        if r.get("sampled"):
            row["sampled"] = r["sampled"]
        out.append(row)
    return out


def table(records: list[dict[str, Any]], title: str) -> Any:

    t = Table(title=title)
    constrained = any("constrained_accuracy" in r for r in rows(records))
    for col in (
        "stage",
        "kind",
        "held-out acc",
        "format deaths",
        "verification deaths",
        "truncated",
        "mean tokens",
        *(["acc (constrained)"] if constrained else []),
        "wall",
        "notes",
    ):
        t.add_column(col, justify="left" if col in ("stage", "kind", "notes") else "right")
    for r in rows(records):
        m = [f"{r[k]:.3f}" if k in r else "" for k in COLUMNS[:4]] + [
            f"{r['mean_tokens']:.1f}" if "mean_tokens" in r else ""
        ]
        wall = f"{r['seconds']:.0f} s" if r.get("seconds") is not None else ""
        s = r.get("sampled")
        notes = (
            f"pass@1 {s['pass_at_1']:.3f}, pass@{s['k']} {s['pass_at_k']:.3f}, {s['kept']} kept of {s['completions']}"
            if s
            else ""
        )
        extra = [f"{r['constrained_accuracy']:.3f}" if "constrained_accuracy" in r else ""] if constrained else []
        t.add_row(r["stage"], r["kind"], *m, *extra, wall, notes)
    return t


def plot(records: list[dict[str, Any]], path: Path) -> Path:
    """Grouped bars per measured model: held-out accuracy and the two deaths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [r for r in rows(records) if "accuracy" in r]
    names = [r["stage"] for r in measured]
    fig, ax = plt.subplots(figsize=(3.6 + 1.5 * len(names), 3.6))
    series = [
        ("accuracy", "held-out accuracy"),
        ("format_deaths", "format deaths"),
        ("verification_deaths", "verification deaths"),
    ]
    if any("constrained_accuracy" in r for r in measured):
        series.append(("constrained_accuracy", "accuracy, constrained decoding"))
    width = 0.8 / len(series)
    for j, (key, label) in enumerate(series):
        xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(names))]
        bars = ax.bar(xs, [r.get(key, 0.0) for r in measured], width, label=label)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("share of held-out prompts")
    ax.set_title("the pipeline, stage by stage: each model on the same held-out set (greedy)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
