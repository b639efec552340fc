"""``rlvr demo``: the main job on built-in defaults (see :mod:`rlvr.demo`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rlvr.cli.console import console, err_console


def demo(
    out: Annotated[Path, typer.Option(help="Where the models, metrics and plot go.")] = Path("runs/demo"),
    steps: Annotated[int, typer.Option(help="GRPO steps (at most --minutes of training).", min=1)] = 1500,
    minutes: Annotated[float, typer.Option(help="GRPO time budget.", min=0.1)] = 3.0,
    warm_target: Annotated[float, typer.Option(help="SFT stops at this held-out accuracy.", min=0, max=1)] = 0.3,
    lr: Annotated[float, typer.Option(help="GRPO learning rate.", min=0)] = 1e-4,
    temperature: Annotated[float, typer.Option(help="Sampling temperature of the rollouts.", min=0.01)] = 1.0,
    seed: int = 0,
) -> None:
    """Warm up a tiny model on addition, train it with GRPO, show what changed (CPU, a few minutes)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from rlvr.demo import run_demo

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=err_console,
    ) as bar:
        t_sft = bar.add_task("sft warm-up", total=1000, info="")
        t_grpo = bar.add_task(f"grpo (<= {minutes:g} min)", total=steps, info="")

        def on_step(step: int, m: dict[str, Any]) -> None:
            info = f"no_answer {m['verify/no_answer']:.2f}  wrong {m['verify/wrong']:.2f}"
            if "eval/accuracy" in m:
                info += f"  held-out {m['eval/accuracy']:.3f}"
            bar.update(t_grpo, completed=step, info=info)

        res = run_demo(
            out,
            grpo_steps=steps,
            grpo_minutes=minutes,
            seed=seed,
            warm_target=warm_target,
            lr=lr,
            temperature=temperature,
            on_sft=lambda s, acc, loss: bar.update(t_sft, completed=s, info=f"held-out {acc:.3f}"),
            on_step=on_step,
        )
    table = Table(title="held-out greedy accuracy and rollout deaths (share of the step's rollouts)")
    for col in ("step", "held-out acc", "format death", "verification death", "reward"):
        table.add_column(col, justify="right")
    for m in res["metrics"]:
        if "eval/accuracy" in m and "verify/wrong" in m:
            table.add_row(
                str(m["step"]),
                f"{m['eval/accuracy']:.3f}",
                f"{m['verify/no_answer']:.3f}",
                f"{m['verify/wrong']:.3f}",
                f"{m['reward/total/mean']:.3f}",
            )
    console.print(table)
    gain = res["after"] - res["before"]
    console.print(
        f"SFT warm-up: {res['sft']['steps']} steps, {res['sft']['seconds']:.0f} s -> held-out {res['before']:.3f}"
    )
    console.print(
        f"GRPO: {res['steps']} steps, {res['grpo_seconds']:.0f} s -> held-out {res['after']:.3f} "
        f"([bold]{gain * 100:+.1f} points[/])"
    )
    console.print(f"plot: {res['plot']}   report: {res['report']}   metrics: {out / 'grpo' / 'metrics.jsonl'}")
