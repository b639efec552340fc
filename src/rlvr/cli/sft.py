"""``rlvr sft``: the tiny model's warm-up, or supervised fine-tuning of any model on prompt/completion rows.

``rlvr sft OUT`` (no ``--model`` / ``--data``) warms the built-in tiny model up on a synthetic task, as
it always has. ``rlvr sft OUT --model M --data FILE`` fine-tunes M on FILE (the traces ``rlvr sample``
kept, or ``messages`` rows): completion-only loss, the model's chat template, LoRA by option,
checkpoints and ``--resume``, held-out accuracy with the verifier. OUT ends as a ``from_pretrained``
folder with ``sft.json`` (the settings and the figures; its ``finished`` says the run is complete).
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from rlvr.cli.console import abort, console, progress
from rlvr.data.tasks import Sample

SETTINGS_FILE = "sft.json"


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
    return fine_tune(
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


def warm_up(
    out: Path, *, task: str, steps: int, lr: float, target: float, max_operand: int, seed: int, batch_size: int
) -> None:
    """The built-in tiny model on a synthetic task until ``target`` held-out accuracy."""
    from rlvr.data.tasks import TASKS, addition_eval
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


def split_held_out(rows: Sequence[Sample], share: float, seed: int) -> tuple[list[Sample], list[Sample]]:
    """``(train rows, held-out prompts)``: whole prompts are held out (every trace of a prompt goes to
    one side, so no held-out prompt was learnt from), drawn from every prompt with a gold (solved or
    not: a set of only the solved ones would flatter the model), one row each. Train rows: the kept
    rows of the other prompts."""
    ids = sorted({s.id for s in rows if s.extra.get("has_gold")})
    random.Random(seed).shuffle(ids)
    held = set(ids[: math.floor(len(ids) * share)])
    first: dict[str, Sample] = {}
    for s in rows:
        if s.id in held:
            first.setdefault(s.id, s)
    return [s for s in rows if s.id not in held and s.extra.get("kept", True)], list(first.values())


def epochs_of(rows: Sequence[Sample], seed: int) -> Iterator[Sample]:
    """The rows in a fresh shuffled order each pass, forever (the same for the same seed: resumable)."""
    rng = random.Random(seed)
    while True:
        order = list(rows)
        rng.shuffle(order)
        yield from order


def _settings(**kw: Any) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in kw.items()}


def fine_tune(
    out: Path,
    *,
    model: str,
    data: str,
    eval_data: str | None,
    eval_share: float,
    eval_tokens: int,
    eval_every: int,
    steps: int | None,
    epochs: float,
    batch_size: int,
    lr: float | None,
    max_len: int,
    lora_r: int | None,
    dtype: str,
    device: str,
    gradient_checkpointing: bool,
    save_every: int,
    resume: bool,
    target: float | None,
    seed: int,
) -> None:
    """Any model on prompt/completion rows (see the module docstring)."""
    from pydantic import ValidationError

    from rlvr.config import LoraConfig, ModelConfig
    from rlvr.data.datasets import load_samples
    from rlvr.data.sft_rows import load_sft_rows
    from rlvr.errors import ConfigError, DataError
    from rlvr.models.device import lean_paths
    from rlvr.models.load import load_model, model_source
    from rlvr.runs import checkpoint
    from rlvr.runtime import setup_torch
    from rlvr.sampling.evaluate import greedy_eval
    from rlvr.sft import completion_field
    from rlvr.sft import sft as run_sft

    settings = _settings(
        model=model,
        data=data,
        eval=eval_data,
        eval_share=eval_share,
        steps=steps,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        max_len=max_len,
        lora_r=lora_r,
        dtype=dtype,
        seed=seed,
    )
    record = out / SETTINGS_FILE
    previous = json.loads(record.read_text()) if record.exists() else {}
    if out.exists() and any(out.iterdir()):
        if not resume:
            abort(f"{out} is not empty: pass --resume to continue it, or choose another folder")
        changed = {
            k: (previous["settings"].get(k), v)
            for k, v in settings.items()
            if previous and previous["settings"].get(k) != v
        }
        if changed:
            abort(
                f"--resume with other settings than {record}: "
                + ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in changed.items())
            )
        if previous.get("finished"):
            console.print(f"{out}: finished already ({record}); nothing to do")
            return
    try:
        rows = load_sft_rows(data)
        if eval_data:
            train_rows, held = [s for s in rows if s.extra["kept"]], load_samples(eval_data)
        else:
            train_rows, held = split_held_out(rows, eval_share, seed)
        if not train_rows:
            raise DataError(f"{data}: every prompt was held out; lower --eval-share")
        spec = model_source(model)
        cfg = ModelConfig(
            name=spec,
            dtype=dtype,
            lora=LoraConfig(r=lora_r, alpha=2 * lora_r) if lora_r else None,
            gradient_checkpointing=gradient_checkpointing,
        )
    except (ConfigError, DataError) as e:
        abort(str(e))
    except ValidationError as e:  # e.g. --dtype bfloat16 without --lora-r
        abort("model settings: " + "; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors()))
    if lr is None:
        lr = 3e-3 if spec == "tiny" else (2e-4 if lora_r else 1e-5)
    steps = steps or max(1, math.ceil(epochs * len(train_rows) / batch_size))
    setup_torch(1, seed)
    try:
        net, tok = load_model(cfg, seed, device=device)
    except ConfigError as e:
        abort(str(e))
    state = None
    if resume and (ckpt := checkpoint.latest(out)) is not None:
        state = checkpoint.load(ckpt, map_location="cpu")
        net.load_state_dict(state.pop("model"), strict=False)
        console.print(f"resuming from step {state['step']} ({ckpt})")
    out.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {
        "settings": settings,
        "train_rows": len(train_rows),
        "held_out": len(held),
        "steps": steps,
        "lr": lr,
        "finished": False,
    }
    record.write_text(json.dumps(figures, indent=1))

    def evaluate() -> dict[str, Any] | None:
        if not held:
            return None
        r = greedy_eval(
            net, tok, held, max_new_tokens=eval_tokens, fast=lean_paths(None, next(net.parameters()).device)
        )
        net.train()
        return r

    def save(step: int, st: dict[str, Any]) -> None:
        trained = {
            k: v for k, v in net.state_dict().items() if not lora_r or "lora_" in k
        }  # LoRA: only the adapters change
        checkpoint.save(out, step, {"model": trained, **st}, keep=1)

    before = evaluate() if state is None else previous.get("before")
    figures["before"] = before
    record.write_text(json.dumps(figures, indent=1))
    console.print(
        f"sft: {model} on {len(train_rows)} rows of {data} for {steps} steps (batch {batch_size}, "
        f"lr {lr:g}{f', LoRA r={lora_r}' if lora_r else ''}); {len(held)} held-out prompts"
        + (f", accuracy before {before['accuracy']:.3f}" if before else "")
    )
    every = eval_every or (max(1, steps // 20) if target is not None else 0)  # a target needs evaluations
    with progress(steps) as bar:
        t = bar.add_task("sft", total=steps, completed=state["step"] if state else 0, info="")

        def on_step(s: int, acc: float, loss: float) -> None:
            bar.update(t, completed=s, info=f"loss {loss:.3f}" + ("" if math.isnan(acc) else f"  held-out {acc:.3f}"))

        res = run_sft(
            net,
            tok,
            epochs_of(train_rows, seed),
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            eval_rows=held if every else None,
            eval_every=every or max(1, steps // 20),
            eval_tokens=eval_tokens,
            target_accuracy=target,
            completion_of=completion_field,
            warmup_steps=max(1, min(50, steps // 10)),
            max_len=max_len,
            on_eval=on_step,
            state=state,
            checkpoint=save,
            checkpoint_every=save_every,
        )
        bar.update(t, completed=steps)
    after = evaluate()
    if lora_r:
        net = net.merge_and_unload()  # OUT is a plain from_pretrained folder
    net.save_pretrained(out)
    tok.save_pretrained(out)
    figures.update(
        before=before,
        after=after,
        evals=res["evals"],
        loss=res["loss"],
        seconds=res["seconds"],
        trained_steps=res["steps"],
        finished=True,
    )
    record.write_text(json.dumps(figures, indent=1))
    shutil.rmtree(out / "checkpoints", ignore_errors=True)
    acc = f", held-out accuracy {before['accuracy']:.3f} -> {after['accuracy']:.3f}" if before and after else ""
    console.print(f"sft: {res['steps']} steps, {res['seconds']:.0f} s, final loss {res['loss']:.3f}{acc} -> {out}")
