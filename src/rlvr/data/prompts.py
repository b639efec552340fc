"""Prompts to token ids: the tokenizer's chat template where it has one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlvr.errors import DataError


def render(tokenizer: Any, prompt: Any) -> str:
    """Chat messages through the chat template (with the generation prompt); text as is."""
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return "\n".join(m["content"] for m in prompt) + "\n"


def encode(tokenizer: Any, prompt: Any, *, verbose: bool = True) -> list[int]:
    """Token ids of a rendered prompt; the tokenizer's own specials (bos) are added unless the
    template already wrote them. ``verbose=False``: no warning for a prompt past the model's length."""
    text = render(tokenizer, prompt)
    bos = tokenizer.bos_token
    add = not (bos and text.startswith(bos))
    return list(tokenizer(text, add_special_tokens=add, verbose=verbose)["input_ids"])


def check_context(samples: Sequence[Any], tokenizer: Any, context: int | None, reserve: int) -> None:
    """Refuse rows whose prompt leaves fewer than ``reserve`` tokens (the completion's budget) of the
    model's ``context`` (None: no limit known), before a model samples from them: past its
    positions a model fails mid-run, or silently reads garbage.

    Raises:
        DataError: the first such row (its id, its length, the limit) and how many there are.
    """
    if not context:
        return
    budget = context - reserve
    too_long: list[tuple[str, int]] = []
    for s in samples:
        text = render(tokenizer, s.prompt)
        if len(text.encode("utf-8")) + 8 <= budget:  # a token covers at least one byte (+ specials)
            continue
        n = len(encode(tokenizer, s.prompt, verbose=False))  # the error below says it, once
        if n > budget:
            too_long.append((s.id, n))
    if too_long:
        first, n = too_long[0]
        more = f" ({len(too_long)} rows in all)" if len(too_long) > 1 else ""
        raise DataError(
            f"prompt {first}: {n} tokens, and with the {reserve} new tokens of rollout.max_new_tokens it "
            f"passes the model's context of {context}{more}; drop such rows or lower rollout.max_new_tokens"
        )
