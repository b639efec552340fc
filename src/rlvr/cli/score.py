"""``rlvr score``: score a JSONL file of rollouts with named rewards."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rlvr.cli.console import abort, console, err_console
from rlvr.data.jsonl import count_lines
from rlvr.errors import ConfigError
from rlvr.scoring import ScoreSummary


def _parse_weights(rewards: str, weights: list[str]) -> dict[str, float]:

    names = [r.strip() for r in rewards.split(",") if r.strip()]
    if not names:
        abort("--rewards is empty; name at least one reward (e.g. accuracy,format)")
    out = dict.fromkeys(names, 1.0)
    for w in weights:
        name, sep, value = w.partition("=")
        if not sep or name not in out:
            abort(f"--weight {w!r}: expected NAME=NUMBER with NAME one of {', '.join(names)}")
        try:
            out[name] = float(value)
        except ValueError:
            abort(f"--weight {w!r}: {value!r} is not a number")
    return out


def score(
    rollouts: Annotated[Path, typer.Argument(help="JSONL rollouts: a completion and a gold answer per line.")],
    rewards: Annotated[str, typer.Option(help="Comma-separated reward names.")] = "accuracy,format",
    weight: Annotated[list[str], typer.Option("--weight", "-w", help="NAME=NUMBER, repeatable (default 1).")] = [],  # noqa: B006
    out: Annotated[Path | None, typer.Option(help="Output JSONL (default ROLLOUTS.scored.jsonl).")] = None,
    jobs: Annotated[int, typer.Option(help="Verifier worker processes (0: in this process).", min=0)] = 2,
    timeout: Annotated[float, typer.Option(help="Seconds per verification.", min=0.01)] = 5.0,
    completion_field: Annotated[str | None, typer.Option(help="Field with the completion.")] = None,
    gold_field: Annotated[str | None, typer.Option(help="Field with the gold answer.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run into an existing --out.")] = False,
) -> None:
    """Score rollouts: every reward component and the verdict per row, then a summary table.

    Malformed lines are reported with their line number and skipped. The input is never
    overwritten; an interrupted run continues with --resume.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from rlvr.rewards import Total
    from rlvr.scoring import score_file

    if not rollouts.is_file():
        abort(f"{rollouts}: no such file")
    out = out or rollouts.with_name(rollouts.name.removesuffix(".jsonl") + ".scored.jsonl")
    try:
        total = Total(_parse_weights(rewards, weight), jobs=jobs, timeout=timeout)
    except ConfigError as e:
        abort(str(e))
    n_lines = count_lines(rollouts)
    with Progress(
        TextColumn("scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("score", total=n_lines)
        try:
            summary = score_file(
                rollouts,
                out,
                total,
                completion_field=completion_field,
                gold_field=gold_field,
                resume=resume,
                on_rows=lambda k: bar.advance(task, k),
                on_bad_line=lambda b: err_console.print(
                    f"[yellow]{rollouts}:{b.line}: skipped: {b.problem}[/]", soft_wrap=True
                ),
            )
        except ConfigError as e:
            abort(str(e))
    console.print(render(summary, out))


def render(s: ScoreSummary, out: Path) -> Table:
    """The summary: mean of each reward, then the death causes."""
    t = Table(title=f"{s.rows} rows scored", caption=f"written to {out}", show_header=True)
    t.add_column("reward / status")
    t.add_column("mean / count", justify="right")
    for name, mean in s.means.items():
        t.add_row(name, "n/a" if mean is None else f"{mean:.4f}")
    t.add_section()
    for status, n in s.statuses.items():
        share = f" ({n / s.rows:.1%})" if s.rows else ""
        t.add_row(status, f"{n}{share}")
    if s.bad_lines:
        t.add_section()
        t.add_row("[yellow]malformed lines[/]", str(len(s.bad_lines)))
    if s.skipped_resumed:
        t.add_row("resumed (already scored)", str(s.skipped_resumed))
    return t
