"""The training forward for GRPO batches, computing each group's shared prompt once.

In a GRPO batch the G completions of a prompt share it token for token, yet a plain
forward runs the prompt G times. Here the prompt stream (``[P, Tp]``) and the
completion stream (``[N = P*G, Tc]``) go through the layers side by side: completion
queries attend to their group's prompt keys/values (repeated, so gradients flow back
to the one prompt computation) and to their own earlier tokens. On the benchmark's
batches (prompt ~10 tokens, completion ~20) this removes about a third of the
forward and backward work. It uses the model's own weights (and transformers'
rotary embedding), so gradients land on the model's parameters. Per-token ops (norms,
projections, rope, MLP) run once over all tokens laid out flat, attention per stream as two
batched matmuls with an additive mask; the last completion token (whose output nothing reads)
is not run, and rows may run in two length buckets (:func:`length_buckets`). It applies to the
architectures :func:`rlvr.models.fast_decode.supports` accepts, and
``tests/models/test_grouped_forward.py`` checks it against ``model(...)``.
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F

from rlvr.models.fast_decode import core_model, effective_weight, fused_projections, rope, signed_sin


def _bias(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean attention mask as an additive one (0 where allowed, -inf elsewhere)."""
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill_(~allowed, float("-inf"))


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor, scale: float) -> torch.Tensor:
    """Softmax attention as two batched matmuls: ``q [B, Tq, nq, D]``, ``k``/``v [B, nkv, Tk, D]``,
    ``bias [B * nkv, (nq/nkv) * Tq, Tk]``; returns ``[B, Tq, nq * D]``.

    The query heads sharing a key/value head are rows of one matmul (grouped-query attention
    without repeating keys). At these sizes this runs forward and backward in about half the
    time of the fused CPU kernel of ``scaled_dot_product_attention``.
    """
    b, tq, nq, d = q.shape
    nkv, tk = k.shape[1], k.shape[2]
    q3 = q.transpose(1, 2).reshape(b * nkv, nq // nkv * tq, d)
    scores = torch.baddbmm(bias, q3, k.reshape(b * nkv, tk, d).transpose(1, 2), alpha=scale)
    o = torch.bmm(torch.softmax(scores, -1), v.reshape(b * nkv, tk, d))
    return o.view(b, nq, tq, d).transpose(1, 2).reshape(b, tq, nq * d)


def length_buckets(lengths: torch.Tensor, min_saving: float = 0.15) -> list[torch.Tensor]:
    """Rows to run together: all of them, or the shorter and the longer ones apart.

    A batch padded to its longest completion wastes most of its tokens when one or two rollouts
    ran to the length limit and the rest stopped early. Splitting the rows at the length that
    minimises ``rows x longest`` over both buckets pays off when it saves at least ``min_saving``
    of the padded tokens (a second bucket costs a second run of every small op).
    """
    n = lengths.shape[0]
    order = torch.argsort(lengths, stable=True)
    ls = lengths[order].tolist()
    whole = n * ls[-1]
    best, k_best = whole, n
    for k in range(1, n):  # bucket A: the k shortest rows; bucket B: the rest
        cost = k * ls[k - 1] + (n - k) * ls[-1]
        if cost < best:
            best, k_best = cost, k
    if k_best == n or whole - best < min_saving * whole:
        return [torch.arange(n, device=lengths.device)]
    return [order[:k_best].sort().values, order[k_best:].sort().values]


def completion_logits(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    group_size: int,
    lengths: torch.Tensor | None = None,
) -> torch.Tensor:
    """Logits ``[N, Tc, V]`` predicting each completion token, as ``model(prompt + completion)`` would
    (the model's head on :func:`completion_hidden`; its arguments)."""
    head = core_model(model).lm_head
    return _assemble(_per_stream(model, prompt_ids, prompt_mask, completion_ids, group_size, lengths), head)


def completion_hidden(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    group_size: int,
    lengths: torch.Tensor | None = None,
) -> torch.Tensor:
    """The final (normed) hidden states ``[N, Tc, H]`` predicting each completion token, as the
    model's decoder would give them for ``prompt + completion``.

    Args:
        prompt_ids: ``[P, Tp]`` one left-padded prompt per group (not repeated).
        prompt_mask: ``[P, Tp]``.
        completion_ids: ``[N, Tc]`` with ``N = P * group_size``, rows grouped by prompt.
        lengths: ``[N]`` tokens per completion whose logits are wanted (its mask's sum). When
            given, rows may run in two length buckets (:func:`length_buckets`) and the states
            past a row's length are left unspecified (zeros past its bucket's longest row).
    """
    return _assemble(_per_stream(model, prompt_ids, prompt_mask, completion_ids, group_size, lengths))


def _assemble(parts: tuple[int, int, list[tuple[torch.Tensor, int, torch.Tensor]]], head: Any = None) -> torch.Tensor:
    """``[N, Tc, .]`` from each bucket's ``(rows, tc, hidden)``, through ``head`` bucket by bucket."""
    n, tc_all, streams = parts
    outs = [(idx, tc, head(h) if head is not None else h) for idx, tc, h in streams]
    if len(outs) == 1 and outs[0][1] == tc_all:
        return outs[0][2]
    full = outs[0][2].new_zeros(n, tc_all, outs[0][2].shape[-1])
    for idx, tc, o in outs:
        full[idx, :tc] = o
    return full


def _per_stream(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    group_size: int,
    lengths: torch.Tensor | None = None,
) -> tuple[int, int, list[tuple[torch.Tensor, int, torch.Tensor]]]:
    """``(N, Tc, [(rows, tc, normed hidden [rows, tc, H]) per length bucket])``."""
    model = core_model(model)  # a LoRA model: its adapted projections enter as W + s * B @ A
    cfg = model.config
    inner = model.model
    nq = cfg.num_attention_heads
    nkv = getattr(cfg, "num_key_value_heads", None) or nq
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // nq
    eps = cfg.rms_norm_eps
    scale = hd**-0.5
    p, tp = prompt_ids.shape
    n, tc_all = completion_ids.shape
    g = group_size
    dev = prompt_ids.device
    rows = nq // nkv  # query heads per key/value head

    dt = inner.embed_tokens.weight.dtype
    pos_p = (prompt_mask.long().cumsum(-1) - 1).clamp(min=0)  # [P, Tp]
    valid_p = prompt_mask.bool()

    def per_head(allowed: torch.Tensor) -> torch.Tensor:  # [B, Tq, Tk] -> [B * nkv, rows * Tq, Tk]
        b, tq, tk = allowed.shape
        return _bias(allowed, dt)[:, None, None].expand(b, nkv, rows, tq, tk).reshape(b * nkv, rows * tq, tk)

    class Stream:
        """Rows run together, padded to their longest: the prompts, or a bucket of completions
        (``idx``: its rows in the batch, ``group``: their prompts, ``tc``: logits per row)."""

        def __init__(
            self,
            ids: torch.Tensor,
            pos: torch.Tensor,
            bias: torch.Tensor,
            idx: torch.Tensor | None = None,
            group: torch.Tensor | None = None,
            tc: int = 0,
        ) -> None:
            self.ids, self.pos, self.bias, self.idx, self.group, self.tc = ids, pos, bias, idx, group, tc
            self.rows, self.len = ids.shape
            self.start = self.end = 0  # its tokens' span in the flat layout

        def view(self, t: torch.Tensor, k: int) -> torch.Tensor:
            """This stream's part of a flat ``[T, k * D]`` (or ``[T, k, D]``) tensor as ``[rows, len, k, D]``."""
            return t[self.start : self.end].view(self.rows, self.len, k, hd)

    causal_p = torch.ones(tp, tp, dtype=torch.bool, device=dev).tril()
    # a padded prompt query may see only itself (an all-masked row gives NaN); its output is unused
    prompts = Stream(
        prompt_ids, pos_p, per_head((causal_p & valid_p[:, None, :]) | torch.eye(tp, dtype=torch.bool, device=dev))
    )

    def completions(idx: torch.Tensor, tc: int) -> Stream:
        # The last completion token is never an input whose output is used (no later query reads
        # its key, no logit is taken after it), so the stream stops one token short.
        m = tc - 1
        group = torch.div(idx, g, rounding_mode="floor")
        causal = torch.ones(m, m, dtype=torch.bool, device=dev).tril()
        allowed = torch.cat([valid_p[group][:, None, :].expand(len(idx), m, tp), causal.expand(len(idx), m, m)], -1)
        return Stream(
            completion_ids[idx, :m],
            pos_p[group, -1:] + 1 + torch.arange(m, device=dev),
            per_head(allowed),
            idx,
            group,
            tc,
        )  # bias: [., Tc-1, Tp + Tc-1]

    if lengths is None:
        streams = [completions(torch.arange(n, device=dev), tc_all)]
    else:
        streams = [completions(b, max(int(lengths[b].max()), 1)) for b in length_buckets(lengths)]
    # Every per-token op (norms, projections, rope, MLP) runs once over all streams' tokens laid
    # out flat; only attention works per stream, on views of the flat tensors.
    everything = [prompts, *streams]
    off = 0
    for st in everything:
        st.start, st.end = off, off + st.rows * st.len
        off = st.end
    x = inner.embed_tokens(torch.cat([st.ids.reshape(-1) for st in everything]))  # [T, C]
    cos, sin = inner.rotary_emb(x[None], torch.cat([st.pos.reshape(-1) for st in everything])[None])
    cos, sin = cos[0, :, None], signed_sin(sin[0])[:, None]  # [T, 1, D]: broadcast over heads

    for layer in inner.layers:
        attn, ff = layer.self_attn, layer.mlp
        w_qkv, b_qkv, w_gu = fused_projections(layer)
        out = F.linear(F.rms_norm(x, (x.shape[-1],), layer.input_layernorm.weight, eps), w_qkv, b_qkv)
        qk = rope(out[:, : (nq + nkv) * hd].view(-1, nq + nkv, hd), cos, sin)
        v = out[:, (nq + nkv) * hd :].to(qk.dtype)  # values in the queries' dtype (autocast)
        # keys/values head-major for the attention matmuls
        qp = prompts.view(qk, nq + nkv)
        kp, vp = qp[:, :, nq:].transpose(1, 2), prompts.view(v, nkv).transpose(1, 2)
        o = [_attend(qp[:, :, :nq], kp, vp, prompts.bias, scale)]
        for st in streams:
            qc = st.view(qk, nq + nkv)
            # completion queries read their group's prompt keys (gathered: gradients flow back to
            # the one prompt computation) and their own earlier tokens
            group = cast(torch.Tensor, st.group)  # a completion stream's: set by completions()
            keys = torch.cat([kp.index_select(0, group), qc[:, :, nq:].transpose(1, 2)], 2)
            values = torch.cat([vp.index_select(0, group), st.view(v, nkv).transpose(1, 2)], 2)
            o.append(_attend(qc[:, :, :nq], keys, values, st.bias, scale))
        x = x + F.linear(
            torch.cat([t.reshape(-1, nq * hd) for t in o]), effective_weight(attn.o_proj), attn.o_proj.bias
        )
        gate, up = F.linear(F.rms_norm(x, (x.shape[-1],), layer.post_attention_layernorm.weight, eps), w_gu).chunk(
            2, -1
        )
        x = x + F.linear(F.silu(gate) * up, effective_weight(ff.down_proj))
    last = x[prompts.start : prompts.end].view(p, tp, -1)[:, -1:]  # each prompt's last position
    per_stream = []
    for st in streams:
        # the first completion token is predicted from the prompt's last position
        h = torch.cat([last.index_select(0, st.group), x[st.start : st.end].view(st.rows, st.len, -1)], 1)
        per_stream.append((cast(torch.Tensor, st.idx), st.tc, F.rms_norm(h, (h.shape[-1],), inner.norm.weight, eps)))
    return n, tc_all, per_stream
