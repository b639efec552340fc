"""Supervised fine-tuning (``rlvr sft``): the cold start before RL, and SFT on verified traces.

Two uses, one loop. The tiny model's warm-up learns ``<answer>N</answer>`` on a synthetic task
until its held-out greedy accuracy reaches a target (a *partial* accuracy, so GRPO has something to
improve). ``rlvr sft OUT --model M --data FILE`` fine-tunes any model on prompt/completion rows
(R1's step 2: the traces ``rlvr sample`` kept). The loss is cross-entropy on the completion tokens
only; the prompt goes through the model's own chat template.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from rlvr.data.prompts import encode
from rlvr.data.tasks import Sample
from rlvr.sampling.evaluate import greedy_eval


def answer_completion(s: Sample) -> str:
    """The target text for a synthetic row: the gold inside answer tags."""
    return f"<answer>{s.gold}</answer>"


def completion_field(s: Sample) -> str:
    """The target text of a supervised row (:mod:`rlvr.data.sft_rows`)."""
    return s.extra["completion"]


def _batch(
    tok: Any, rows: list[Sample], completion_of: Callable[[Sample], str], max_len: int | None = None
) -> tuple[torch.Tensor, ...]:
    prompts = [encode(tok, s.prompt) for s in rows]
    comps = [tok(completion_of(s), add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for s in rows]
    if max_len is not None:  # the prompt is kept whole; a completion past the budget is cut
        comps = [c[: max(1, max_len - len(p))] for p, c in zip(prompts, comps)]
    tp, tc = max(map(len, prompts)), max(map(len, comps))
    n = len(rows)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ids = torch.full((n, tp + tc), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, (p, c) in enumerate(zip(prompts, comps)):
        ids[i, tp - len(p) : tp] = torch.tensor(p)
        ids[i, tp : tp + len(c)] = torch.tensor(c)
        mask[i, tp - len(p) : tp + len(c)] = 1
        labels[i, tp : tp + len(c)] = torch.tensor(c)
    return ids, mask, labels


def sft(
    model: Any,
    tok: Any,
    rows: Iterator[Sample],
    *,
    steps: int = 1000,
    batch_size: int = 64,
    lr: float = 3e-3,
    eval_rows: list[Sample] | None = None,
    eval_every: int = 25,
    target_accuracy: float | None = None,
    completion_of: Callable[[Sample], str] = answer_completion,
    on_eval: Callable[[int, float, float], None] | None = None,
    max_seconds: float | None = None,
    warmup_steps: int = 50,
    min_lr_ratio: float = 0.1,
    max_len: int | None = None,
    eval_tokens: int = 32,
    state: dict[str, Any] | None = None,
    checkpoint: Callable[[int, dict[str, Any]], None] | None = None,
    checkpoint_every: int = 0,
) -> dict[str, Any]:
    """Train until ``steps``, or until held-out accuracy reaches ``target_accuracy``.

    Only parameters that require grad are trained (LoRA adapters, when the model has them).
    ``state``: what ``checkpoint`` was given (``{"step", "optimizer", "scheduler"}``) to resume
    from; ``rows`` must then be the same stream, its first ``step * batch_size`` rows are skipped.
    ``checkpoint(step, state)`` is called every ``checkpoint_every`` steps and at the end.

    Returns ``{"steps", "accuracy", "loss", "seconds", "evals"}`` (``evals``: ``[step, accuracy,
    loss]`` per evaluation); the model is trained in place.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.98))
    dev = next(model.parameters()).device

    def factor(s: int) -> float:  # linear warm-up, then cosine down to min_lr_ratio
        if s < warmup_steps:
            return (s + 1) / warmup_steps
        prog = min(1.0, (s - warmup_steps) / max(1, steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * prog))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    first = 1
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        first = int(state["step"]) + 1
        for _ in range((first - 1) * batch_size):
            next(rows)
    model.train()
    t0 = time.perf_counter()
    acc, loss_v, step = 0.0, float("nan"), first - 1
    evals: list[list[float]] = []

    def save(s: int) -> None:
        if checkpoint is not None:
            checkpoint(s, {"step": s, "optimizer": opt.state_dict(), "scheduler": sched.state_dict()})

    for step in range(first, steps + 1):
        batch = _batch(tok, [next(rows) for _ in range(batch_size)], completion_of, max_len)
        ids, mask, labels = (x.to(dev) for x in batch)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100
        )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        loss_v = float(loss.detach())
        # once accuracy starts to move, evaluate five times as often: the jump is sudden, and a warm-up
        # meant to stop at a partial accuracy should not overshoot it by much
        every = max(1, eval_every // 5) if target_accuracy is not None and acc > 0.02 else eval_every
        if eval_rows and eval_every and (step % every == 0 or step == steps):
            acc = greedy_eval(model, tok, eval_rows, max_new_tokens=eval_tokens)["accuracy"]
            evals.append([step, acc, loss_v])
            model.train()
            if on_eval:
                on_eval(step, acc, loss_v)
            if target_accuracy is not None and acc >= target_accuracy:
                break
        elif on_eval and eval_every and step % eval_every == 0:
            on_eval(step, float("nan"), loss_v)
        if checkpoint_every and step % checkpoint_every == 0 and step < steps:
            save(step)
        if max_seconds and time.perf_counter() - t0 > max_seconds:
            break
    save(step)
    return {"steps": step, "accuracy": acc, "loss": loss_v, "seconds": time.perf_counter() - t0, "evals": evals}
