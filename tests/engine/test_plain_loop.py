"""The plain decode loop (no grammar, no tool turns; it checks the device every few steps) samples
what the general loop samples: the same tokens, masks, log-probs, finishes and generator state, for
every decoder, sampling setting and way rows end, with its own generator or the global one."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import rlvr.sampling.decode as decode_mod
import rlvr.sampling.plain as plain_mod
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.sampling import generate


@pytest.fixture(scope="module")
def tiny():
    tok = build_tokenizer()
    return build_model(tok, arch="qwen2", hidden=64, layers=2, heads=4, kv_heads=2, seed=7), tok


def _both(monkeypatch, tiny, *, seeded=True, **kw):
    """``generate`` through the plain loop and through the general one, with what each left the RNG."""
    model, tok = tiny
    prompts = [tok.encode(f"Q: {a}+{b}=") for a, b in [(1, 2), (12, 34), (7, 8)]]
    ran: list[int] = []
    real = plain_mod.decode_plain
    limit = kw.pop("max_new_tokens", 40)
    out = []
    for plain in (True, False):
        loop = (lambda *a: (ran.append(1), real(*a))[1]) if plain else (lambda *a: None)
        monkeypatch.setattr(decode_mod, "decode_plain", loop)  # a no-op: the general loop decodes
        g = torch.Generator().manual_seed(11) if seeded else None
        if not seeded:
            torch.manual_seed(11)
        b = generate(model, tok, prompts, max_new_tokens=limit, generator=g, **kw)
        out.append((b, torch.rand(3, generator=g)))
    assert ran, "the plain loop never ran"
    return out


STOPS = [" ", "e", "a", "1"]  # frequent characters: rows end at many different steps


@pytest.mark.parametrize(
    "decoder",
    [{}, {"fast": False}, {"static_cache": True}, {"cuda_graphs": True}],
    ids=["lean", "hf", "static", "graph"],
)
@pytest.mark.parametrize(
    "sampling",
    [{"temperature": 1.0}, {"temperature": 0.7, "top_p": 0.9}, {"temperature": 0.0}],
    ids=["t1", "nucleus", "greedy"],
)
def test_the_plain_loop_samples_what_the_general_loop_samples(tiny, monkeypatch, decoder, sampling) -> None:
    tok = tiny[1]
    stops = [tok.eos_token_id, *tok.convert_tokens_to_ids(STOPS)]
    (a, ga), (b, gb) = _both(monkeypatch, tiny, group_size=4, stop_ids=stops, **decoder, **sampling)
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts and a.finish == b.finish
    assert torch.equal(a.completion_mask, b.completion_mask)
    torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=0)
    assert torch.equal(ga, gb)  # the generator ends where decoding token by token leaves it
    if sampling["temperature"] > 0:
        assert len(set(a.lengths.tolist())) > 2  # rows ended at different steps (and were dropped)


def test_the_plain_loop_on_the_global_generator_and_without_early_ends(tiny, monkeypatch) -> None:
    for kw in ({"group_size": 2, "stop_ids": None}, {"group_size": 1, "max_new_tokens": 13}):
        (a, ga), (b, gb) = _both(monkeypatch, tiny, seeded=False, **kw)
        assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(ga, gb)
        torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=0)


def test_the_plain_loop_waits_on_the_device_every_few_steps_not_every_token(tiny, monkeypatch) -> None:
    model, tok = tiny
    waits: list[int] = []  # a tensor's value read on the host: the host waits for the device there
    for name in ("__bool__", "__int__", "item", "tolist"):
        real = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _real=real: (waits.append(1), _real(self, *a))[1])
    inside: list[int] = []
    loop = plain_mod.decode_plain

    def counted(*a):
        before = len(waits)
        loop(*a)
        inside.append(len(waits) - before)

    monkeypatch.setattr(decode_mod, "decode_plain", counted)
    b = generate(model, tok, [tok.encode("Q: 1+2=")], group_size=4, max_new_tokens=40, stop_ids=[tok.eos_token_id])
    steps = b.completion_ids.shape[1]
    checks = -(-steps // plain_mod.CHECK_EVERY)
    assert steps >= 24 and inside[0] <= 2 * checks + 1, (steps, inside)  # is every row done? drop some? (+ the end)
    general = len(waits)
    monkeypatch.setattr(decode_mod, "decode_plain", lambda *a: None)
    generate(model, tok, [tok.encode("Q: 1+2=")], group_size=4, max_new_tokens=40, stop_ids=[tok.eos_token_id])
    assert len(waits) - general > 3 * steps  # the general loop waits several times a token
