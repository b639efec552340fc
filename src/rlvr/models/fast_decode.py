"""A lean KV-cache forward for Llama-family decoders (Qwen2, Llama, Mistral), used for rollouts.

Sampling calls the model once per generated token; for small models the cost of
such a call through ``transformers`` is mostly per-call machinery (mask building,
cache objects, output records), not arithmetic. This module runs the same
computation on the model's own weights (q/k/v and gate/up projections fused,
RMSNorm weights folded into the projection after them) with a preallocated
cache and an additive padding mask; the rotary tables come from the model's own
rotary-embedding module, so rope variants stay theirs. ``tests/models/test_fast_decode.py`` checks the logits
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
#: Attention work per (row, kv head) from which a decoding step uses batched matmuls instead of
#: multiply-and-sum: ~4x faster for SmolLM2's heads (3 queries per kv head, 64 dims) over 170
#: positions, slower for the tiny model's single 32-dim query over the few positions it reaches.
BMM_AT = 4096


def core_model(model: Any) -> Any:
    """The causal LM itself: a peft model's base (its layers still LoRA-wrapped), else ``model``."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if hasattr(model, "peft_config") and get_base is not None else model


def _plain_lora(module: Any) -> bool:
    """A peft LoRA linear whose effect is ``W + scale * B @ A``: no DoRA, no fan-in/fan-out flip, no
    dropout (with dropout the adapter's input differs from the base's and no merged weight is equal)."""
    return (
        hasattr(module, "base_layer")
        and hasattr(module, "lora_A")
        and not any(getattr(module, "use_dora", {}).values())
        and not getattr(module, "fan_in_fan_out", False)
        and all(isinstance(d, torch.nn.Identity) for d in getattr(module, "lora_dropout", {}).values())
    )


def effective_weight(linear: Any) -> torch.Tensor:
    """A linear layer's weight as its forward applies it: a LoRA-wrapped layer's active adapters
    merged in (``W + scale * B @ A``), computed, the module left as it is."""
    if not hasattr(linear, "base_layer"):
        return linear.weight
    w = linear.base_layer.weight
    if getattr(linear, "disable_adapters", False) or getattr(linear, "merged", False):
        return w
    for name in linear.active_adapters:
        if name in linear.lora_A:
            a, b = linear.lora_A[name].weight, linear.lora_B[name].weight
            w = w + (b @ a).to(w.dtype) * linear.scaling[name]
    return w


def supports(model: Any, *, lora: bool = False) -> bool:
    """True when :class:`FastDecoder` (and the grouped training forward) reproduce ``model``'s
    forward. ``lora``: LoRA-wrapped projections count: both use the merged weight ``W + s * B @ A``
    (differentiable, so the training forward's gradients reach the adapters)."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in SUPPORTED:
        return False
    sliding = getattr(cfg, "sliding_window", None) and cfg.model_type == "mistral"
    if getattr(cfg, "use_sliding_window", False) or sliding:
        return False
    if getattr(cfg, "hidden_act", "silu") != "silu" or getattr(cfg, "mlp_bias", False):
        return False
    core = core_model(model)
    if hasattr(core.model.layers[0].self_attn, "q_norm"):
        return False
    wrapped = [m for m in core.modules() if hasattr(m, "lora_A")]
    if not wrapped and not hasattr(model, "peft_config"):
        return True
    # adapters: only as merged weights, and only on the decoder layers' projections
    return (
        lora
        and all(map(_plain_lora, wrapped))
        and not any(hasattr(m, "lora_A") for m in (core.lm_head, core.model.embed_tokens))
    )


def _rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm without its weight (folded into the projection that follows)."""
    return F.rms_norm(x, (x.shape[-1],), None, eps)


