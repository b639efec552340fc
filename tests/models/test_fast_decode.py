"""The lean decoder reproduces the model's own forward (logits), with left padding."""

import pytest

torch = pytest.importorskip("torch")


def _model_and_prompts(arch: str):
    """A tiny model (llama with grouped-query attention: 2 kv heads for 4 query heads) and three
    left-padded prompts."""
    from rlvr.models.tiny import build_model, build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model(
        tok, arch=arch, hidden=64, layers=2, heads=4, kv_heads=2 if arch == "llama" else None, seed=1
    ).eval()
    enc = tok(["Q: 1+2=", "Q: 123+456=", "Q: 7="], return_tensors="pt", padding=True)
    return tok, model, enc.input_ids, enc.attention_mask


def _reference(model, ids, am, new):
    """The model's own logits over the prompts followed by ``new``."""
    full = torch.cat([ids, new], 1)
    mask = torch.cat([am, torch.ones_like(new)], 1)
    with torch.no_grad():
        return model(input_ids=full, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits


@pytest.mark.parametrize("attention", ["multiply-and-sum", "batched matmuls"])
@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_prefill_and_steps_match_hf_forward(arch, attention, monkeypatch):
    from rlvr.models import fast_decode

    monkeypatch.setattr(fast_decode, "BMM_AT", 0 if attention == "batched matmuls" else 10**9)
    from rlvr.models.fast_decode import FastDecoder, supports

    tok, model, ids, am = _model_and_prompts(arch)
    assert supports(model)
    new = torch.randint(4, len(tok), (3, 5))
    dec = FastDecoder(model, batch=3, max_len=ids.shape[1] + 5)
    logits = [dec.prefill(ids, am)] + [dec.step(new[:, i]) for i in range(5)]
    ref = _reference(model, ids, am, new)
    for i, got in enumerate(logits):
        want = ref[:, ids.shape[1] - 1 + i]
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize(
    "targets", [["q_proj", "k_proj", "v_proj", "o_proj"], ["q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"]]
)
def test_lora_adapters_are_merged_into_the_decoders_weights_and_the_model_is_left_alone(targets):
    from peft import LoraConfig, get_peft_model

    from rlvr.models.fast_decode import FastDecoder, supports
    from rlvr.models.tiny import build_model, build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    base = build_model(tok, hidden=64, layers=2, heads=4, seed=1)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=targets, task_type="CAUSAL_LM")).eval()
    with torch.no_grad():  # B starts at zero (the adapter a no-op): give it weight so the test can fail
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.2)
    assert supports(model, lora=True) and not supports(model)  # decoding yes; the training forward no
    before = {n: p.clone() for n, p in model.named_parameters()}
    enc = tok(["Q: 1+2=", "Q: 123+456="], return_tensors="pt", padding=True)
    ids, am = enc.input_ids, enc.attention_mask
    new = torch.randint(4, len(tok), (2, 4))
    dec = FastDecoder(model, batch=2, max_len=ids.shape[1] + 4)
    logits = [dec.prefill(ids, am)] + [dec.step(new[:, i]) for i in range(4)]
    full = torch.cat([ids, new], 1)
    full_mask = torch.cat([am, torch.ones_like(new)], 1)
    pos = (full_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref = model(input_ids=full, attention_mask=full_mask, position_ids=pos).logits
        with model.disable_adapter():
            without = model(input_ids=full, attention_mask=full_mask, position_ids=pos).logits
    assert (ref - without).abs().max() > 1e-2  # the adapters matter to these logits
    for i, got in enumerate(logits):
        torch.testing.assert_close(got, ref[:, ids.shape[1] - 1 + i], atol=2e-5, rtol=1e-4)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())  # nothing merged in place


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_several_tokens_per_row_in_one_step_match_the_models_forward(arch):
    """Jump-forward feeds each row its own number of tokens in one step (the rest of the row's slots
    masked); the logits after each row's last token are the model's own, and the cache grows when
    the slots outrun its size."""
    from rlvr.models.fast_decode import FastDecoder

    tok, model, ids, am = _model_and_prompts(arch)
    seqs = torch.randint(4, len(tok), (3, 9))
    chunks = [[1, 3, 1, 3], [2, 2, 2, 2], [4, 1, 1, 2]]  # row r is fed chunks[r][step] tokens at each step
    dec = FastDecoder(model, batch=3, max_len=ids.shape[1] + 9)  # the steps write 12 slots per row
    dec.prefill(ids, am)
    seen, fed = [], [0, 0, 0]
    for step in range(4):
        counts = torch.tensor([chunks[r][step] for r in range(3)])
        toks = torch.zeros(3, int(counts.max()), dtype=torch.long)
        for r in range(3):
            toks[r, : counts[r]] = seqs[r, fed[r] : fed[r] + counts[r]]
            fed[r] += int(counts[r])
        seen.append((list(fed), dec.step(toks, counts)))
    assert dec.k[0].shape[0] > ids.shape[1] + 9  # grown
    ref = _reference(model, ids, am, seqs)
    for at, logits in seen:
        for r in range(3):
            torch.testing.assert_close(logits[r], ref[r, ids.shape[1] - 1 + at[r]], atol=2e-5, rtol=1e-4)
    # one token per row after that (the ninth) still matches
    torch.testing.assert_close(dec.step(seqs[:, 8]), ref[:, -1], atol=2e-5, rtol=1e-4)


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


