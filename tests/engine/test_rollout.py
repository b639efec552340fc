"""Rollouts: masks, finish reasons, reproducibility, and sampling log-probs equal to the training forward's."""

import pytest

torch = pytest.importorskip("torch")

from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.sampling import generate


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    tok = build_tokenizer()
    return build_model(tok, hidden=32, layers=2, heads=2, seed=3), tok


def _prompts(tok):
    return [tok(t)["input_ids"] for t in ("Q: 1+2=", "Q: 10+20=")]


@pytest.mark.parametrize("fast", [True, False])
def test_shapes_masks_and_finish(tiny, fast):
    model, tok = tiny
    b = generate(
        model, tok, _prompts(tok), group_size=3, max_new_tokens=6, generator=torch.Generator().manual_seed(0), fast=fast
    )
    assert b.completion_ids.shape[0] == 6 and b.completion_ids.shape[1] <= 6
    for ids, m, fin in zip(b.completion_ids, b.completion_mask, b.finish):
        n = int(m.sum())
        if fin == "eos":
            assert ids[n - 1] == tok.eos_token_id and (ids[n:] == tok.pad_token_id).all()
        else:
            assert n == b.completion_ids.shape[1] and tok.eos_token_id not in ids.tolist()
    assert (b.logprobs[b.completion_mask == 0] == 0).all() and (b.logprobs[b.completion_mask == 1] < 0).all()
    assert b.prompt_ids.shape[0] == 6 and (b.prompt_ids[0] == b.prompt_ids[2]).all()  # grouped


def test_seeded_sampling_is_reproducible_and_fast_equals_hf_path(tiny):
    model, tok = tiny
    runs = [
        generate(
            model,
            tok,
            _prompts(tok),
            group_size=4,
            max_new_tokens=8,
            generator=torch.Generator().manual_seed(7),
            fast=fast,
        )
        for fast in (True, True, False)
    ]
    assert torch.equal(runs[0].completion_ids, runs[1].completion_ids)
    assert torch.equal(runs[0].completion_ids, runs[2].completion_ids)  # same weights, same draws
    greedy = [
        generate(model, tok, _prompts(tok), group_size=1, max_new_tokens=8, temperature=0.0, fast=f)
        for f in (True, False)
    ]
    assert greedy[0].texts == greedy[1].texts


def test_a_lora_policy_samples_through_the_lean_decoder_as_through_its_own_forward(monkeypatch):
    from peft import LoraConfig, get_peft_model

    from rlvr.models import fast_decode

    tok = build_tokenizer()
    model = get_peft_model(
        build_model(tok, hidden=32, layers=2, heads=2, seed=3),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], task_type="CAUSAL_LM"),
    ).eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.3)
    built = []
    real = fast_decode.FastDecoder.__init__
    monkeypatch.setattr(
        fast_decode.FastDecoder, "__init__", lambda self, *a, **k: built.append(1) or real(self, *a, **k)
    )
    runs = [
        generate(
            model,
            tok,
            _prompts(tok),
            group_size=4,
            max_new_tokens=8,
            generator=torch.Generator().manual_seed(7),
            fast=fast,
        )
        for fast in (True, False)
    ]
    assert built == [1]  # the fast run went through the lean decoder
    assert torch.equal(runs[0].completion_ids, runs[1].completion_ids)
    torch.testing.assert_close(runs[0].logprobs, runs[1].logprobs, atol=1e-5, rtol=1e-4)


def test_top_p_keeps_only_the_nucleus(tiny):
    model, tok = tiny
    b = generate(
        model,
        tok,
        _prompts(tok),
        group_size=8,
        max_new_tokens=4,
        top_p=1e-6,
        generator=torch.Generator().manual_seed(0),
    )
    g = generate(model, tok, _prompts(tok), group_size=8, max_new_tokens=4, temperature=0.0)
    assert torch.equal(b.completion_ids, g.completion_ids)  # a vanishing nucleus is greedy decoding


def test_concat_and_select_groups_keep_rows_intact(tiny):
    model, tok = tiny
    a = generate(
        model,
        tok,
        [tok("Q:1+2=")["input_ids"]],
        group_size=2,
        max_new_tokens=3,
        generator=torch.Generator().manual_seed(0),
    )
    b = generate(
        model,
        tok,
        [tok("Q:100+200=")["input_ids"]],
        group_size=2,
        max_new_tokens=6,
        generator=torch.Generator().manual_seed(1),
    )
    c = a.concat(b, tok.pad_token_id)
    assert c.prompt_ids.shape == (4, b.prompt_ids.shape[1]) and c.completion_ids.shape[1] == 6
    assert c.texts == a.texts + b.texts and c.finish == a.finish + b.finish
    # the left-padded prompt and right-padded completion of a row read the same after re-padding
    row = c.prompt_ids[0][c.prompt_mask[0].bool()].tolist()
    assert row == a.prompt_ids[0][a.prompt_mask[0].bool()].tolist()
    assert torch.equal(c.logprobs[1, :3], a.logprobs[1]) and (c.logprobs[1, 3:] == 0).all()
    s = c.select_groups([1])
    assert s.texts == b.texts and torch.equal(s.completion_ids, c.completion_ids[2:])


def test_dropping_ended_rows_does_not_change_the_samples(tiny, monkeypatch):
    """Ended rows leave the decoder (every time one ends, with COMPACT_AT tiny); the draws are the same."""
    import rlvr.sampling.decode as rollout
    from rlvr.models.fast_decode import FastDecoder

    model, tok = tiny
    kept: list[int] = []
    real_keep = FastDecoder.keep
    monkeypatch.setattr(FastDecoder, "keep", lambda self, rows: (kept.append(len(rows)), real_keep(self, rows))[1])
    saved = model.lm_head.weight.detach().clone()
    with torch.no_grad():  # make the eos likely, so rows end at different steps
        model.lm_head.weight[tok.eos_token_id] += 0.5 * model.lm_head.weight.mean(0)
    try:
        runs = []
        for at in (1e-9, 2.0):  # drop rows as soon as any ends / never
            monkeypatch.setattr(rollout, "COMPACT_AT", at)
            runs.append(
                generate(
                    model,
                    tok,
                    _prompts(tok),
                    group_size=4,
                    max_new_tokens=24,
                    generator=torch.Generator().manual_seed(5),
                )
            )
    finally:
        with torch.no_grad():
            model.lm_head.weight.copy_(saved)
    assert kept, "no row was ever dropped: the test did not exercise compaction"
    assert torch.equal(runs[0].completion_ids, runs[1].completion_ids)
    torch.testing.assert_close(runs[0].logprobs, runs[1].logprobs, atol=1e-5, rtol=1e-5)
    assert runs[0].finish == runs[1].finish and len(set(runs[0].lengths.tolist())) > 1
