"""A lean KV-cache forward for Llama-family decoders (Qwen2, Llama, Mistral), used for rollouts.

Sampling calls the model once per generated token; for small models the cost of
such a call through ``transformers`` is mostly per-call machinery (mask building,
cache objects, output records), not arithmetic. This module runs the same
computation on the model's own weights with a preallocated cache and a boolean
padding mask, reusing transformers' rotary-embedding module and
``apply_rotary_pos_emb`` so rope variants stay theirs. Training still uses the
model's own ``forward``. ``tests/models/test_fast_decode.py`` checks the logits
against ``model(...)`` with left padding.

Architectures outside :data:`SUPPORTED` (or with features this path does not
model, such as sliding windows or q/k norms) are refused by :func:`supports`, and
rollouts fall back to the model's own forward with its cache.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

SUPPORTED = ("qwen2", "llama", "mistral")


def supports(model: Any) -> bool:
    """True when :class:`FastDecoder` reproduces ``model``'s forward."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in SUPPORTED:
        return False
    if hasattr(model, "peft_config") or any("lora_" in n for n, _ in model.named_parameters()):
        return False  # adapters live in wrapped modules this path does not call
    if getattr(cfg, "use_sliding_window", False) or getattr(cfg, "sliding_window", None) and cfg.model_type == "mistral":
        return False
    if getattr(cfg, "hidden_act", "silu") != "silu" or getattr(cfg, "mlp_bias", False):
        return False
    layer = model.model.layers[0]
    return not hasattr(layer.self_attn, "q_norm")


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), weight, eps)  # one fused op (the model's RMSNorm is six)


