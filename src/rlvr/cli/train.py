"""``rlvr train`` and ``rlvr sft``: thin commands over :mod:`rlvr.grpo.trainer` and :mod:`rlvr.sft`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def _progress(total: int, start: int = 0) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from rlvr.cli.app import err_console

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    TextColumn("{task.fields[info]}"), console=err_console)


def train(
    config: Annotated[Path | None, typer.Argument(help="YAML config (defaults: the tiny addition demo).")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="Override: key.sub=value (repeatable).")] = [],  # noqa: B006
    resume: Annotated[Path | None, typer.Option(help="Continue the run in this folder from its last checkpoint.")] = None,
) -> None:
    """Train with GRPO. Metrics go to RUN_DIR/metrics.jsonl; checkpoints to RUN_DIR/checkpoints."""
    from rlvr.cli.app import abort, console
    from rlvr.config import load_config
    from rlvr.errors import ConfigError, DataError
    from rlvr.grpo.trainer import GRPOTrainer

    overrides = list(set_)
    if resume is not None:
        if config is None and (resume / "config.yaml").exists():
            config = resume / "config.yaml"
        overrides.append(f"run.out_dir={resume}")
    try:
        cfg = load_config(config, overrides)
        trainer = GRPOTrainer(cfg)
    except (ConfigError, DataError) as e:
        abort(str(e))
    with _progress(cfg.run.steps) as bar:
        task = bar.add_task("grpo", total=cfg.run.steps, info="")

        def on_step(step: int, m: dict[str, Any]) -> None:
            acc = m.get("reward/accuracy/mean")
            info = (f"reward {m['reward/total/mean']:.3f}" if m.get("reward/total/mean") is not None else "") + (
                f"  acc {acc:.2f}" if acc is not None else "") + (
                f"  no_answer {m['verify/no_answer']:.2f}  wrong {m['verify/wrong']:.2f}")
            if "eval/accuracy" in m:
                info += f"  held-out {m['eval/accuracy']:.3f}"
            bar.update(task, completed=step, info=info)

        try:
            result = trainer.train(resume=resume is not None, on_step=on_step)
        except (ConfigError, DataError) as e:
            abort(str(e))
    before = result.get("before", {}).get("accuracy")
    after = result.get("after", {}).get("accuracy")
    line = f"trained {result['steps']} steps -> {cfg.run.out_dir}"
    if after is not None:
        line += f"; held-out greedy accuracy {'' if before is None else f'{before:.3f} -> '}{after:.3f}"
    console.print(line)


def sft(
    out: Annotated[Path, typer.Argument(help="Folder to save the warmed-up model in.")],
    task: Annotated[str, typer.Option(help="Synthetic task: addition, arithmetic, countdown.")] = "addition",
    steps: Annotated[int, typer.Option(min=1)] = 1000,
    lr: Annotated[float, typer.Option(min=0)] = 3e-3,
    target: Annotated[float | None, typer.Option(help="Stop at this held-out accuracy.")] = 0.35,
    max_operand: Annotated[int, typer.Option(help="Addition: largest operand.")] = 99,
    seed: int = 0,
) -> None:
    """Warm up the built-in tiny model on a synthetic task (a cold-start SFT before GRPO)."""
    from rlvr.cli.app import abort, console
    from rlvr.data.tasks import TASKS, addition_eval
    from rlvr.grpo.trainer import setup_torch
    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.sft import sft as run_sft

    if task not in TASKS:
        abort(f"--task {task!r}: choose one of {', '.join(TASKS)}")
    setup_torch(1, seed)
    tok = build_tokenizer()
    model = build_model(tok, seed=seed)
    opts = {"max_operand": max_operand} if task == "addition" else {}
    eval_rows = addition_eval(200, **opts) if task == "addition" else [
        s for _, s in zip(range(200), TASKS[task](1234))]
    with _progress(steps) as bar:
        t = bar.add_task("sft", total=steps, info="")
        res = run_sft(model, tok, TASKS[task](seed + 10_000, **opts), steps=steps, lr=lr, eval_rows=eval_rows,
                      target_accuracy=target,
                      on_eval=lambda s, acc, loss: bar.update(t, completed=s, info=f"loss {loss:.3f}  held-out {acc:.3f}"))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    console.print(f"sft: {res['steps']} steps, {res['seconds']:.0f} s, held-out greedy accuracy "
                  f"{res['accuracy']:.3f} -> {out}")
