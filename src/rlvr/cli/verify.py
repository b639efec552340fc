"""``rlvr verify``: verify one completion against a gold answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.panel import Panel
from rich.table import Table

from rlvr.cli.console import abort, console
from rlvr.errors import ConfigError
from rlvr.types import Status, Verdict

_STYLE = {Status.CORRECT: "green", Status.WRONG: "red", Status.NO_ANSWER: "yellow"}


def verify(
    completion: Annotated[str, typer.Argument(help="The model output, or '-' to read it from stdin.")] = "-",
    gold: Annotated[
        str,
        typer.Option(
            "--gold",
            "-g",
            help=(
                "The gold answer; for code and instruction tasks a test spec / constraint set as JSON, "
                "or @FILE to read it from a file."
            ),
        ),
    ] = ...,  # type: ignore[assignment]
    task: Annotated[str, typer.Option(help="Which verifier: math, countdown, code, instruction.")] = "math",
    strict: Annotated[bool, typer.Option(help="No last-number fallback.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds before the verdict is 'timeout'.", min=0.01)] = 5.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Verify one completion. Exit 0 when correct, 1 for any other verdict, 2 on bad usage."""

    from rlvr.verify.registry import get_verifier, verify_with

    if completion == "-":
        if sys.stdin.isatty():
            abort("no COMPLETION given and stdin is a terminal: pass the text or pipe it in")
        completion = sys.stdin.read()
    if gold.startswith("@"):
        try:
            gold = Path(gold[1:]).read_text()
        except OSError as e:
            abort(f"--gold {gold}: {e.strerror}")
    try:
        get_verifier(task)
    except ConfigError as e:
        abort(str(e))
    verdict = verify_with(completion, gold, task, strict=strict, timeout=timeout)
    if as_json:
        console.print_json(json.dumps(verdict.to_dict()))
    else:
        console.print(render(verdict))
    raise typer.Exit(0 if verdict.correct else 1)


def render(v: Verdict) -> Panel:
    """A rich panel for one verdict."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("status", f"[{_STYLE.get(v.status, 'magenta')}]{v.status.value}[/]")
    t.add_row("extracted", repr(v.extracted) if v.extracted else "-")
    t.add_row("gold", repr(v.gold) if v.gold else "-")
    t.add_row("method", v.method.value)
    t.add_row("reason", v.reason)
    if v.details.get("rule"):
        t.add_row("rule", str(v.details["rule"]))
    if "total" in v.details:
        t.add_row("passed", f"{v.details.get('passed', 0)}/{v.details['total']}")
    if v.details.get("isolation"):
        t.add_row("sandbox", str(v.details["isolation"]))
    return Panel(t, title="verdict", expand=False)
