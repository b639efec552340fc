"""``rlvr pipeline CONFIG``: the stages of a pipeline config in order, into one folder, then the report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rlvr.cli.console import abort, console
from rlvr.errors import ConfigError, DataError


def pipeline(
    config: Annotated[Path, typer.Argument(help="Pipeline YAML (stages: grpo, sample, sft; configs/r1-tiny.yaml).")],
) -> None:
    """Run the stages not finished yet, measure each stage's model on the held-out set, report side by side.

    Run it again after a kill or a failure: finished stages are skipped, a stage cut short resumes.
    """
    from rlvr.pipeline import StageFailed, load_pipeline, run_pipeline
    from rlvr.pipeline.report import table

    try:
        cfg = load_pipeline(config)  # every stage's config checked before the first one runs
        records = run_pipeline(
            cfg, echo=lambda line: console.print(f"[bold]{line}[/]", soft_wrap=True, highlight=False)
        )
    except (ConfigError, DataError, StageFailed) as e:
        abort(str(e))
    console.print(table(records, f"{config}: held-out figures per stage ({cfg.eval.data}, greedy)"))
    console.print(f"report: {Path(cfg.out_dir) / 'report.json'}, plot: {Path(cfg.out_dir) / 'pipeline.png'}")
