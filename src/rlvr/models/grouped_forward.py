"""The training forward for GRPO batches, computing each group's shared prompt once.

In a GRPO batch the G completions of a prompt share it token for token, yet a plain
forward runs the prompt G times. Here the prompt stream (``[P, Tp]``) and the
completion stream (``[N = P*G, Tc]``) go through the layers side by side: completion
queries attend to their group's prompt keys/values (repeated, so gradients flow back
to the one prompt computation) and to their own earlier tokens. On the benchmark's
batches (prompt ~10 tokens, completion ~20) this removes about a third of the
forward and backward work. It uses the model's own weights (and transformers'
rotary embedding), so gradients land on the model's parameters; it applies to the
architectures :func:`rlvr.models.fast_decode.supports` accepts, and
``tests/models/test_grouped_forward.py`` checks it against ``model(...)``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import torch
import torch.nn.functional as F


def completion_logits(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    group_size: int,
) -> torch.Tensor:
    """Logits ``[N, Tc, V]`` predicting each completion token, as ``model(prompt + completion)`` would.

    Args:
        prompt_ids: ``[P, Tp]`` one left-padded prompt per group (not repeated).
        prompt_mask: ``[P, Tp]``.
        completion_ids: ``[N, Tc]`` with ``N = P * group_size``, rows grouped by prompt.
    """
    cfg = model.config
    inner = model.model
    nq = cfg.num_attention_heads
    nkv = getattr(cfg, "num_key_value_heads", None) or nq
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // nq
    eps = cfg.rms_norm_eps
    rope = import_module(type(model).__module__).apply_rotary_pos_emb
    p, tp = prompt_ids.shape
    n, tc = completion_ids.shape
    g = group_size
    dev = prompt_ids.device

    pos_p = (prompt_mask.long().cumsum(-1) - 1).clamp(min=0)  # [P, Tp]
    pos_c = pos_p[:, -1:].repeat_interleave(g, 0) + 1 + torch.arange(tc, device=dev)  # [N, Tc]
    valid_p = prompt_mask.bool()
    causal_p = torch.ones(tp, tp, dtype=torch.bool, device=dev).tril()
    mask_p = ((causal_p & valid_p[:, None, :]) | torch.eye(tp, dtype=torch.bool, device=dev))[:, None]
    causal_c = torch.ones(tc, tc, dtype=torch.bool, device=dev).tril()
    mask_c = torch.cat([valid_p.repeat_interleave(g, 0)[:, None, :].expand(n, tc, tp),
                        causal_c.expand(n, tc, tc)], -1)[:, None]  # [N, 1, Tc, Tp + Tc]

    xp = inner.embed_tokens(prompt_ids)
    xc = inner.embed_tokens(completion_ids)
    cos_p, sin_p = inner.rotary_emb(xp, pos_p)
    cos_c, sin_c = inner.rotary_emb(xc, pos_c)
    gqa = nkv != nq

    def split(qkv: torch.Tensor, b: int, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q = qkv[..., : nq * hd].view(b, t, nq, hd).transpose(1, 2)
        k = qkv[..., nq * hd : (nq + nkv) * hd].view(b, t, nkv, hd).transpose(1, 2)
        v = qkv[..., (nq + nkv) * hd :].view(b, t, nkv, hd).transpose(1, 2)
        return q, k, v

    for layer in inner.layers:
        attn, mlp = layer.self_attn, layer.mlp
        w_qkv = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
        b_qkv = (torch.cat([attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias])
                 if attn.q_proj.bias is not None else None)
        w_gu = torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight])
        w_ln1 = layer.input_layernorm.weight
        qp, kp, vp = split(F.linear(F.rms_norm(xp, (xp.shape[-1],), w_ln1, eps), w_qkv, b_qkv), p, tp)
        qc, kc, vc = split(F.linear(F.rms_norm(xc, (xc.shape[-1],), w_ln1, eps), w_qkv, b_qkv), n, tc)
        qp, kp = rope(qp, kp, cos_p, sin_p)
        qc, kc = rope(qc, kc, cos_c, sin_c)
        vp, vc = vp.to(qp.dtype), vc.to(qc.dtype)  # rope promotes q/k under autocast; attention wants one dtype
        op = F.scaled_dot_product_attention(qp, kp, vp, attn_mask=mask_p, enable_gqa=gqa)
        keys = torch.cat([kp.repeat_interleave(g, 0), kc], 2)
        values = torch.cat([vp.repeat_interleave(g, 0), vc], 2)
        oc = F.scaled_dot_product_attention(qc, keys, values, attn_mask=mask_c, enable_gqa=gqa)
        xp = xp + F.linear(op.transpose(1, 2).reshape(p, tp, -1), attn.o_proj.weight, attn.o_proj.bias)
        xc = xc + F.linear(oc.transpose(1, 2).reshape(n, tc, -1), attn.o_proj.weight, attn.o_proj.bias)
        w_ln2 = layer.post_attention_layernorm.weight
        for which in ("p", "c"):
            x = xp if which == "p" else xc
            gate, up = F.linear(F.rms_norm(x, (x.shape[-1],), w_ln2, eps), w_gu).chunk(2, -1)
            x = x + F.linear(F.silu(gate) * up, mlp.down_proj.weight)
            if which == "p":
                xp = x
            else:
                xc = x
    # the token after the prompt is predicted from the prompt's last position
    h = torch.cat([xp[:, -1:].repeat_interleave(g, 0), xc[:, :-1]], 1)  # [N, Tc, H]
    h = F.rms_norm(h, (h.shape[-1],), inner.norm.weight, eps)
    return model.lm_head(h)
