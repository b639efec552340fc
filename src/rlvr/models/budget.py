"""How many rows one forward/backward of the update may hold: micro-batches sized by tokens.

A fixed ``algo.micro_batch`` is a row count; the memory a micro-batch needs grows with its rows'
length, so a count that fits short completions runs out of memory on long ones. ``algo.token_budget``
sizes each micro-batch by tokens instead (verl's ``use_dynamic_bsz`` / ``ppo_max_token_len_per_gpu``):
rows x (prompt + completion width) stays within the budget. ``auto`` takes the budget from the
device's free memory and an estimate of what one token's activations cost in the backward
(:func:`activation_bytes_per_token`); on a CPU ``auto`` sets no budget (the whole batch, as before).

The split changes nothing in the gradient: every micro-batch divides by the whole batch's normaliser
(``tests/invariant/test_gradients.py``, budget-split pair).
"""

from __future__ import annotations

from typing import Any

import torch

#: Share of the memory free after the weights, gradients and optimizer state given to activations
#: (the rest: the allocator's fragmentation, the log-prob tiles, the sampler's KV cache between steps).
ACTIVATION_SHARE = 0.5


def activation_bytes_per_token(config: Any, autocast_bf16: bool, param_bytes: int = 4) -> int:
    """An upper estimate of the bytes one token's activations keep for the backward of a decoder:
    per layer ~17 x hidden (attention inputs, q/k/v, its output, two norms; flash/SDPA attention keeps
    no ``[T, T]`` scores) + 6 x intermediate (a gated MLP's input, gate, up and product), in the
    matmuls' precision (Korthikanti et al. 2022's count, for a SwiGLU MLP), x1.5 for the float32 copies
    autocast keeps beside bfloat16 ones, plus the final hidden state."""
    hidden = int(getattr(config, "hidden_size", 0) or getattr(config, "n_embd", 0) or 0)
    layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0) or 0)
    inter = int(getattr(config, "intermediate_size", 0) or 4 * hidden)
    if not hidden or not layers:
        raise ValueError("the model's config names no hidden_size / num_hidden_layers: set algo.token_budget")
    width = 2 if autocast_bf16 else param_bytes
    per_layer = (17 * hidden + 6 * inter) * width
    if autocast_bf16:
        per_layer = per_layer * 3 // 2
    return layers * per_layer + hidden * param_bytes


def auto_token_budget(model: Any, device: torch.device, autocast_bf16: bool, optimizer_ready: bool) -> int | None:
    """The ``auto`` budget: on a GPU, :data:`ACTIVATION_SHARE` of its free memory over
    :func:`activation_bytes_per_token`; None (no budget) elsewhere. Before the first optimizer step
    (``optimizer_ready`` False) the AdamW state it will allocate, two copies of the trained weights,
    is not free memory and is left out."""
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    if not optimizer_ready:
        free -= 2 * sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    p = next(model.parameters())
    per_token = activation_bytes_per_token(model.config, autocast_bf16, p.element_size())
    return max(1, int(max(free, 0) * ACTIVATION_SHARE) // per_token)


def rows_within(budget: int | None, width: int, rows: int, group: int | None = None) -> int:
    """Rows per micro-batch so that rows x ``width`` tokens stay within ``budget`` (at least one; all
    ``rows`` when there is no budget); whole groups of ``group`` rows when at least one group fits."""
    if budget is None:
        return rows
    n = max(1, budget // max(1, width))
    if group and n >= group:
        n -= n % group
    return min(n, rows)
