"""The CLI's consoles, its one way to stop (:func:`abort`) and its progress bar: every command prints
and exits through these, so output and exit codes stay in one place.

Exit codes: 0 success (for ``verify``: correct), 1 a negative result (any other verdict), 2 bad usage.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from rlvr.runs.folder import locate_run

console = Console()
err_console = Console(stderr=True)


def abort(message: str, code: int = 2) -> NoReturn:
    """Print an error to stderr and exit with ``code`` (2: bad usage)."""
    err_console.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def progress(total: int, start: int = 0) -> Iterator[Progress]:
    """A progress bar on stderr: description, bar, done of total, time left, and a free ``info``
    field. A command that fails inside it takes the bar away: its error line is what is left."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
        console=err_console,
    )
    with bar:
        try:
            yield bar
        except BaseException:
            bar.live.transient = True
            raise


def run_folder(path: Path) -> Path:
    """The run a command was pointed at: ``path``, or the one run inside it (said on stderr);
    otherwise abort with the runs to choose from (:func:`rlvr.runs.folder.locate_run`)."""
    try:
        run = locate_run(path)
    except FileNotFoundError as e:
        abort(str(e))
    if run != path:
        err_console.print(f"reading the run in {run}", soft_wrap=True)
    return run