def test_bfloat16_decoding_stays_near_the_float32_forward():
    """The bfloat16 weight copy decodes what the float32 model computes, to bfloat16's precision, and
    the sampler's distribution is float32 (log-probs handed to training)."""
    from rlvr.models.fast_decode import FastDecoder
    from rlvr.models.tiny import build_model, build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model(tok, arch="llama", hidden=64, layers=2, heads=4, kv_heads=2, seed=2).eval()
    enc = tok(["Q: 1+2=", "Q: 123+456="], return_tensors="pt", padding=True)
    new = torch.randint(4, len(tok), (2, 6))
    exact = FastDecoder(model, batch=2, max_len=enc.input_ids.shape[1] + 6)
    half = FastDecoder(model, batch=2, max_len=enc.input_ids.shape[1] + 6, dtype=torch.bfloat16)
    assert half.weights[0][0].dtype == torch.bfloat16 and half.k[0].dtype == torch.float32  # the cache stays
    want = [exact.prefill(enc.input_ids, enc.attention_mask)] + [exact.step(new[:, i]) for i in range(6)]
    got = [half.prefill(enc.input_ids, enc.attention_mask)] + [half.step(new[:, i]) for i in range(6)]
    for w, g in zip(want, got, strict=True):
        assert g.dtype == torch.float32
        p, q = torch.log_softmax(w, -1), torch.log_softmax(g, -1)
        assert float((p.exp() * (p - q)).sum(-1).max()) < 1e-3  # KL(float32 || bfloat16) per position
    assert not torch.equal(want[-1], got[-1])  # it did decode in bfloat16


def test_sampling_in_bfloat16_is_logged_as_the_gap_to_the_training_log_probs(tmp_path, bf16_numerics):
    from rlvr.config import load_config
    from rlvr.engine.trainer import GRPOTrainer

    base = [
        "model.hidden=32",
        "model.layers=1",
        "model.heads=2",
        "model.arch=llama",
        "rollout.prompts_per_step=2",
        "rollout.group_size=4",
        "rollout.max_new_tokens=8",
        "run.eval_every=0",
        "data.eval_size=4",
        "rewards.weights={cosine: 1.0}",
        f"run.out_dir={tmp_path}",
    ]
    exact = GRPOTrainer(load_config(None, base)).train_step()
    half = GRPOTrainer(load_config(None, [*base, "rollout.dtype=bfloat16"])).train_step()
    assert exact["rollout/logprob_gap"] < 1e-5  # float32 sampling: the first ratio is 1
    assert 1e-5 < half["rollout/logprob_gap"] < 0.05


@pytest.mark.parametrize("attention", ["multiply-and-sum", "batched matmuls"])
def test_the_static_step_gives_the_dynamic_steps_logits_through_groups_drops_and_multi_token_steps(
    attention, monkeypatch
):
    """``static=True``: a one-token step attends over the whole cache (its unwritten slots masked)
    and writes its slot through a device index, the shapes a captured graph needs: at every step,
    after a group prefill, rows dropped and a several-token step, its logits are the dynamic one's."""
    from rlvr.models import fast_decode
    from rlvr.models.fast_decode import FastDecoder
    from rlvr.models.tiny import build_model, build_tokenizer

    monkeypatch.setattr(fast_decode, "BMM_AT", 0 if attention == "batched matmuls" else 10**9)
    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model(tok, arch="qwen2", hidden=64, layers=2, heads=4, kv_heads=2, seed=5).eval()
    enc = tok(["Q: 1+2=", "Q: 123+456="], return_tensors="pt", padding=True)
    g, steps = 3, 8
    new = torch.randint(4, len(tok), (2 * g, steps + 2))
    cap = enc.input_ids.shape[1] + steps + 2
    dyn, sta = FastDecoder(model, 2 * g, cap), FastDecoder(model, 2 * g, cap, static=True)
    a = dyn.prefill(enc.input_ids, enc.attention_mask, repeat=g)
    b = sta.prefill(enc.input_ids, enc.attention_mask, repeat=g)
    torch.testing.assert_close(a, b)
    rows, shapes = torch.arange(2 * g), set()
    for i in range(steps):
        if i == 3:  # rows that ended are dropped from both
            rows = torch.tensor([0, 2, 4, 5])
            dyn.keep(rows)
            sta.keep(rows)
        if i == 5:  # three tokens for some rows in one forward (a tool's result, a grammar's jump)
            feed, counts = new[rows, i : i + 3], torch.tensor([1, 3, 2, 3])
            a, b = dyn.step(feed, counts), sta.step(feed, counts)
        else:
            a, b = dyn.step(new[rows, i]), sta.step(new[rows, i])
            shapes.add(tuple(sta.k[0].shape))
        torch.testing.assert_close(b, a, atol=2e-5, rtol=1e-4)
        assert int(sta._slot) == sta.length == dyn.length
    assert {s[0] for s in shapes} == {cap}  # every static step attends over the same, whole cache
