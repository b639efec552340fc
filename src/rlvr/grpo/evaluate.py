"""Held-out greedy accuracy: decode each prompt once (temperature 0) and verify."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rlvr.data.prompts import encode
from rlvr.data.tasks import Sample
from rlvr.grpo.rollout import generate
from rlvr.verify.registry import verify


def greedy_eval(model: Any, tokenizer: Any, samples: Sequence[Sample], *, max_new_tokens: int = 32,
                batch_size: int = 100, fast: bool = True, constrain: Any = None) -> dict[str, Any]:
    """``{"accuracy", "statuses": {status: share}, "truncated", "mean_tokens", "n"}`` on ``samples``
    (``constrain``: decode under that :class:`rlvr.decoding.constrain.Constrainer`)."""
    statuses: Counter[str] = Counter()
    truncated = tokens = 0
    for i in range(0, len(samples), batch_size):
        chunk = samples[i : i + batch_size]
        batch = generate(model, tokenizer, [encode(tokenizer, s.prompt) for s in chunk], group_size=1,
                         max_new_tokens=max_new_tokens, temperature=0.0, fast=fast,
                         constrain=constrain)
        tokens += int(batch.completion_mask.sum())
        for s, text, fin in zip(chunk, batch.texts, batch.finish):
            statuses[verify(text, s.gold, s.task, timeout=5.0).status.value] += 1
            truncated += fin == "length"
    n = max(len(samples), 1)
    return {"accuracy": statuses["correct"] / n, "statuses": {k: v / n for k, v in statuses.items()},
            "truncated": truncated / n, "mean_tokens": tokens / n, "n": len(samples)}
