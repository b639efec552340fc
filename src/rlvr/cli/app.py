"""The typer app: every command registered by name (each lives in a module of its own).

Output and exits go through :mod:`rlvr.cli.console`. Exit codes: 0 success (for ``verify``: correct),
1 a negative result (any other verdict), 2 bad usage.
"""

from __future__ import annotations

import os
import sys
import warnings

import typer

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
from rlvr.cli.console import abort, console, err_console

__all__ = ["abort", "app", "console", "err_console", "main"]

app = typer.Typer(
    name="rlvr",
    help="Reinforcement learning with verifiable rewards: verify, score, train.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _own_progress() -> None:
    """rlvr draws its own progress: the libraries' tqdm bars (loading weights, writing shards,
    generating splits) are off unless the user's environment turns them on."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()  # imported before: the env came late
    if os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] == "1" and "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()


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


def main() -> None:
    """Console-script entry point."""

    # library warnings (e.g. "the format reward is dropped") as one plain line, not a source excerpt
    warnings.formatwarning = lambda message, category, *_a, **_k: f"warning: {message}\n"
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
