"""Per-token log-probs of sampled completions from the model's final hidden states.

The update needs ``log softmax(lm_head(h) / T)`` at one token per completion position. Built the
plain way, the logits of every position are a ``[N, Tc, V]`` tensor, and ``float()``, the division
by the temperature and ``logsumexp`` each make a float32 copy beside it: at 128 rollouts x 290
tokens x 49k vocabulary that is 7 GB a copy, several alive at once, on top of what autograd keeps.

``chunked`` (:func:`chunked_logprobs`) never builds them: TRL's ``ChunkedLogProbFunction`` runs the
projection on tiles of at most ``TOKEN_CHUNK_SIZE`` positions x ``vocab_chunk`` vocabulary entries,
folds each into running logsumexp statistics (a Triton kernel on CUDA, torch ops elsewhere), and
recomputes the tiles in the backward, accumulating the gradients in float32. Positions sampled under
a grammar mask need the renormalised allowed set: :func:`head_logits` builds their logits for those
positions only (:func:`rlvr.decoding.constrain.masked_hidden_logprobs`, a chunk at a time).

``full`` is the plain path (:func:`rlvr.algo.loss.token_logprobs` on the logits); both give the same
log-probs and gradients up to float summation order (``tests/invariant/test_chunked_logprobs.py``).
"""

from __future__ import annotations

from typing import Any

import torch

from rlvr.models.fast_decode import core_model

#: Vocabulary entries per tile of the chunked projection (a tile is at most 4096 positions wide).
VOCAB_CHUNK = 8192


def lm_head_of(model: Any) -> tuple[torch.Tensor, torch.Tensor | None, float | None, float]:
    """``(weight [V, H], bias, final_logit_softcapping, logit_scale)`` of a causal LM's output layer."""
    head = model.get_output_embeddings()
    cfg = getattr(model, "config", None)
    softcap = getattr(cfg, "final_logit_softcapping", None)
    scale = getattr(cfg, "logit_scale", None)
    return head.weight, getattr(head, "bias", None), softcap, float(scale) if scale else 1.0


def decoder_hidden(model: Any, ids: torch.Tensor, mask: torch.Tensor, tc: int) -> torch.Tensor:
    """``[N, Tc, H]`` the final (normed) hidden states that predict the last ``tc`` tokens of ``ids``:
    the decoder alone, no logits (a peft model's base, its layers still adapted)."""
    lm = core_model(model)
    decoder = getattr(lm, lm.base_model_prefix)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    h = decoder(input_ids=ids, attention_mask=mask, position_ids=pos).last_hidden_state
    return h[:, -(tc + 1) : -1]


def chunked_logprobs(
    model: Any, hidden: torch.Tensor, tokens: torch.Tensor, temperature: float = 1.0, vocab_chunk: int = VOCAB_CHUNK
) -> torch.Tensor:
    """``[N, Tc]`` log-probs of ``tokens`` from ``hidden [N, Tc, H]``, never all the logits at once
    (positions sampled under a grammar mask: :func:`rlvr.decoding.constrain.masked_hidden_logprobs`)."""
    from trl.kernels.chunked_logprob import ChunkedLogProbFunction

    weight, bias, softcap, scale = lm_head_of(core_model(model))
    n, tc, h = hidden.shape
    out = ChunkedLogProbFunction.apply(
        hidden.reshape(n * tc, h), weight, bias, tokens.reshape(-1), temperature, vocab_chunk, softcap, scale, ()
    )
    return out[0].view(n, tc)


def head_logits(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    """float32 logits of a few positions' hidden states, as the model's own head computes them."""
    weight, bias, softcap, scale = lm_head_of(core_model(model))
    z = torch.nn.functional.linear(hidden, weight, bias).float() * scale
    return softcap * torch.tanh(z / softcap) if softcap is not None else z
