"""The static-cache decoder (the shapes a CUDA graph replays) samples what the dynamic one samples:
the same tokens, masks and log-probs for a fixed seed, plain and constrained (forced tokens jumped)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.decoding.constrain import Constrainer
from rlvr.models import fast_decode
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.sampling import generate


@pytest.fixture(scope="module")
def tiny():
    tok = build_tokenizer()
    return build_model(tok, arch="qwen2", hidden=64, layers=2, heads=4, kv_heads=2, seed=7), tok


@pytest.mark.parametrize("constrained", [False, True], ids=["plain", "constrained"])
def test_static_cache_sampling_equals_dynamic_for_a_fixed_seed(tiny, constrained, monkeypatch) -> None:
    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="answer", answer="math") if constrained else None
    prompts = [tok.encode(f"Q: {a}+{b}=") for a, b in [(1, 2), (12, 34), (7, 8)]]
    static_steps = []
    real = fast_decode.FastDecoder._step_static
    monkeypatch.setattr(
        fast_decode.FastDecoder, "_step_static", lambda self, t: (static_steps.append(1), real(self, t))[1]
    )
    out = {}
    for static in (False, True):
        g = torch.Generator().manual_seed(11)
        b = generate(
            model, tok, prompts, group_size=4, max_new_tokens=40, generator=g, constrain=c, static_cache=static
        )
        out[static] = (b, torch.rand(1, generator=g))
    (a, ga), (b, gb) = out[False], out[True]
    assert static_steps, "the static path never ran"
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert torch.equal(a.completion_mask, b.completion_mask)
    torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=0)
    assert torch.equal(ga, gb)  # the generator ends in the same state
    assert len(set(a.texts)) > 1  # the rows differ: they ended at different steps (rows were dropped)
