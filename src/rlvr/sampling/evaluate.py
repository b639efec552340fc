"""Held-out greedy accuracy: decode each prompt once (temperature 0) and verify."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from rlvr.data.prompts import encode
from rlvr.data.tasks import Sample
from rlvr.rewards.base import prompt_text
from rlvr.sampling.decode import generate
from rlvr.verify.registry import verify_with


def greedy_eval(
    model: Any,
    tokenizer: Any,
    samples: Sequence[Sample],
    *,
    max_new_tokens: int = 32,
    batch_size: int = 100,
    fast: bool = True,
    constrain: Any = None,
    turns_for: Callable[[list[Sample]], tuple[Any, list[list[int]]]] | None = None,
    examples: int = 0,
) -> dict[str, Any]:
    """``{"accuracy", "statuses": {status: share}, "truncated", "mean_tokens", "n"}`` on ``samples``
    (``constrain``: decode under that :class:`rlvr.decoding.constrain.Constrainer`).

    ``turns_for(chunk) -> (turns, prompt ids)``: each sample is an episode with tools
    (:class:`rlvr.sampling.turns.Turns`); the result then also has ``tool_calls`` (calls per episode),
    ``tool_rate`` (the share of episodes that called a tool) and ``episode_causes`` (the share of
    each episode cause: turn limit, an environment fault...); ``mean_tokens`` counts the policy's own.
    ``examples``: keep the first that many answers as ``examples`` (``{"id", "completion", "status"}``),
    to read what the accuracy is made of (a policy that found a way round the verifier shows there).
    """
    statuses: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    truncated = tokens = calls = called = 0
    kept: list[dict[str, str]] = []
    for i in range(0, len(samples), batch_size):
        chunk = list(samples[i : i + batch_size])
        turns, prompts = (
            turns_for(chunk) if turns_for is not None else (None, [encode(tokenizer, s.prompt) for s in chunk])
        )
        batch = generate(
            model,
            tokenizer,
            prompts,
            group_size=1,
            max_new_tokens=max_new_tokens,
            temperature=0.0,
            fast=fast,
            constrain=constrain,
            turns=turns,
        )
        tokens += int(batch.loss_mask.sum())
        for j, (s, text, fin) in enumerate(zip(chunk, batch.texts, batch.finish)):
            ep = batch.episodes[j] if batch.episodes is not None else None
            if ep is not None and (why := ep.cause()) is not None:  # no answer to judge
                causes[why.value] += 1
                statuses[why.value] += 1
            elif ep is not None and ep.reward is not None:
                statuses["correct" if ep.reward > 0 else "wrong"] += 1
            else:
                status = verify_with(text, s.gold, s.task, timeout=5.0, question=prompt_text(s.prompt)).status.value
                statuses[status] += 1
                if len(kept) < examples:
                    kept.append({"id": str(s.id), "completion": text, "status": status})
            truncated += fin == "length"
            if ep is not None:
                calls += len(ep.calls())
                called += bool(ep.calls())
    n = max(len(samples), 1)
    out = {
        "accuracy": statuses["correct"] / n,
        "statuses": {k: v / n for k, v in statuses.items()},
        "truncated": truncated / n,
        "mean_tokens": tokens / n,
        "n": len(samples),
    }
    if examples:
        out["examples"] = kept
    if turns_for is not None:
        out.update(
            {"tool_calls": calls / n, "tool_rate": called / n, "episode_causes": {k: v / n for k, v in causes.items()}}
        )
    return out
