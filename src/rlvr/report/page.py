"""``build_report``: one self-contained HTML page (images inline) and the PNGs beside it."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlvr.diagnostics.causes import shown
from rlvr.report.data import RunData, alarms, causes_by_task, failed_samples, load_run
from rlvr.report.figures import FIGURES


def _environment() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("rlvr.report", "templates"),
        autoescape=select_autoescape(["j2", "html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda x: "-" if x is None else f"{x:.1%}"
    env.filters["num"] = lambda x: "-" if x is None else (f"{x:.3g}" if isinstance(x, float) else str(x))
    return env


def _present(runs: Sequence[RunData]) -> list[Any]:
    """The causes the tables list: the single-turn ones, and the episode causes these runs met."""
    return shown(r["cause"] for run in runs for r in run.rollouts if r.get("cause"))


def _run_context(run: RunData, per_cause: int, causes: Sequence[Any] = ()) -> dict[str, Any]:
    table = causes_by_task(run)
    tasks = []
    if table is not None:
        for task, counts in sorted(table.by_task.items(), key=lambda kv: kv[0] == "all"):
            n = sum(counts.values()) or 1
            tasks.append(
                {
                    "task": task,
                    "n": n,
                    "cells": [(counts.get(c.value, 0), counts.get(c.value, 0) / n) for c in causes or shown()],
                }
            )
    last = run.steps[-1] if run.steps else {}
    return {
        "name": run.name,
        "path": str(run.path),
        "notes": run.notes,
        "steps": len(run.steps),
        "last_step": last.get("step"),
        "final_eval": run.evals[-1] if run.evals else None,
        "tasks": tasks,
        "phases": table.phases if table else [],
        "deadliest": table.deadliest if table else [],
        "quarantine": run.quarantine,
        "alarms": alarms(run),
        "samples": failed_samples(run, per_cause),
        "rollouts": len(run.rollouts),
    }


def build_report(
    run_dirs: Sequence[str | Path],
    out: str | Path | None = None,
    *,
    per_cause: int = 8,
    on_figure: Callable[[str], None] | None = None,
) -> Path:
    """Write the report of one or more runs; returns the HTML file's path.

    ``out`` defaults to ``RUN_DIR/report.html`` (the first run's). The PNGs go beside it,
    named ``<stem>-<figure>.png``; the page embeds them, so it opens anywhere, offline.
    ``on_figure(name)`` is called as each figure is drawn (progress).

    Raises:
        FileNotFoundError: a folder is not a run.
    """
    runs = [load_run(d) for d in run_dirs]
    out = Path(out) if out else Path(run_dirs[0]) / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    figures = []
    for stem, title, draw in FIGURES:
        if on_figure is not None:
            on_figure(title)
        png = draw(runs)
        if png is None:
            continue
        path = out.with_name(f"{out.stem}-{stem}.png")
        path.write_bytes(png)
        figures.append({"id": stem, "title": title, "file": path.name, "data": base64.b64encode(png).decode("ascii")})
    page = (
        _environment()
        .get_template("report.html.j2")
        .render(
            runs=[_run_context(r, per_cause, _present(runs)) for r in runs],
            figures=figures,
            causes=[c.value for c in _present(runs)],
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            title=" vs ".join(r.name for r in runs),
        )
    )
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)  # a reader never sees half a page
    return out
