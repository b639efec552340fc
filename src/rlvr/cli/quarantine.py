"""``rlvr quarantine``: list a run's quarantined prompts, or readmit some after review."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rlvr.cli.console import console, run_folder


def quarantine(
    run_dir: Annotated[Path, typer.Argument(help="A training run's folder.")],
    readmit: Annotated[list[str], typer.Option(help="Prompt id to take back into training (repeatable).")] = [],  # noqa: B006
) -> None:
    """Prompts taken out of training because their rollouts kept dying, with why and their failures."""
    from rlvr.diagnostics import quarantine as q

    run_dir = run_folder(run_dir)
    if readmit:
        back = q.readmit(run_dir, readmit)
        missing = sorted(set(readmit) - set(back))
        console.print(
            f"readmitted: {', '.join(back) or 'none'}" + (f"; not quarantined: {', '.join(missing)}" if missing else "")
        )
        return
    entries = q.read(run_dir)
    table = Table(title=f"{len(entries)} quarantined prompt(s) in {run_dir}")
    for col in ("prompt id", "step", "reason", "last failure"):
        table.add_column(col, overflow="fold", max_width=50 if col == "last failure" else None)
    for e in entries:
        last = e["failures"][-1] if e.get("failures") else {}
        table.add_row(
            e["prompt_id"],
            str(e["step"]),
            e["reason"],
            f"{last.get('cause', '')}: {last.get('completion', '')[:80]!r}" if last else "",
        )
    console.print(table)
