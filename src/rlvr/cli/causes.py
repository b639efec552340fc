"""``rlvr causes``: the death-cause table of a run (and a sample of failures to read)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rlvr.cli.console import abort, console, err_console, run_folder
from rlvr.config import read_yaml
from rlvr.errors import ConfigError
from rlvr.report.table import alarm_lines, cause_table, outages, whose_fault, write_samples
from rlvr.runs import read_metrics, read_rollouts


def causes(
    run_dir: Annotated[Path, typer.Argument(help="A training run's folder (with rollouts.jsonl).")],
    sample: Annotated[int, typer.Option(help="Write this many random failed rollouts per cause to a file.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Where --sample writes (default RUN_DIR/failures.md).")] = None,
    top: Annotated[int, typer.Option(help="How many of the deadliest prompts to list.")] = 10,
) -> None:
    """Per task: how each rollout ended (correct / wrong / no_answer / truncated / invalid / stale /
    bad_gold), how the two deaths moved over the run, and the prompts that die most."""

    given, run_dir = run_dir, run_folder(run_dir)
    try:
        rows, torn = read_rollouts(run_dir)
        metrics = read_metrics(run_dir)
    except (FileNotFoundError, ValueError) as e:
        abort(str(e))
    if torn:
        err_console.print("[yellow]the last line was cut off (a run still going, or killed): skipped[/]")
    t = cause_table(rows, top)
    for table in _by_task(t.by_task, f"{run_dir}: {t.rows} rollouts over {t.steps} steps", console.width):
        console.print(table)
    split = whose_fault(t.by_task.get("all", {}), _env_faults(run_dir))
    if split["environment"] or split["policy"]:
        n = sum(t.by_task.get("all", {}).values()) or 1
        owners = Table(title="episodes: whose fault (the environment's are redrawn, out of the baseline and loss)")
        for col in ("owner", "episodes", "causes"):
            owners.add_column(col, justify="right" if col == "episodes" else "left")
        for owner, causes in split.items():
            total = sum(causes.values())
            owners.add_row(owner, f"{total} ({total / n:.0%})", ", ".join(f"{c} {k}" for c, k in causes.items()) or "-")
        console.print(owners)
    down = outages(metrics)
    if down:
        spans = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in down)
        n_down = sum(b - a + 1 for a, b in down)
        console.print(
            f"[yellow]the environment was down at steps {spans}[/] ({n_down} steps: every episode that reached "
            "it failed; nothing was trained and the learning-rate schedule waited)"
        )
    phases = Table(title="format deaths (no_answer) vs verification deaths (wrong)")
    for col in ("phase", "steps", "format death", "verification death"):
        phases.add_column(col, justify="right")
    for name, a, b, fmt, ver in t.phases:
        phases.add_row(name, f"{a}-{b}", f"{fmt:.1%}", f"{ver:.1%}")
    console.print(phases)
    dead = Table(title="prompts that die most")
    for col in ("prompt id", "deaths / seen", "prompt"):
        dead.add_column(col, overflow="fold", max_width=60 if col == "prompt" else None)
    for pid, d, seen, text in t.deadliest:
        dead.add_row(pid, f"{d}/{seen}", text[:120])
    console.print(dead)
    alarms = Table(title="reward-hacking alarms")
    for col in ("alarm", "steps fired", "first", "peak"):
        alarms.add_column(col, justify="right")
    for name, fired, first, peak in alarm_lines(metrics):
        alarms.add_row(name, f"[red]{fired}[/]" if fired else "0", str(first or "-"), f"{peak:.2f}")
    console.print(alarms)
    if sample:
        path = write_samples(rows, out or given / "failures.md", sample)
        console.print(f"failed rollouts to review: {path}")


def _by_task(by_task: dict[str, Counter[str]], title: str, width: int) -> list[Table]:
    """The cause table, a row per cause and a column per task ("all" first): as many tables as it
    takes for the tasks to fit ``width`` (a table a cause wide would cut its headers on 80 columns)."""
    from rlvr.diagnostics.causes import shown

    causes = [c.value for c in shown(k for counts in by_task.values() for k in counts)]
    tasks = sorted(by_task, key=lambda k: (k != "all", k))
    cell = 11  # "1234 (100%)"
    per_table = max(1, (width - max(map(len, causes)) - 4) // (cell + 3))
    tables = []
    for start in range(0, len(tasks), per_table):
        table = Table(title=title if start == 0 else None)
        table.add_column("cause", no_wrap=True)
        for task in tasks[start : start + per_table]:
            table.add_column(task, justify="right", overflow="fold", min_width=cell)
        for cause in causes:
            cells = []
            for task in tasks[start : start + per_table]:
                k, n = by_task[task].get(cause, 0), sum(by_task[task].values()) or 1
                cells.append(f"{k} ({k / n:.0%})")
            table.add_row(cause, *cells)
        tables.append(table)
    return tables


def _env_faults(run_dir: Path) -> frozenset[str] | None:
    """The run's ``failure.env_faults`` from its ``config.yaml`` (None: the defaults)."""

    try:
        failure = read_yaml(run_dir / "config.yaml", "run config", "sections").get("failure")
    except ConfigError:
        return None
    faults = failure.get("env_faults") if isinstance(failure, dict) else None
    return frozenset(faults) if isinstance(faults, list) else None
