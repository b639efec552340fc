"""The report's plots (matplotlib, headless): each takes the runs and returns PNG bytes, or ``None``
when no run has the data. Several runs are overlaid, one colour per run."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

from rlvr.report.data import (
    DEATHS,
    RunData,
    cold_start_switches,
    death_rates,
    env_outages,
    reward_components,
    series,
)

Figure = Callable[[Sequence[RunData]], bytes | None]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    _plt().close(fig)
    return buf.getvalue()


def _colours(n: int) -> list[Any]:
    cmap = _plt().get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


def smooth(ys: Sequence[float], points: int = 60) -> list[float]:
    """A centred rolling mean with a window of ``len(ys) / points`` (unchanged when short): long runs
    are read as trends, the raw steps drawn faintly behind."""
    w = len(ys) // points
    if w < 2:
        return list(ys)
    half = w // 2
    out = []
    for i in range(len(ys)):
        part = ys[max(0, i - half) : i + half + 1]
        out.append(sum(part) / len(part))
    return out


def _label(run: RunData, runs: Sequence[RunData], what: str) -> str:
    return f"{run.name}: {what}" if len(runs) > 1 else what


def rewards(runs: Sequence[RunData]) -> bytes | None:
    """Reward per component over steps: mean with a band inside the reward's range (a 0/1 reward's
    proportion interval, else +-1 std clipped to the values seen); ``total`` on top, bold."""
    comps = [reward_components(r) for r in runs]
    names = sorted({n for c in comps for n in c}, key=lambda n: (n != "total", n))
    if not names:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 2.2 * len(names)), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        for run, c, col in zip(runs, comps, _colours(len(runs))):
            if name not in c:
                continue
            steps, mean, lo, hi = c[name]
            mean_s = smooth(mean)
            if len(mean_s) != len(mean) or mean_s != mean:
                ax.plot(steps, mean, color=col, lw=0.6, alpha=0.3)
            ax.plot(steps, mean_s, color=col, lw=2.2 if name == "total" else 1.4, label=run.name)
            ax.fill_between(steps, smooth(lo), smooth(hi), color=col, alpha=0.18, lw=0)
        ax.set_ylabel("r_total" if name == "total" else name)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(
        "reward per component: mean; band: +-1 std within the reward's range, a proportion's "
        "interval for 0/1 rewards (rolling over long runs)"
    )
    if len(runs) > 1:
        axes[0, 0].legend(fontsize=8)
    axes[-1, 0].set_xlabel("step")
    return _png(fig)


def deaths(runs: Sequence[RunData]) -> bytes | None:
    """Format vs verification deaths (and truncated, invalid) per step, stacked; the cold-start switch marked."""
    have = [r for r in runs if r.steps]
    if not have:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(have), 1, figsize=(9, 2.8 * len(have)), sharex=True, squeeze=False)
    colours = {"no_answer": "#d62728", "wrong": "#ff7f0e", "truncated": "#9467bd", "invalid": "#7f7f7f"}
    for ax, run in zip(axes[:, 0], have):
        steps, rates = death_rates(run)
        ax.stackplot(
            steps,
            *[smooth(rates[c]) for c, _ in DEATHS],
            labels=[lbl for _, lbl in DEATHS],
            colors=[colours[c] for c, _ in DEATHS],
            alpha=0.85,
        )
        for s in cold_start_switches(run):
            ax.axvline(s, color="k", ls="--", lw=1)
            ax.annotate("cold start ends", (s, 0.95), fontsize=8, ha="left", va="top")
        for a, b in env_outages(run):  # steps the environment was down: nothing trained
            ax.axvspan(a - 0.5, b + 0.5, color="k", alpha=0.12, lw=0)
            ax.annotate("environment down", (a, 0.05), fontsize=8, ha="left", va="bottom")
        ax.set_ylim(0, 1)
        ax.set_ylabel("share of rollouts")
        ax.set_title(f"{run.name}: how rollouts died" if len(have) > 1 else "how rollouts died")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("step")
    return _png(fig)


def _lines(runs: Sequence[RunData], panels: list[tuple[str, list[tuple[str, str, str]]]]) -> bytes | None:
    """One panel per (title, [(metric, label, style)]), runs overlaid."""
    keep = [(t, ms) for t, ms in panels if any(series(r, k)[0] for r in runs for k, _, _ in ms)]
    if not keep:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(keep), figsize=(4.2 * len(keep), 3.2), squeeze=False)
    for ax, (title, metrics) in zip(axes[0], keep):
        for run, col in zip(runs, _colours(len(runs))):
            for key, label, style in metrics:
                xs, ys = series(run, key)
                if xs:
                    ys_s = smooth(ys)
                    if ys_s != ys:
                        ax.plot(xs, ys, style, color=col, lw=0.6, alpha=0.3)
                    ax.plot(xs, ys_s, style, color=col, label=_label(run, runs, label), lw=1.4)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _png(fig)


def lengths(runs: Sequence[RunData]) -> bytes | None:
    """Completion length (mean, p90), truncation rate, zero-variance group fraction."""
    return _lines(
        runs,
        [
            (
                "completion length (tokens)",
                [("completions/mean_length", "mean", "-"), ("completions/p90_length", "p90", "--")],
            ),
            ("truncated share", [("completions/truncated_frac", "truncated", "-")]),
            ("groups with zero reward variance", [("groups/zero_std_frac", "zero-std groups", "-")]),
        ],
    )


def optimisation(runs: Sequence[RunData]) -> bytes | None:
    """Clip fraction, approximate KL, gradient norm."""
    return _lines(
        runs,
        [
            ("clip fraction", [("loss/clipfrac", "clipfrac", "-")]),
            ("approx KL (old vs new policy)", [("loss/approx_kl", "approx KL", "-")]),
            ("gradient norm (before clipping)", [("grad_norm", "grad norm", "-")]),
        ],
    )


def accuracy(runs: Sequence[RunData]) -> bytes | None:
    """Held-out greedy accuracy (and the sampled rollouts' accuracy, faint)."""
    if not any(r.evals or series(r, "verify/correct")[0] for r in runs):
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for run, col in zip(runs, _colours(len(runs))):
        if run.evals:
            ax.plot(*zip(*run.evals), "o-", color=col, label=_label(run, runs, "held-out greedy accuracy"))
        xs, ys = series(run, "verify/correct")
        if xs:
            ax.plot(xs, ys, color=col, alpha=0.3, label=_label(run, runs, "rollout accuracy (sampled)"))
    ax.set_ylim(0, 1)
    ax.set_xlabel("step")
    ax.set_title("accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


#: The report's figures in page order: (file stem, title, function).
FIGURES: list[tuple[str, str, Figure]] = [
    ("rewards", "Reward components", rewards),
    ("deaths", "Format deaths vs verification deaths", deaths),
    ("accuracy", "Accuracy", accuracy),
    ("lengths", "Completion length, truncation, flat groups", lengths),
    ("optimisation", "Optimisation: clipping, KL, gradient norm", optimisation),
]
