"""The static-cache decoder (the shapes a CUDA graph replays) samples what the dynamic one samples:
the same tokens, masks and log-probs for a fixed seed, plain and constrained (forced tokens jumped);
so does that step recorded and replayed (:mod:`rlvr.models.graphed`: on a CPU, replayed eagerly
through the recorded buffers, a warm-up undone before each recording, rows dropped by buckets)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.decoding.constrain import Constrainer
from rlvr.models import fast_decode, graphed
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.sampling import generate


@pytest.fixture(scope="module")
def tiny():
    tok = build_tokenizer()
    return build_model(tok, arch="qwen2", hidden=64, layers=2, heads=4, kv_heads=2, seed=7), tok


@pytest.mark.parametrize("decoder", ["static", "graph"])
@pytest.mark.parametrize("constrained", [False, True], ids=["plain", "constrained"])
def test_static_cache_sampling_equals_dynamic_for_a_fixed_seed(tiny, constrained, decoder, monkeypatch) -> None:
    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="answer", answer="math") if constrained else None
    prompts = [tok.encode(f"Q: {a}+{b}=") for a, b in [(1, 2), (12, 34), (7, 8)]]
    static_steps, recorded = [], []
    real = fast_decode.FastDecoder.static_core
    monkeypatch.setattr(
        fast_decode.FastDecoder, "static_core", lambda self, t: (static_steps.append(1), real(self, t))[1]
    )
    record = graphed.GraphedDecoder._record
    monkeypatch.setattr(
        graphed.GraphedDecoder, "_record", lambda self, t: (recorded.append(self.batch), record(self, t))[1]
    )
    # frequent characters end rows too: rows end at many different steps, so rows are dropped
    stops = [tok.eos_token_id, *tok.convert_tokens_to_ids([" ", "e", "a", "1"])] if not constrained else None
    out = {}
    for static in (False, True):
        g = torch.Generator().manual_seed(11)
        kw = {"cuda_graphs": True} if decoder == "graph" else {"static_cache": True}
        b = generate(
            model,
            tok,
            prompts,
            group_size=4,
            max_new_tokens=40,
            generator=g,
            constrain=c,
            stop_ids=stops,
            **(kw if static else {}),
        )
        out[static] = (b, torch.rand(1, generator=g))
    (a, ga), (b, gb) = out[False], out[True]
    assert static_steps, "the static path never ran"
    if decoder == "graph" and not constrained:  # recorded again at each bucket the rows were dropped to
        assert recorded[0] == 12 and len(recorded) > 1 and all(n & (n - 1) == 0 for n in recorded[1:]), recorded
    elif decoder == "graph":
        assert recorded
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert torch.equal(a.completion_mask, b.completion_mask)
    torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=0)
    assert torch.equal(ga, gb)  # the generator ends in the same state
    assert len(set(a.texts)) > 1  # the rows differ: they ended at different steps (rows were dropped)
