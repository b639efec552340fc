"""Supervised warm-up (``rlvr sft``): teach a model the answer format before RL.

The seeds' R1 pipeline starts RL from a cold-start SFT checkpoint; here the tiny
model learns ``<answer>N</answer>`` on a synthetic task until its held-out greedy
accuracy reaches a target (a *partial* accuracy, so GRPO has something to improve).
The loss is cross-entropy on the completion tokens only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from rlvr.data.prompts import encode
from rlvr.data.tasks import Sample
from rlvr.grpo.evaluate import greedy_eval


def answer_completion(s: Sample) -> str:
    """The target text for a synthetic row: the gold inside answer tags."""
    return f"<answer>{s.gold}</answer>"


def _batch(tok: Any, rows: list[Sample], completion_of: Callable[[Sample], str]) -> tuple[torch.Tensor, ...]:
    prompts = [encode(tok, s.prompt) for s in rows]
    comps = [tok(completion_of(s), add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for s in rows]
    tp, tc = max(map(len, prompts)), max(map(len, comps))
    n = len(rows)
    ids = torch.full((n, tp + tc), tok.pad_token_id, dtype=torch.long)
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
) -> dict[str, Any]:
    """Train until ``steps``, or until held-out accuracy reaches ``target_accuracy``.

    Returns ``{"steps", "accuracy", "loss", "seconds"}``; the model is trained in place.
    """
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98))

    def factor(s: int) -> float:  # linear warm-up, then cosine down to min_lr_ratio
        if s < warmup_steps:
            return (s + 1) / warmup_steps
        prog = min(1.0, (s - warmup_steps) / max(1, steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * prog))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    model.train()
    t0 = time.perf_counter()
    acc, loss_v, step = 0.0, float("nan"), 0
    for step in range(1, steps + 1):
        ids, mask, labels = _batch(tok, [next(rows) for _ in range(batch_size)], completion_of)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                                 ignore_index=-100)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        loss_v = float(loss.detach())
        # once accuracy starts to move, evaluate five times as often: the jump is sudden, and a warm-up
        # meant to stop at a partial accuracy should not overshoot it by much
        every = max(1, eval_every // 5) if acc > 0.02 else eval_every
        if eval_rows and eval_every and step % every == 0:
            acc = greedy_eval(model, tok, eval_rows)["accuracy"]
            model.train()
            if on_eval:
                on_eval(step, acc, loss_v)
            if target_accuracy is not None and acc >= target_accuracy:
                break
        if max_seconds and time.perf_counter() - t0 > max_seconds:
            break
    return {"steps": step, "accuracy": acc, "loss": loss_v, "seconds": time.perf_counter() - t0}
