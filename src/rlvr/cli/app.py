"""The typer app and its console: the only place that prints or exits.

Exit codes: 0 success (for ``verify``: correct), 1 a negative result (any other
verdict), 2 bad usage.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from rich.console import Console

app = typer.Typer(
    name="rlvr",
    help="Reinforcement learning with verifiable rewards: verify, score, train.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)


def abort(message: str, code: int = 2) -> NoReturn:
    """Print an error to stderr and exit with ``code`` (2: bad usage)."""
    err_console.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(code)


def _register() -> None:
    # Imported here so each command module stays independent of the others.
    from rlvr.cli import (
        causes,
        demo,
        pipeline,
        quarantine,
        report,
        sample,
        score,
        sft,
        train,
        verify,
        verify_demo,
    )

    app.command("verify")(verify.verify)
    app.command("score")(score.score)
    app.command("train")(train.train)
    app.command("sft")(sft.sft)
    app.command("sample")(sample.sample)
    app.command("pipeline")(pipeline.pipeline)
    app.command("causes")(causes.causes)
    app.command("quarantine")(quarantine.quarantine)
    app.command("report")(report.report)
    app.command("demo")(demo.demo)
    app.command("verify-demo")(verify_demo.verify_demo)


_register()


def main() -> None:
    """Console-script entry point."""
    import warnings

    # library warnings (e.g. "the format reward is dropped") as one plain line, not a source excerpt
    warnings.formatwarning = lambda message, category, *_a, **_k: f"warning: {message}\n"
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