def rope(x: torch.Tensor, cos: torch.Tensor, sin_signed: torch.Tensor) -> torch.Tensor:
    """transformers' ``x * cos + rotate_half(x) * sin`` in three ops.

    ``rotate_half(x) * sin == roll(x, D/2) * [-sin[:D/2], sin[D/2:]]``; the signed sine is built
    once per batch by :func:`signed_sin`. ``cos``/``sin`` come from the model's own rotary module,
    so its rope variant (scaling, theta) is kept.
    """
    return torch.addcmul(x * cos, x.roll(x.shape[-1] // 2, -1), sin_signed)


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    half = sin.shape[-1] // 2
    return torch.cat([-sin[..., :half], sin[..., half:]], -1)


def fused_projections(layer: Any) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """A decoder layer's q/k/v weights (and bias) and gate/up weights, each concatenated into one
    matrix: fewer, larger matmuls. Differentiable: gradients reach the layer's own parameters."""
    attn, mlp = layer.self_attn, layer.mlp
    w = effective_weight
    w_qkv = torch.cat([w(attn.q_proj), w(attn.k_proj), w(attn.v_proj)])
    b_qkv = torch.cat([attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias]) if attn.q_proj.bias is not None else None
    return w_qkv, b_qkv, torch.cat([w(mlp.gate_proj), w(mlp.up_proj)])


class FastDecoder:
    """Prefill a left-padded prompt batch, then decode one token per call.

    The key/value cache of layer ``i`` is time-major, ``[max_len, batch * kv_heads, head_dim]``:
    a step appends one contiguous block, and attention reads the filled prefix as one sequential
    stream. Decoding is memory-bound there: with a row-major cache, reading 256 separate
    (row, head) blocks took about twice as long once the cache had left the CPU caches. Query heads
    sharing a key/value head read it without repeating the cache (grouped-query attention).
    Padding and not-yet-written positions carry ``-inf`` in an additive mask.

    Args:
        model: a supported causal LM (see :func:`supports`).
        batch: number of sequences decoded.
        max_len: prompt length + new tokens (the cache size).
        dtype: the precision to decode in (default: the model's). ``torch.bfloat16`` keeps a
            bfloat16 copy of the (fused, folded) weights and activations: on CPUs with AVX512-BF16 /
            AMX and on GPUs its matrix products run several times faster. The cache, attention and
            the logits handed to sampling stay in the model's precision.
        static: a one-token step has the same shapes at every position (a static cache): it writes
            its slot through a device-side index and attends over the whole cache, the slots not yet
            written masked, so nothing in it depends on a host-side length and the step can be
            captured once and replayed (a CUDA graph); its logits are the dynamic step's. On a CPU it
            costs more (attention over every slot), so it is not the default there.
    """

    def __init__(
        self, model: Any, batch: int, max_len: int, dtype: torch.dtype | None = None, *, static: bool = False
    ) -> None:
        if not supports(model, lora=True):
            raise ValueError(f"FastDecoder does not support {type(model).__name__}")
        model = core_model(model)  # LoRA adapters are merged into the folded weights below
        cfg = model.config
        self.model = model
        self.inner = model.model
        self.layers = list(self.inner.layers)
        self.n_heads = cfg.num_attention_heads
        self.n_kv = getattr(cfg, "num_key_value_heads", None) or self.n_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.n_heads
        self.eps = cfg.rms_norm_eps
        self.batch, self.max_len = batch, max_len
        p = next(model.parameters())
        self.dtype = dtype or p.dtype
        shape = (max_len, batch * self.n_kv, self.head_dim)
        # zeros, not empty: no slower here, and a bug can never read uninitialised memory
        # the cache in the model's precision: attention over it is elementwise work and batched
        # matmuls, which run faster in float32 than in bfloat16 on CPU
        self.k = [torch.zeros(shape, dtype=p.dtype, device=p.device) for _ in self.layers]
        self.v = [torch.zeros(shape, dtype=p.dtype, device=p.device) for _ in self.layers]
        # additive attention mask per (position, row x kv head): 0 where a key may be read, -inf elsewhere
        self.bias = torch.full((max_len, batch * self.n_kv, 1), float("-inf"), dtype=torch.float32, device=p.device)
        self.length = 0
        self.static = static
        self._slot = torch.zeros(1, dtype=torch.long, device=p.device)  # == length, on the device (static steps)
        self._rope_ahead: tuple[torch.Tensor, torch.Tensor] | None = None  # set by prefill
        self.scale = self.head_dim**-0.5
        with torch.no_grad():
            cast = (lambda w: w) if self.dtype == p.dtype else (lambda w: None if w is None else w.to(self.dtype))
            self.weights: list[tuple[Any, ...]] = [tuple(map(cast, self._fold(layer))) for layer in self.layers]
            # the final norm's weight folded into the output projection (one multiply fewer per step)
            self.w_out: Any = cast(model.lm_head.weight * self.inner.norm.weight)
        self.b_out = getattr(model.lm_head, "bias", None)
        if self.b_out is not None:
            self.b_out = self.b_out.to(self.dtype)

    @staticmethod
    def _fold(
        layer: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
        """A layer's projections fused (q/k/v, gate/up) with the preceding RMSNorm weights folded in:
        ``linear(norm(x) * w, W) == linear(norm(x), W * w)``."""
        w_qkv, b_qkv, w_gu = fused_projections(layer)
        attn = layer.self_attn
        return (
            w_qkv * layer.input_layernorm.weight,
            b_qkv,
            effective_weight(attn.o_proj),
            attn.o_proj.bias,
            w_gu * layer.post_attention_layernorm.weight,
            effective_weight(layer.mlp.down_proj),
        )

    def _qkv(
        self, i: int, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Roped queries ``[..., nq, D]``, roped keys and values ``[..., nkv, D]`` for ``x [..., C]``."""
        nq, nkv, hd = self.n_heads, self.n_kv, self.head_dim
        w_qkv, b_qkv = self.weights[i][:2]
        qkv = F.linear(_rms(x, self.eps), w_qkv, b_qkv)
        lead = qkv.shape[:-1]
        qk = rope(qkv[..., : (nq + nkv) * hd].view(*lead, nq + nkv, hd), cos, sin)
        v = qkv[..., (nq + nkv) * hd :].view(*lead, nkv, hd)
        return qk[..., :nq, :], qk[..., nq:, :], v

    def _mlp(self, i: int, x: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
        _, _, w_o, b_o, w_gu, w_down = self.weights[i]
        x = x + F.linear(o, w_o, b_o)
        gate, up = F.linear(_rms(x, self.eps), w_gu).chunk(2, -1)
        return x + F.linear(F.silu(gate) * up, w_down)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(_rms(x, self.eps), self.w_out, self.b_out).float()

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.inner.embed_tokens(ids).to(self.dtype)

    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, attention_mask: torch.Tensor, repeat: int = 1) -> torch.Tensor:
        """Logits ``[P, V]`` for the next token after left-padded prompts ``ids [P, T]``.

        With ``repeat > 1`` each prompt's cache fills ``repeat`` consecutive rows (``P * repeat``
        must be the decoder's batch): a group's shared prompt is computed once.
        """
        p, t = ids.shape
        if p * repeat != self.batch:
            raise ValueError(f"prefill of {p} prompts x {repeat} does not fill a batch of {self.batch}")
        nkv, hd = self.n_kv, self.head_dim
        am = attention_mask.bool()
        pos = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()
        # a padded query may see only itself (an all-masked row would give NaN); its output is never used
        mask = ((causal & am[:, None, :]) | torch.eye(t, dtype=torch.bool, device=ids.device))[:, None]
        visible = torch.where(am, 0.0, float("-inf")).t()[:, :, None, None]  # [T, P, 1, 1]
        self.bias[:t].view(t, p, repeat, nkv).copy_(visible.expand(t, p, repeat, nkv))
        x = self._embed(ids)
        cos, sin = self.inner.rotary_emb(x, pos)
        cos, sin = cos[:, :, None].to(x.dtype), signed_sin(sin)[:, :, None].to(x.dtype)  # [P, T, 1, D]
        for i in range(len(self.layers)):
            q, k, v = self._qkv(i, x, cos, sin)  # [P, T, heads, D]
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2).to(q.dtype)
            for cache, new in ((self.k[i], k), (self.v[i], v)):  # each prompt's rows written `repeat` times
                rows = new.permute(2, 0, 1, 3)[:, :, None]  # [T, P, 1, nkv, D]
                cache[:t].view(t, p, repeat, nkv, hd).copy_(rows.expand(t, p, repeat, nkv, hd))
            o = F.scaled_dot_product_attention(q, k.to(q.dtype), v, attn_mask=mask, enable_gqa=nkv != self.n_heads)
            x = self._mlp(i, x, o.transpose(1, 2).reshape(p, t, -1))
        self.length = t
        self._slot.fill_(t)
        next_pos = (pos[:, -1:] + 1).repeat_interleave(repeat, 0)
        # the rotary tables for every position decoding can reach, computed once
        ahead = next_pos + torch.arange(max(self.max_len - t, 1), device=ids.device)
        cos, sin = self.inner.rotary_emb(x[:1, :1].expand(self.batch, 1, -1), ahead)
        self._rope_ahead = (cos[:, :, None].to(self.dtype), signed_sin(sin)[:, :, None].to(self.dtype))  # [B, n, 1, D]
        self._pos = torch.zeros(self.batch, dtype=torch.long, device=ids.device)  # tokens each row has been fed
        return self._logits(x[:, -1])

    def keep(self, rows: torch.Tensor) -> None:
        """Go on with only ``rows`` (indices into the current batch), e.g. those that have not ended."""
        b, nkv = self.batch, self.n_kv

        def take(t: torch.Tensor) -> torch.Tensor:  # rows of a [max_len, batch * nkv, ...] tensor
            return t.view(t.shape[0], b, nkv, *t.shape[2:]).index_select(1, rows).view(t.shape[0], -1, *t.shape[2:])

        self.k, self.v, self.bias = [take(k) for k in self.k], [take(v) for v in self.v], take(self.bias)
        assert self._rope_ahead is not None, "call prefill first"
        cos, sin = self._rope_ahead
        self._rope_ahead = (cos[rows], sin[rows])
        self._pos = self._pos[rows]
        self.batch = len(rows)

    def _room(self, k: int) -> None:
        """Make the cache hold ``k`` more slots: a multi-token step writes ``k`` slots for every row,
        so slots can outrun the tokens a row was fed (the unused ones stay masked)."""
        need = self.length + k
        if need <= self.k[0].shape[0]:
            return
        extra = max(need, 2 * self.k[0].shape[0]) - self.k[0].shape[0]

        def grow(t: torch.Tensor, fill: float) -> torch.Tensor:
            return torch.cat([t, torch.full((extra, *t.shape[1:]), fill, dtype=t.dtype, device=t.device)])

        self.k, self.v = [grow(t, 0.0) for t in self.k], [grow(t, 0.0) for t in self.v]
        self.bias = grow(self.bias, float("-inf"))

    def _rope_at(self, offsets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The rotary tables at each row's position + ``offsets [K]``: ``[B, K, 1, D]`` each."""
        assert self._rope_ahead is not None, "call prefill first"
        cos, sin = self._rope_ahead
        at = (self._pos[:, None] + offsets).clamp(max=cos.shape[1] - 1)  # a row's unused slots: any position
        rows = torch.arange(self.batch, device=at.device)[:, None]
        return cos[rows, at], sin[rows, at]

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, counts: torch.Tensor | None = None) -> torch.Tensor:
        """Append ``tokens [B]`` and return the logits ``[B, V]`` for the token after them.

        ``tokens [B, K]`` with ``counts [B]`` (1 <= count <= K) feeds row ``b`` its first ``counts[b]``
        tokens in one forward (tokens decoding already knows, e.g. those a grammar forces) and
        returns the logits after each row's last one; rows may then be at different positions.
        """
        if tokens.dim() == 2:
            return self._step_many(
                tokens, counts if counts is not None else torch.full_like(tokens[:, 0], tokens.shape[1])
            )
        if self.static:
            return self._step_static(tokens)
        b, nq, nkv, hd = self.batch, self.n_heads, self.n_kv, self.head_dim
        self._room(1)
        s = self.length
        self.bias[s] = 0.0
        bias = self.bias[: s + 1, :, None]  # [T, B*nkv, 1, 1]
        cos, sin = self._rope_at(torch.zeros(1, dtype=torch.long, device=tokens.device))
        cos, sin = cos[:, 0], sin[:, 0]  # [B, 1, D]
        x = self._embed(tokens)  # [B, C]
        for i in range(len(self.layers)):
            q, k, v = self._qkv(i, x, cos, sin)  # [B, heads, D]
            q = q.to(self.k[i].dtype)  # bfloat16 projections (autocast, or a bfloat16 decoder); the cache keeps its own
            self.k[i][s] = k.reshape(b * nkv, hd)
            self.v[i][s] = v.reshape(b * nkv, hd)
            keys, values = self.k[i][: s + 1], self.v[i][: s + 1]  # [T, B*nkv, D]
            qh = q.reshape(b * nkv, nq // nkv, hd)  # each key/value head's query heads as rows
            if (s + 1) * qh.shape[1] * hd >= BMM_AT:  # batched matmuls over the cache, read in place
                with torch.autocast(keys.device.type, enabled=False):  # in the cache's precision, not autocast's
                    scores = torch.bmm(qh, keys.permute(1, 2, 0))  # [B*nkv, g, T]
                    p = torch.softmax(scores.mul_(self.scale).add_(bias.permute(1, 2, 0, 3)[..., 0]), -1)
                    o = torch.bmm(p, values.transpose(0, 1))  # [B*nkv, g, D]
            else:  # small heads over a short prefix: multiply-and-sum streams the cache in order, faster there
                scores = (keys[:, :, None] * qh[None]).sum(-1, keepdim=True)  # [T, B*nkv, g, 1]
                p = torch.softmax(scores.mul_(self.scale).add_(bias), 0)
                o = (p * values[:, :, None]).sum(0)  # [B*nkv, g, D]
            o = o.to(self.dtype)
            x = self._mlp(i, x, o.view(b, nq * hd))
        self.length = s + 1  # (a static decoder never steps here: its _slot needs no update)
        self._pos += 1
        return self._logits(x)

    def _step_static(self, tokens: torch.Tensor) -> torch.Tensor:
        """:meth:`step` for one token a row with the same shapes at every position (see ``static``):
        the slot is ``self._slot`` (a device tensor), attention runs over every slot of the cache."""
        self._room(1)  # a no-op unless a multi-token step filled the cache (the shapes then change once)
        logits = self.static_core(tokens)
        self.length += 1
        return logits

    def static_core(self, tokens: torch.Tensor) -> torch.Tensor:
        """The static step's device work alone (nothing on the host changes, nothing is read from
        it): what a CUDA graph captures (:mod:`rlvr.models.graphed`). The caller keeps ``length``
        and the cache's room."""
        b, nq, nkv, hd = self.batch, self.n_heads, self.n_kv, self.head_dim
        slot = self._slot
        self.bias.index_fill_(0, slot, 0.0)
        bias = self.bias.permute(1, 2, 0)  # [B*nkv, 1, L]
        cos, sin = self._rope_at(torch.zeros(1, dtype=torch.long, device=tokens.device))
        cos, sin = cos[:, 0], sin[:, 0]  # [B, 1, D]
        x = self._embed(tokens)  # [B, C]
        for i in range(len(self.layers)):
            q, k, v = self._qkv(i, x, cos, sin)  # [B, heads, D]
            keys, values = self.k[i], self.v[i]  # [L, B*nkv, D]: the whole cache
            keys.index_copy_(0, slot, k.reshape(1, b * nkv, hd).to(keys.dtype))
            values.index_copy_(0, slot, v.reshape(1, b * nkv, hd).to(values.dtype))
            qh = q.to(keys.dtype).reshape(b * nkv, nq // nkv, hd)  # each key/value head's query heads as rows
            with torch.autocast(keys.device.type, enabled=False):  # in the cache's precision, not autocast's
                scores = torch.bmm(qh, keys.permute(1, 2, 0))  # [B*nkv, g, L]
                p = torch.softmax(scores.mul_(self.scale).add_(bias), -1)
                o = torch.bmm(p, values.transpose(0, 1))  # [B*nkv, g, D]
            x = self._mlp(i, x, o.to(self.dtype).view(b, nq * hd))
        self._slot.add_(1)
        self._pos.add_(1)
        return self._logits(x)

    def unstep_static(self) -> None:
        """Undo a :meth:`static_core` run (a warm-up before a capture): the counters back, its slot
        masked again. Its key and value stay in that slot, which the next step overwrites."""
        self._slot.sub_(1)
        self._pos.sub_(1)
        self.bias.index_fill_(0, self._slot, float("-inf"))

    def _step_many(self, tokens: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """:meth:`step` for ``K`` tokens per row: ``K`` cache slots for every row, a row's slots past
        its count masked for good; each query sees the cache and the new slots up to its own."""
        b, k = tokens.shape
        nq, nkv, hd = self.n_heads, self.n_kv, self.head_dim
        g = nq // nkv
        dev = tokens.device
        self._room(k)
        s = self.length
        j = torch.arange(k, device=dev)
        valid = j[None, :] < counts[:, None]  # [B, K]
        self.bias[s : s + k] = torch.where(valid, 0.0, float("-inf")).t().repeat_interleave(nkv, 1)[..., None]
        t = s + k
        # query j sees the cache and new slots s..s+j (each row's own validity is in the bias)
        causal = torch.zeros(k, t, device=dev)
        causal[:, s:] = torch.full((k, k), float("-inf"), device=dev).triu(1)
        bias = self.bias[:t, :, 0].t()[:, None, None, :] + causal[None, :, None, :]  # [B*nkv, K, 1, T]
        # the projections and the MLP run on the real tokens only (packed); attention on the [B, K] grid
        cos, sin = (c_[valid] for c_ in self._rope_at(j))  # [M, 1, D]
        x = self._embed(tokens[valid])  # [M, C]
        for i in range(len(self.layers)):
            q, kk, v = self._qkv(i, x, cos, sin)  # [M, heads, D]
            grid = []
            for new, heads in ((q.to(self.k[i].dtype), nq), (kk, nkv), (v, nkv)):
                full = new.new_zeros(b, k, heads, hd)
                full[valid] = new
                grid.append(full)
            q_g, k_g, v_g = grid
            self.k[i][s:t] = k_g.transpose(0, 1).reshape(k, b * nkv, hd)
            self.v[i][s:t] = v_g.transpose(0, 1).reshape(k, b * nkv, hd)
            keys, values = self.k[i][:t], self.v[i][:t]  # [T, B*nkv, D]
            qh = q_g.view(b, k, nkv, g, hd).permute(0, 2, 1, 3, 4).reshape(b * nkv, k * g, hd)
            with torch.autocast(keys.device.type, enabled=False):
                scores = torch.bmm(qh, keys.permute(1, 2, 0)).view(b * nkv, k, g, t)
                p = torch.softmax(scores.mul_(self.scale).add_(bias), -1).view(b * nkv, k * g, t)
                o = torch.bmm(p, values.transpose(0, 1))  # [B*nkv, K*g, D]
            o = o.view(b, nkv, k, g, hd).permute(0, 2, 1, 3, 4).reshape(b, k, nq * hd)[valid].to(self.dtype)
            x = self._mlp(i, x, o)
        self.length = t
        self._slot.fill_(t)
        self._pos += counts
        last = counts.cumsum(0) - 1  # each row's last real token among the packed ones
        return self._logits(x[last])
