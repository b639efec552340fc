"""The lean decoder reproduces the model's own forward (logits), with left padding."""

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_prefill_and_steps_match_hf_forward(arch):
    from rlvr.models.fast_decode import FastDecoder, supports
    from rlvr.models.tiny import build_model, build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    # llama with grouped-query attention (2 kv heads for 4 query heads)
    model = build_model(tok, arch=arch, hidden=64, layers=2, heads=4, kv_heads=2 if arch == "llama" else None,
                        seed=1).eval()
    assert supports(model)
    enc = tok(["Q: 1+2=", "Q: 123+456=", "Q: 7="], return_tensors="pt", padding=True)
    ids, am = enc.input_ids, enc.attention_mask
    new = torch.randint(4, len(tok), (3, 5))
    dec = FastDecoder(model, batch=3, max_len=ids.shape[1] + 5)
    logits = [dec.prefill(ids, am)] + [dec.step(new[:, i]) for i in range(5)]
    full = torch.cat([ids, new], 1)
    full_mask = torch.cat([am, torch.ones_like(new)], 1)
    pos = (full_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref = model(input_ids=full, attention_mask=full_mask, position_ids=pos).logits
    for i, got in enumerate(logits):
        want = ref[:, ids.shape[1] - 1 + i]
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)


def test_unsupported_models_are_refused():
    from rlvr.models.fast_decode import supports

    class Other:
        class config:
            model_type = "gpt2"

    assert not supports(Other())


def test_prefill_once_per_group_and_dropping_rows_keep_the_logits():
    """A group's prompt prefilled once for its rows, and rows dropped mid-way (ended rollouts): the
    rows kept decode exactly as in the full batch."""
    from rlvr.models.fast_decode import FastDecoder
    from rlvr.models.tiny import build_model, build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model(tok, arch="llama", hidden=64, layers=2, heads=4, kv_heads=2, seed=4).eval()
    enc = tok(["Q: 1+2=", "Q: 123+456="], return_tensors="pt", padding=True)
    g, steps = 3, 6
    new = torch.randint(4, len(tok), (2 * g, steps))
    full = FastDecoder(model, batch=2 * g, max_len=enc.input_ids.shape[1] + steps)
    part = FastDecoder(model, batch=2 * g, max_len=enc.input_ids.shape[1] + steps)
    a = full.prefill(enc.input_ids, enc.attention_mask, repeat=g).repeat_interleave(g, 0)
    b = part.prefill(enc.input_ids, enc.attention_mask, repeat=g).repeat_interleave(g, 0)
    torch.testing.assert_close(a, b)
    rows = torch.arange(2 * g)
    for i in range(steps):
        a = full.step(new[:, i])
        if i == 2:
            rows = torch.tensor([0, 4, 5])
            part.keep(torch.tensor([0, 4, 5]))
        elif i == 4:
            rows = rows[torch.tensor([2])]
            part.keep(torch.tensor([2]))
        b = part.step(new[rows, i])
        torch.testing.assert_close(b, a[rows], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="does not fill"):
        full.prefill(enc.input_ids, enc.attention_mask, repeat=2)
