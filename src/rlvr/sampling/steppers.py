"""The model's forward as a decoder steps it: prefill the prompts, then one (or a few) tokens a row
at a time against its KV cache. :class:`HFStepper` runs any causal LM through its own forward;
Llama-family models take :class:`rlvr.models.fast_decode.FastDecoder` (the same two calls, plus
``keep`` to drop rows that ended). :func:`stop_ids_of`: the ids a completion ends on."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

import torch


class HFStepper:
    """The model's own forward with its KV cache (any causal LM); under autocast for a ``dtype``
    other than the weights'."""

    def __init__(self, model: Any, dtype: torch.dtype | None = None) -> None:
        self.model = model
        p = next(model.parameters())
        self.precision = (
            torch.autocast(p.device.type, dtype=dtype)
            if dtype is not None and dtype != p.dtype
            else contextlib.nullcontext()
        )
        self.cache: Any = None
        self.mask: torch.Tensor | None = None
        self.next_pos: torch.Tensor | None = None
        self.key = "cache"

    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        from transformers import DynamicCache  # transformers is heavy: imported when a model decodes

        self.cache = DynamicCache()
        # transformers 5 renamed past_key_values to cache; accept either spelling of the model's forward
        self.key = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
        with self.precision:
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, **{self.key: self.cache}
            )
        self.mask, self.next_pos = mask, pos[:, -1:] + 1
        return out.logits[:, -1].float()

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, counts: torch.Tensor | None = None) -> torch.Tensor:
        """As :meth:`rlvr.models.fast_decode.FastDecoder.step`: ``tokens [B]``, or ``[B, K]`` with
        ``counts`` (each row's first ``counts[b]`` are real, the rest masked out for good)."""
        assert self.mask is not None and self.next_pos is not None
        if tokens.dim() == 1:
            tokens = tokens[:, None]
        k = tokens.shape[1]
        counts = counts if counts is not None else torch.full_like(tokens[:, 0], k)
        ahead = torch.arange(k, device=tokens.device)
        self.mask = torch.cat([self.mask, (ahead[None] < counts[:, None]).to(self.mask.dtype)], 1)
        with self.precision:
            out = self.model(
                input_ids=tokens,
                attention_mask=self.mask,
                position_ids=self.next_pos + ahead,
                use_cache=True,
                **{self.key: self.cache},
            )
        self.next_pos = self.next_pos + counts[:, None]
        return out.logits[torch.arange(len(tokens), device=tokens.device), counts - 1].float()


def stop_ids_of(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """Every token id a completion ends on: the tokenizer's eos and each id the model's generation
    config lists (Qwen2.5-Instruct ends on ``<|im_end|>`` and also ``<|endoftext|>``), as TRL and
    ``generate`` stop on them.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> stop_ids_of(NS(generation_config=NS(eos_token_id=[7, 3])), NS(eos_token_id=3))
        (3, 7)
    """
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    declared = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(declared, int):
        ids.add(declared)
    elif declared:
        ids.update(int(i) for i in declared)
    return tuple(sorted(ids))
