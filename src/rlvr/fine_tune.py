"""Supervised fine-tuning of any model on prompt/completion rows, as one run folder: completion-only
loss, the model's chat template, LoRA by option, checkpoints and resume, held-out accuracy with the
verifier. The folder ends as a ``from_pretrained`` folder with ``sft.json`` (the settings and the
figures; its ``finished`` says the run is complete). ``rlvr sft OUT --model M --data FILE`` is its
command; :func:`rlvr.sft.sft` the loop it runs.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlvr.config import LoraConfig, ModelConfig
from rlvr.data.datasets import load_samples
from rlvr.data.sft_rows import load_sft_rows
from rlvr.data.tasks import Sample
from rlvr.errors import ConfigError, DataError
from rlvr.models.device import lean_paths
from rlvr.models.load import load_model, model_source
from rlvr.runs import checkpoint
from rlvr.runtime import setup_torch
from rlvr.sampling import greedy_eval
from rlvr.sft import completion_field
from rlvr.sft import sft as run_sft

SETTINGS_FILE = "sft.json"


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


def _previous(out: Path, settings: dict[str, Any], resume: bool) -> dict[str, Any]:
    """The figures of the run already in ``out`` (``{}`` when it is empty), once it may be resumed:
    ``resume`` asked for and the same settings."""
    record = out / SETTINGS_FILE
    previous = json.loads(record.read_text()) if record.exists() else {}
    if out.exists() and any(out.iterdir()):
        if not resume:
            raise ConfigError(f"{out} is not empty: pass --resume to continue it, or choose another folder")
        changed = {
            k: (previous["settings"].get(k), v)
            for k, v in settings.items()
            if previous and previous["settings"].get(k) != v
        }
        if changed:
            raise ConfigError(
                f"--resume with other settings than {record}: "
                + ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in changed.items())
            )
    return dict(previous)


def _rows(data: str, eval_data: str | None, eval_share: float, seed: int) -> tuple[list[Sample], list[Sample]]:
    """``(training rows, held-out prompts)``: ``eval_data``'s, or ``eval_share`` of ``data``'s prompts."""
    rows = load_sft_rows(data)
    if eval_data:
        train_rows, held = [s for s in rows if s.extra["kept"]], load_samples(eval_data)
    else:
        train_rows, held = split_held_out(rows, eval_share, seed)
    if not train_rows:
        raise DataError(f"{data}: every prompt was held out; lower --eval-share")
    return train_rows, held


def _model_config(spec: str, dtype: str, lora_r: int | None, gradient_checkpointing: bool) -> ModelConfig:
    """The model's settings, checked (``--dtype bfloat16`` without ``--lora-r`` is a ConfigError)."""
    try:
        return ModelConfig(
            name=spec,
            dtype=dtype,
            lora=LoraConfig(r=lora_r, alpha=2 * lora_r) if lora_r else None,
            gradient_checkpointing=gradient_checkpointing,
        )
    except ValidationError as e:
        why = "; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors())
        raise ConfigError(f"model settings: {why}") from None


def fine_tune(
    out: Path,
    *,
    say: Callable[[str], None] = print,
    on_progress: Callable[[int, int, str], None] | None = None,
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
) -> dict[str, Any]:
    """Fine-tune ``model`` on the prompt/completion rows of ``data`` into ``out`` (see the module
    docstring); ``say`` prints a line, ``on_progress(step, steps, info)`` follows the steps.

    Returns:
        The figures written to ``out/sft.json`` (``finished`` True), or the previous ones when the
        folder holds a finished run already.

    Raises:
        ConfigError: settings that cannot run (a folder that is not empty without ``resume``, other
            settings than the run being resumed, a model that cannot load).
        DataError: rows that cannot be trained on.
    """

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
    previous = _previous(out, settings, resume)
    if previous.get("finished"):
        say(f"{out}: finished already ({record}); nothing to do")
        return previous
    train_rows, held = _rows(data, eval_data, eval_share, seed)
    spec = model_source(model)
    cfg = _model_config(spec, dtype, lora_r, gradient_checkpointing)
    if lr is None:
        lr = 3e-3 if spec == "tiny" else (2e-4 if lora_r else 1e-5)
    steps = steps or max(1, math.ceil(epochs * len(train_rows) / batch_size))
    setup_torch(1, seed)
    net, tok = load_model(cfg, seed, device=device)
    state = None
    if resume and (ckpt := checkpoint.latest(out)) is not None:
        state = checkpoint.load(ckpt, map_location="cpu")
        net.load_state_dict(state.pop("model"), strict=False)
        say(f"resuming from step {state['step']} ({ckpt})")
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
    say(
        f"sft: {model} on {len(train_rows)} rows of {data} for {steps} steps (batch {batch_size}, "
        f"lr {lr:g}{f', LoRA r={lora_r}' if lora_r else ''}); {len(held)} held-out prompts"
        + (f", accuracy before {before['accuracy']:.3f}" if before else "")
    )
    every = eval_every or (max(1, steps // 20) if target is not None else 0)  # a target needs evaluations
    if on_progress is not None:
        on_progress(state["step"] if state else 0, steps, "")

    def on_step(s: int, acc: float, loss: float) -> None:
        if on_progress is not None:
            on_progress(s, steps, f"loss {loss:.3f}" + ("" if math.isnan(acc) else f"  held-out {acc:.3f}"))

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
    say(f"sft: {res['steps']} steps, {res['seconds']:.0f} s, final loss {res['loss']:.3f}{acc} -> {out}")
    return figures
