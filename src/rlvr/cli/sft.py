"""``rlvr sft``: the tiny model's warm-up, or supervised fine-tuning of any model on prompt/completion rows.

``rlvr sft OUT`` (no ``--model`` / ``--data``) warms the built-in tiny model up on a synthetic task, as
it always has. ``rlvr sft OUT --model M --data FILE`` fine-tunes M on FILE (the traces ``rlvr sample``
kept, or ``messages`` rows): completion-only loss, the model's chat template, LoRA by option,
checkpoints and ``--resume``, held-out accuracy with the verifier. OUT ends as a ``from_pretrained``
folder with ``sft.json`` (the settings and the figures; its ``finished`` says the run is complete).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

import typer

from rlvr.cli.console import abort, console, progress
from rlvr.data.tasks import TASKS, addition_eval
from rlvr.errors import ConfigError, DataError


def sft(
    out: Annotated[Path, typer.Argument(help="Folder to save the fine-tuned model (and tokenizer) in.")],
    model: Annotated[
        str | None,
        typer.Option(
            help="Fine-tune this model (run folder, checkpoint, named model, "
            "'tiny' or a from_pretrained folder) on --data."
        ),
    ] = None,
    data: Annotated[
        str | None, typer.Option(help="JSONL of prompt/completion (rlvr sample's rows) or messages rows.")
    ] = None,
    eval_data: Annotated[
        str | None,
        typer.Option(
            "--eval",
            help="Held-out prompts with golds (anything data.path accepts); default: --eval-share of --data's prompts.",
        ),
    ] = None,
    eval_share: Annotated[float, typer.Option(min=0.0, max=0.5, help="Prompts of --data held out.")] = 0.1,
    eval_tokens: Annotated[int, typer.Option(min=1, help="New tokens per held-out answer.")] = 256,
    eval_every: Annotated[int, typer.Option(min=0, help="Evaluate every N steps (0: only at the end).")] = 0,
    task: Annotated[str, typer.Option(help="Warm-up: synthetic task (addition, arithmetic, countdown).")] = "addition",
    steps: Annotated[
        int | None, typer.Option(min=1, help="Optimizer steps (default: warm-up 1000; with --data, --epochs over it).")
    ] = None,
    epochs: Annotated[float, typer.Option(min=0.01, help="With --data and no --steps: passes over it.")] = 1.0,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Rows per step (warm-up 64, --data 8).")] = None,
    lr: Annotated[
        float | None,
        typer.Option(min=0, help="Peak learning rate (warm-up 3e-3; --data 1e-5, LoRA 2e-4; tiny model 3e-3)."),
    ] = None,
    max_len: Annotated[
        int, typer.Option(min=8, help="Tokens per row (prompt + completion); longer completions are cut.")
    ] = 1024,
    lora_r: Annotated[
        int | None,
        typer.Option(
            min=1, help="Train LoRA adapters of this rank (merged into OUT at the end) instead of every weight."
        ),
    ] = None,
    dtype: Annotated[str, typer.Option(help="float32, or bfloat16 (with --lora-r).")] = "float32",
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N, mps.")] = "auto",
    gradient_checkpointing: Annotated[bool, typer.Option(help="Recompute activations (less memory).")] = False,
    save_every: Annotated[int, typer.Option(min=0, help="Checkpoint every N steps (0: never mid-run).")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue from OUT's latest checkpoint.")] = False,
    target: Annotated[float | None, typer.Option(help="Stop at this held-out accuracy (warm-up: 0.35).")] = None,
    max_operand: Annotated[int, typer.Option(help="Warm-up addition: largest operand.")] = 99,
    seed: int = 0,
) -> None:
    """Warm up the tiny model (no --model/--data), or fine-tune any model on prompt/completion rows."""

    if (model is None) != (data is None):
        abort("--model and --data go together: fine-tune --model on --data (leave both out for the tiny warm-up)")
    if model is None:
        return warm_up(
            out,
            task=task,
            steps=steps or 1000,
            lr=3e-3 if lr is None else lr,
            target=0.35 if target is None else target,
            max_operand=max_operand,
            seed=seed,
            batch_size=batch_size or 64,
        )
    assert data is not None
    run_fine_tune(
        out,
        model=model,
        data=data,
        eval_data=eval_data,
        eval_share=eval_share,
        eval_tokens=eval_tokens,
        eval_every=eval_every,
        steps=steps,
        epochs=epochs,
        batch_size=batch_size or 8,
        lr=lr,
        max_len=max_len,
        lora_r=lora_r,
        dtype=dtype,
        device=device,
        gradient_checkpointing=gradient_checkpointing,
        save_every=save_every,
        resume=resume,
        target=target,
        seed=seed,
    )


def run_fine_tune(out: Path, **settings: Any) -> None:
    """:func:`rlvr.fine_tune.fine_tune` with a progress bar and its errors as the command's."""
    from rlvr.fine_tune import fine_tune  # torch and transformers: imported when a run starts

    with contextlib.ExitStack() as stack:
        bar: list[Any] = []

        def on_progress(done: int, total: int, info: str) -> None:
            if not bar:  # the bar appears once the run knows its steps
                shown = stack.enter_context(progress(total))
                bar.extend([shown, shown.add_task("sft", total=total, completed=done, info="")])
            bar[0].update(bar[1], completed=done, info=info)

        try:
            fine_tune(out, say=console.print, on_progress=on_progress, **settings)
        except (ConfigError, DataError) as e:
            abort(str(e))


def warm_up(
    out: Path, *, task: str, steps: int, lr: float, target: float, max_operand: int, seed: int, batch_size: int
) -> None:
    """The built-in tiny model on a synthetic task until ``target`` held-out accuracy."""
    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.runtime import setup_torch
    from rlvr.sft import sft as run_sft

    if task not in TASKS:
        abort(f"--task {task!r}: choose one of {', '.join(TASKS)}")
    setup_torch(1, seed)
    tok = build_tokenizer()
    model = build_model(tok, seed=seed)
    opts = {"max_operand": max_operand} if task == "addition" else {}
    eval_rows = addition_eval(200, **opts) if task == "addition" else [s for _, s in zip(range(200), TASKS[task](1234))]
    with progress(steps) as bar:
        t = bar.add_task("sft", total=steps, info="")
        res = run_sft(
            model,
            tok,
            TASKS[task](seed + 10_000, **opts),
            steps=steps,
            lr=lr,
            eval_rows=eval_rows,
            target_accuracy=target,
            batch_size=batch_size,
            on_eval=lambda s, acc, loss: bar.update(t, completed=s, info=f"loss {loss:.3f}  held-out {acc:.3f}"),
        )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    console.print(
        f"sft: {res['steps']} steps, {res['seconds']:.0f} s, held-out greedy accuracy {res['accuracy']:.3f} -> {out}"
    )
