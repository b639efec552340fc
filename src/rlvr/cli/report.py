"""``rlvr report``: one self-contained HTML page (and PNGs) for one run or several overlaid."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rlvr.cli.console import abort, console, err_console, run_folder


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more training run folders (overlaid).")],
    out: Annotated[Path | None, typer.Option(help="The HTML file (default RUN_DIR/report.html).")] = None,
    samples: Annotated[int, typer.Option(help="Failed rollouts shown per cause.", min=0)] = 8,
) -> None:
    """Reward components, format vs verification deaths, lengths, optimisation, accuracy, the cause
    table, quarantined prompts, alarms and failed rollouts, in one page that opens offline."""
    from rich.progress import Progress

    from rlvr.report import build_report

    runs = [run_folder(d) for d in run_dirs]
    if out is None and runs[0] != run_dirs[0]:  # the folder named holds the run: the page goes there
        out = run_dirs[0] / "report.html"

    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("report", total=5)

        def step(title: str) -> None:
            bar.update(task, description=title)
            bar.advance(task)

        try:
            path = build_report(runs, out, per_cause=samples, on_figure=step)
        except (FileNotFoundError, ValueError) as e:
            abort(str(e))
    console.print(f"report: {path}")
