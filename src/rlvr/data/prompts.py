"""Prompts to token ids: the tokenizer's chat template where it has one."""

from __future__ import annotations

from typing import Any


def render(tokenizer: Any, prompt: Any) -> str:
    """Chat messages through the chat template (with the generation prompt); text as is."""
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return "\n".join(m["content"] for m in prompt) + "\n"


def encode(tokenizer: Any, prompt: Any) -> list[int]:
    """Token ids of a rendered prompt; the tokenizer's own specials (bos) are added unless the
    template already wrote them."""
    text = render(tokenizer, prompt)
    bos = tokenizer.bos_token
    add = not (bos and text.startswith(bos))
    return list(tokenizer(text, add_special_tokens=add)["input_ids"])
