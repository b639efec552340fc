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


def test_length_buckets_split_only_when_it_pays():
    from rlvr.models.grouped_forward import length_buckets

    even = length_buckets(torch.tensor([20, 21, 19, 21, 20, 21]))
    assert len(even) == 1 and even[0].tolist() == [0, 1, 2, 3, 4, 5]
    straggler = length_buckets(torch.tensor([20, 32, 19, 21, 20, 21, 18, 20]))
    assert [b.tolist() for b in straggler] == [[0, 2, 3, 4, 5, 6, 7], [1]]
    # every row lands in exactly one bucket
    lengths = torch.randint(1, 40, (64,), generator=torch.Generator().manual_seed(0))
    got = torch.cat(length_buckets(lengths)).sort().values
    assert torch.equal(got, torch.arange(64))


@pytest.mark.parametrize(("arch", "kv_heads"), [("qwen2", None), ("llama", 2)])
def test_length_buckets_give_the_same_logits_and_gradients(arch, kv_heads):
    """One long rollout among short ones: the rows run in two buckets, with the same result where
    the loss reads it."""
    from rlvr.models.grouped_forward import completion_logits, length_buckets
    from rlvr.models.tiny import build_model, build_tokenizer

    tok = build_tokenizer()
    model = build_model(tok, arch=arch, hidden=64, layers=2, heads=4, kv_heads=kv_heads, seed=5)
    enc = tok(["Q: 1+2=", "Q: 123+456="], return_tensors="pt", padding=True)
    g, tc = 4, 12
    comp = torch.randint(4, len(tok), (2 * g, tc), generator=torch.Generator().manual_seed(1))
    lengths = torch.tensor([3, 4, 3, 12, 2, 4, 3, 3])
    for i, n in enumerate(lengths.tolist()):
        comp[i, n:] = tok.pad_token_id
    assert len(length_buckets(lengths)) == 2
    keep = torch.arange(tc)[None, :] < lengths[:, None]
    whole = completion_logits(model, enc.input_ids, enc.attention_mask, comp, g)
    split = completion_logits(model, enc.input_ids, enc.attention_mask, comp, g, lengths=lengths)
    torch.testing.assert_close(split[keep], whole[keep], atol=2e-5, rtol=1e-4)
    w = torch.randn(len(tok))
    for p in (model.model.layers[0].self_attn.q_proj.weight, model.model.embed_tokens.weight):
        (ga,) = torch.autograd.grad((split[keep] @ w).sum(), p, retain_graph=True)
        (gb,) = torch.autograd.grad((whole[keep] @ w).sum(), p, retain_graph=True)
        torch.testing.assert_close(ga, gb, atol=1e-4, rtol=1e-3)


def test_a_lora_model_gives_the_same_logits_and_adapter_gradients():
    """LoRA projections enter the shared-prompt forward merged (W + s * B @ A): the same logits, and
    gradients that reach the adapters exactly as through peft's own wrapped modules."""
    from peft import LoraConfig, get_peft_model

    from rlvr.models.fast_decode import supports
    from rlvr.models.grouped_forward import completion_logits
    from rlvr.models.tiny import build_model, build_tokenizer

    tok = build_tokenizer()
    model = get_peft_model(
        build_model(tok, hidden=64, layers=2, heads=4, seed=2),
        LoraConfig(
            r=4,
            lora_alpha=8,
            task_type="CAUSAL_LM",
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "down_proj"],
        ),
    )
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.2)
    assert supports(model, lora=True)
    enc = tok(["Q: 1+2=", "Q: 123+456="], return_tensors="pt", padding=True)
    g, tc = 2, 4
    comp = torch.randint(4, len(tok), (2 * g, tc), generator=torch.Generator().manual_seed(3))
    got = completion_logits(model, enc.input_ids, enc.attention_mask, comp, g)
    ids = torch.cat([enc.input_ids.repeat_interleave(g, 0), comp], 1)
    mask = torch.cat([enc.attention_mask.repeat_interleave(g, 0), torch.ones_like(comp)], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    want = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -tc - 1 : -1]
    torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)
    adapters = [p for n, p in model.named_parameters() if "lora_" in n and p.requires_grad]
    w = torch.randn(len(tok))
    ga = torch.autograd.grad((got @ w).sum(), adapters)
    gb = torch.autograd.grad((want @ w).sum(), adapters)
    for a, b in zip(ga, gb, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)
    dropout = get_peft_model(
        build_model(tok, hidden=64, layers=2, heads=4, seed=2),
        LoraConfig(r=4, lora_dropout=0.1, task_type="CAUSAL_LM", target_modules=["q_proj"]),
    )
    assert not supports(dropout, lora=True)  # with dropout no merged weight is the same
