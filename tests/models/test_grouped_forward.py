"""The shared-prompt training forward equals the model's own forward, values and gradients."""

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("arch", "kv_heads"), [("qwen2", None), ("llama", 2)])
def test_matches_hf_forward_and_gradients(arch, kv_heads):
    from rlvr.models.grouped_forward import completion_logits
    from rlvr.models.tiny import build_model, build_tokenizer

    tok = build_tokenizer()
    model = build_model(tok, arch=arch, hidden=64, layers=2, heads=4, kv_heads=kv_heads, seed=2)
    enc = tok(["Q: 1+2=", "Q: 123+456="], return_tensors="pt", padding=True)
    g, tc = 3, 5
    comp = torch.randint(4, len(tok), (2 * g, tc))
    comp[0, 3:] = tok.pad_token_id  # an early-ended rollout
    got = completion_logits(model, enc.input_ids, enc.attention_mask, comp, g)

    ids = torch.cat([enc.input_ids.repeat_interleave(g, 0), comp], 1)
    mask = torch.cat([enc.attention_mask.repeat_interleave(g, 0), torch.ones_like(comp)], 1)
    mask[0, -2:] = 0
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    want = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -tc - 1 : -1]
    keep = torch.ones(2 * g, tc, dtype=torch.bool)
    keep[0, 3:] = False  # positions after the end are never used by the loss
    torch.testing.assert_close(got[keep], want[keep], atol=2e-5, rtol=1e-4)

    w = torch.randn(len(tok))
    (ga,) = torch.autograd.grad((got[keep] @ w).sum(), model.model.layers[0].mlp.up_proj.weight)
    (gb,) = torch.autograd.grad((want[keep] @ w).sum(), model.model.layers[0].mlp.up_proj.weight)
    torch.testing.assert_close(ga, gb, atol=1e-4, rtol=1e-3)
