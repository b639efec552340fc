"""One model measured on the pipeline's held-out set: accuracy, the two deaths, truncation, length.

Greedy decoding, unconstrained (what the model does on its own), each answer judged by its task's
verifier: ``format_deaths`` is the share with no answer to parse, ``verification_deaths`` the share
parsed and wrong.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rlvr.data.tasks import Sample


def measure(model: Any, tokenizer: Any, samples: Sequence[Sample], *, max_new_tokens: int = 32,
            batch_size: int = 64, constrain: Any = None) -> dict[str, Any]:
    """``{"accuracy", "format_deaths", "verification_deaths", "truncated", "mean_tokens", "n", "seconds"}``
    (``constrain``: decode under that :class:`rlvr.decoding.constrain.Constrainer`)."""
    import torch

    from rlvr.data.prompts import encode
    from rlvr.grpo.rollout import generate
    from rlvr.models.device import lean_paths
    from rlvr.verify.registry import verify_with

    t0 = time.perf_counter()
    statuses: Counter[str] = Counter()
    truncated, tokens = 0, 0
    fast = lean_paths(None, next(model.parameters()).device)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(samples), batch_size):
            chunk = samples[i : i + batch_size]
            batch = generate(model, tokenizer, [encode(tokenizer, s.prompt) for s in chunk], group_size=1,
                             max_new_tokens=max_new_tokens, temperature=0.0, fast=fast,
                             constrain=constrain)
            tokens += int(batch.completion_mask.sum())
            for s, text, fin in zip(chunk, batch.texts, batch.finish, strict=True):
                statuses[verify_with(text, s.gold, s.task, timeout=5.0).status.value] += 1
                truncated += fin == "length"
    n = max(len(samples), 1)
    return {"accuracy": statuses["correct"] / n, "format_deaths": statuses["no_answer"] / n,
            "verification_deaths": statuses["wrong"] / n, "truncated": truncated / n, "mean_tokens": tokens / n,
            "n": len(samples), "seconds": time.perf_counter() - t0}