class FastDecoder:
    """Prefill a left-padded prompt batch, then decode one token per call.

    Args:
        model: a supported causal LM (see :func:`supports`).
        batch: number of sequences.
        max_len: prompt length + new tokens (the cache size).
    """

    def __init__(self, model: Any, batch: int, max_len: int) -> None:
        from importlib import import_module

        if not supports(model):
            raise ValueError(f"FastDecoder does not support {type(model).__name__}")
        cfg = model.config
        self.model = model
        self.inner = model.model
        self.layers = list(self.inner.layers)
        self.n_heads = cfg.num_attention_heads
        self.n_kv = getattr(cfg, "num_key_value_heads", None) or self.n_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.n_heads
        self.eps = cfg.rms_norm_eps
        self.rope = import_module(type(model).__module__).apply_rotary_pos_emb
        p = next(model.parameters())
        shape = (len(self.layers), batch, self.n_kv, max_len, self.head_dim)
        self.k = torch.zeros(shape, dtype=p.dtype, device=p.device)
        self.v = torch.zeros(shape, dtype=p.dtype, device=p.device)
        self.valid = torch.zeros(batch, max_len, dtype=torch.bool, device=p.device)
        self.length = 0
        self.next_pos: torch.Tensor | None = None
        self.scale = self.head_dim**-0.5
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]] = {}

    def _fused(self, i: int) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Layer ``i``'s q/k/v and gate/up projections concatenated: fewer, larger matmuls."""
        if i not in self._cache:
            attn, mlp = self.layers[i].self_attn, self.layers[i].mlp
            w = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
            b = (torch.cat([attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias])
                 if attn.q_proj.bias is not None else None)
            self._cache[i] = (w, b, torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]))
        return self._cache[i]

    def _block(self, i: int, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        layer = self.layers[i]
        attn = layer.self_attn
        b, t, _ = x.shape
        hd, nq, nkv = self.head_dim, self.n_heads, self.n_kv
        w_qkv, b_qkv, w_gu = self._fused(i)
        h = _rms(x, layer.input_layernorm.weight, self.eps)
        qkv = F.linear(h, w_qkv, b_qkv)
        q = qkv[..., : nq * hd].view(b, t, nq, hd).transpose(1, 2)
        k = qkv[..., nq * hd : (nq + nkv) * hd].view(b, t, nkv, hd).transpose(1, 2)
        v = qkv[..., (nq + nkv) * hd :].view(b, t, nkv, hd).transpose(1, 2)
        q, k = self.rope(q, k, cos, sin)
        q = q.to(self.k.dtype)  # under autocast the projections are bfloat16; the cache keeps float32
        s = self.length
        self.k[i, :, :, s : s + t] = k
        self.v[i, :, :, s : s + t] = v
        keys, values = self.k[i, :, :, : s + t], self.v[i, :, :, : s + t]
        if t == 1:  # decoding: plain matmuls beat the fused kernel's setup at these sizes
            if nkv != nq:
                keys = keys.repeat_interleave(nq // nkv, 1)
                values = values.repeat_interleave(nq // nkv, 1)
            # one query per row: broadcast-multiply and sum (batched 1 x D matmuls are slower)
            scores = (q * keys).sum(-1) * self.scale  # [B, H, T]
            p = torch.softmax(scores.masked_fill(~mask[:, :, 0], float("-inf")), -1)
            o = (p[..., None] * values).sum(-2, keepdim=True)  # [B, H, 1, D]
        else:
            o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=nkv != nq)
        x = x + F.linear(o.transpose(1, 2).reshape(b, t, -1), attn.o_proj.weight, attn.o_proj.bias)
        h = _rms(x, layer.post_attention_layernorm.weight, self.eps)
        gate, up = F.linear(h, w_gu).chunk(2, -1)
        return x + F.linear(F.silu(gate) * up, layer.mlp.down_proj.weight)

    def _run(self, ids: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor,
             rope: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        x = self.inner.embed_tokens(ids)
        cos, sin = rope if rope is not None else self.inner.rotary_emb(x, pos)
        for i in range(len(self.layers)):
            x = self._block(i, x, cos, sin, mask)
        self.length += ids.shape[1]
        x = _rms(x[:, -1], self.inner.norm.weight, self.eps)
        return self.model.lm_head(x)

    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, V]`` for the next token after left-padded prompts ``ids [B, T]``."""
        t = ids.shape[1]
        am = attention_mask.bool()
        self.valid[:, :t] = am
        pos = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()
        # a padded query may see only itself (an all-masked row would give NaN); its output is never used
        mask = (causal & am[:, None, :]) | torch.eye(t, dtype=torch.bool, device=ids.device)
        self.next_pos = pos[:, -1:] + 1
        # the rotary tables for every position decoding can reach, computed once
        steps = self.k.shape[3] - t
        ahead = self.next_pos + torch.arange(max(steps, 1), device=ids.device)
        x0 = self.inner.embed_tokens(ids[:, :1])
        self._rope_ahead = self.inner.rotary_emb(x0, ahead)
        self._step = 0
        return self._run(ids, pos, mask[:, None])

    def expand(self, times: int) -> None:
        """Repeat every row ``times`` times (after a prefill of each group's prompt once)."""
        self.k = self.k.repeat_interleave(times, 1)
        self.v = self.v.repeat_interleave(times, 1)
        self.valid = self.valid.repeat_interleave(times, 0)
        assert self.next_pos is not None
        self.next_pos = self.next_pos.repeat_interleave(times, 0)
        cos, sin = self._rope_ahead
        self._rope_ahead = (cos.repeat_interleave(times, 0), sin.repeat_interleave(times, 0))

    @torch.no_grad()
    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Append ``tokens [B]`` and return the logits ``[B, V]`` for the token after them."""
        assert self.next_pos is not None, "call prefill first"
        s = self.length
        self.valid[:, s] = True
        mask = self.valid[:, None, None, : s + 1]
        pos = self.next_pos
        self.next_pos = pos + 1
        i = self._step
        self._step += 1
        cos, sin = self._rope_ahead
        return self._run(tokens[:, None], pos, mask, (cos[:, i : i + 1], sin[:, i : i + 1]))
