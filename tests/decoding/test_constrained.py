"""Constrained decoding: the grammars, the masks in the sampling loop, and a gradient that stays consistent."""

from __future__ import annotations

import json
import re
import warnings

import pytest

torch = pytest.importorskip("torch")
xgr = pytest.importorskip("xgrammar")

from rlvr.algo.loss import token_logprobs
from rlvr.config import load_config
from rlvr.decoding.backends import answer_grammar, full_grammar
from rlvr.decoding.constrain import Constrainer, masked_logprobs, pack_bits, unpack_bits
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.sampling import generate
from rlvr.types import Status
from rlvr.verify.math import verify_math


@pytest.fixture(scope="module")
def tiny():
    tok = build_tokenizer()
    return build_model(tok, hidden=32, layers=1, heads=2, seed=3), tok


def accepts(grammar, text: str, tok) -> bool:
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(grammar))
    return m.accept_string(text) and m.is_completed()


@pytest.mark.parametrize(
    "text, ok",
    [
        ("42</answer>", True),
        ("-3.5</answer>", True),
        ("\\frac{1}{2}</answer>", True),
        ("(1, 2)</answer>", True),
        ("\\{1, 2\\}</answer>", True),
        ("[0, 1)</answer>", True),
        ("x = 3</answer>", True),
        ("2\\sqrt{3}</answer>", True),
        ("50\\%</answer>", True),
        ("forty-two</answer>", False),
        ("42", False),
        ("4 2 <b></answer>", False),
    ],
)
def test_math_answer_grammar(tiny, text: str, ok: bool) -> None:
    assert accepts(answer_grammar("math", "</answer>"), text, tiny[1]) is ok


def test_json_text_and_full_grammars(tiny) -> None:
    tok = tiny[1]
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert accepts(answer_grammar("json", "</answer>", schema=schema), '{"n": 3}</answer>', tok)
    assert not accepts(answer_grammar("json", "</answer>", schema=schema), '{"m": 3}</answer>', tok)
    assert accepts(answer_grammar("text", "</answer>", max_chars=5), "hello</answer>", tok)
    assert not accepts(answer_grammar("text", "</answer>", max_chars=4), "hello</answer>", tok)
    full = full_grammar("math", think_tag="think")
    assert accepts(full, "<think>a < b, so 2</think>\n<answer>2</answer>", tok)
    assert not accepts(full, "<think>x</answer></think><answer>2</answer>", tok)  # no closing tag inside
    assert not accepts(full, "<answer>2</answer>", tok)  # the reasoning is part of the shape
    assert accepts(full_grammar("math", think_tag=None), "<answer>2</answer>", tok)


def test_integer_answers(tiny) -> None:
    tok = tiny[1]
    for text, ok in [
        ("42</answer>", True),
        ("-7</answer>", True),
        ("1.5</answer>", False),
        ("x</answer>", False),
        ("</answer>", False),
        ("1 000</answer>", False),
    ]:
        assert accepts(answer_grammar("integer", "</answer>"), text, tok) is ok, text
    model = tiny[0]
    c = Constrainer(tok, model.config.vocab_size, mode="full", answer="integer", think_tag=None)
    b = _rollouts(model, tok, c)
    # an untrained model under the grammar: every rollout is an integer answer, none a format death
    assert all(re.fullmatch(r"<answer>-?\d+</answer>", t) for t in b.texts), b.texts


def test_packed_masks_round_trip() -> None:
    ids = [0, 5, 31, 32, 63, 70]
    bits = pack_bits(3, ids)
    assert unpack_bits(bits, 96).nonzero().squeeze(-1).tolist() == ids
    assert unpack_bits(pack_bits(3, ids, allow=False), 96).sum() == 96 - len(ids)


def _rollouts(model, tok, constrainer, n_prompts: int = 4, g: int = 8, max_new: int = 32, seed: int = 0):
    prompts = [tok.encode(f"Q:{10 + i}+{20 + i}=", add_special_tokens=False) for i in range(n_prompts)]
    return generate(
        model,
        tok,
        prompts,
        group_size=g,
        max_new_tokens=max_new,
        constrain=constrainer,
        generator=torch.Generator().manual_seed(seed),
    )


BACKENDS = [
    "xgrammar",
    pytest.param(
        "llguidance",
        marks=pytest.mark.skipif(
            __import__("importlib.util").util.find_spec("llguidance") is None, reason="llguidance not installed"
        ),
    ),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_answer_mode_gives_every_rollout_an_answer(tiny, backend: str) -> None:
    model, tok = tiny
    free = _rollouts(model, tok, None)
    assert free.bitmask is None
    c = Constrainer(tok, model.config.vocab_size, mode="answer", answer="math", backend=backend)
    b = _rollouts(model, tok, c)
    # a random model almost never writes <answer> by itself; the budget opens it, the grammar closes it
    assert sum("<answer>" in t for t in free.texts) < len(free.texts) / 4
    assert all("<answer>" in t for t in b.texts)
    closed = [t for t, f in zip(b.texts, b.finish) if f == "eos"]
    assert len(closed) >= len(b.texts) // 3  # a random model can still run out inside a long expression
    for t in closed:
        assert re.search(r"<answer>.+</answer>$", t), t
        assert verify_math(t, "0", strict=True).status is not Status.NO_ANSWER
    m = b.decode_stats.metrics()
    assert m["decoding/budget_forced_frac"] > 0.5 and m["decoding/broken_frac"] == 0.0
    assert 0 < m["decoding/mask_changed_argmax"] <= 1 and 0 < m["decoding/forced_frac"] < 1


def test_full_mode_with_a_reasoning_budget(tiny) -> None:
    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="full", think_tag="think", reasoning_budget=12)
    b = _rollouts(model, tok, c, max_new=48)
    for text in b.texts:
        assert text.startswith("<think>"), text
        head = text.split("</think>")[0]
        assert len(head) <= 12 + 1, text  # the budget closed the reasoning (a char tokenizer: 1 token/char)
        assert "</think><answer>" in text


@pytest.mark.parametrize("backend, mode", [("xgrammar", "full"), ("xgrammar", "answer"), ("llguidance", "answer")])
def test_json_answers_follow_the_schema(tiny, backend: str, mode: str) -> None:
    pytest.importorskip(backend)
    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode=mode, answer="json", schema={"type": "integer"}, backend=backend)
    b = _rollouts(model, tok, c, max_new=32)
    done = [t for t, f in zip(b.texts, b.finish) if f == "eos"]
    assert done
    for t in done:
        answer = t[t.index("<answer>") :]
        assert isinstance(json.loads(answer.removeprefix("<answer>").removesuffix("</answer>")), int), t


def test_llguidance_refuses_what_it_cannot_do_up_front(tiny) -> None:
    pytest.importorskip("llguidance")
    from rlvr.errors import ConfigError

    model, tok = tiny
    with pytest.raises(ConfigError, match="need xgrammar"):
        Constrainer(tok, model.config.vocab_size, mode="full", answer="json", backend="llguidance")
    with pytest.raises(ConfigError, match="needs xgrammar"):
        Constrainer(tok, model.config.vocab_size, mode="full", think_tag="think", backend="llguidance")
    # full mode without a reasoning segment works on llguidance
    c = Constrainer(tok, model.config.vocab_size, mode="full", think_tag=None, backend="llguidance")
    b = _rollouts(model, tok, c, n_prompts=2, g=4)
    assert all(t.startswith("<answer>") for t in b.texts) and b.decode_stats.broken == 0
    with pytest.raises(ConfigError, match="unknown grammar backend"):
        Constrainer(tok, model.config.vocab_size, backend="outlines")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_policy_ratio_is_one_for_every_kept_token_under_the_same_mask(tiny, backend: str) -> None:
    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="answer", backend=backend)
    b = _rollouts(model, tok, c)
    ids = torch.cat([b.prompt_ids, b.completion_ids], 1)
    mask = torch.cat([b.prompt_mask, b.completion_mask], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, b.prompt_ids.shape[1] - 1 : -1]
    kept = b.completion_mask.bool()
    plain = token_logprobs(logits, b.completion_ids)
    under_mask = masked_logprobs(plain, logits, b.completion_ids, b.bitmask)
    # 1 up to the lean decoder's float error (the same size without constraints)
    log_ratio = (under_mask - b.logprobs)[kept]
    assert float(log_ratio.abs().max()) < 1e-2 and float(log_ratio.abs().mean()) < 1e-3
    # without the mask the ratio is wrong wherever the mask mattered: the reason the masks are kept
    assert float((plain - b.logprobs)[kept].abs().max()) > 0.1
    forced = (unpack_bits(b.bitmask, logits.shape[-1]).sum(-1) == 1) & kept
    assert bool(forced.any()) and torch.allclose(under_mask[forced], torch.zeros(int(forced.sum())), atol=1e-5)


def test_batches_keep_their_masks_through_select_concat_and_replace(tiny) -> None:
    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="answer")
    a = _rollouts(model, tok, c, n_prompts=2, g=2)
    free = _rollouts(model, tok, None, n_prompts=1, g=2, max_new=40)
    both = a.concat(free, tok.pad_token_id)
    assert both.bitmask.shape[:2] == both.completion_ids.shape
    assert bool((both.bitmask[4:] == -1).all())
    assert torch.equal(both.bitmask[:4, : a.bitmask.shape[1]], a.bitmask)
    sel = a.select_groups([1])
    assert torch.equal(sel.bitmask, a.bitmask[2:4])
    swapped = a.replace_rows([0], free.select_groups([0]), tok.pad_token_id)
    assert bool((swapped.bitmask[0] == -1).all())
    assert torch.equal(swapped.bitmask[1, : a.bitmask.shape[1]], a.bitmask[1])


def test_trainer_drops_the_constant_format_reward_and_logs_the_masks(tmp_path) -> None:
    from rlvr.engine.trainer import GRPOTrainer
    from rlvr.models.grouped_forward import completion_logits

    cfg = load_config(
        None,
        [
            "model.hidden=32",
            "model.layers=1",
            "model.heads=2",
            "rollout.prompts_per_step=2",
            "rollout.group_size=4",
            "rollout.max_new_tokens=24",
            "run.eval_every=0",
            "data.eval_size=4",
            "run.steps=2",
            f"run.out_dir={tmp_path}",
            "decoding.constrain=answer",
        ],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = GRPOTrainer(cfg)
    assert any("format reward is constant" in str(w.message) for w in caught)
    assert trainer.rewards.weights_at(0)["format"] == 0.0
    # the first update's ratio through the trainer's own training forward (the shared-prompt path)
    samples = trainer.data.take(2)
    b = trainer.rollout(samples)
    logits = completion_logits(trainer.model, b.prompt_ids[::4], b.prompt_mask[::4], b.completion_ids, 4)
    logp = trainer.learner.fwd.token_logprobs(logits, b.completion_ids, b.bitmask)
    kept = b.completion_mask.bool()
    log_ratio = (logp - b.logprobs)[kept]
    assert float(log_ratio.abs().max()) < 1e-2 and float(log_ratio.abs().mean()) < 1e-3
    trainer.train()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    step = next(x for x in lines if "decoding/masked_frac" in x)
    assert step["weights/format"] == 0.0 and step["reward/format/mean"] is not None
    assert step["decoding/budget_forced_frac"] >= 0 and "decoding/mask_changed_argmax" in step


def test_it_is_a_transformers_logits_processor_usable_in_generate(tiny) -> None:
    from transformers import LogitsProcessor, LogitsProcessorList

    from rlvr.decoding.constrain import GrammarLogitsProcessor

    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="full", think_tag=None)
    ids = torch.tensor([tok.encode("Q:12+30=", add_special_tokens=False)] * 2)
    proc = GrammarLogitsProcessor(c, 2, 32)
    assert isinstance(proc, LogitsProcessor)
    out = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=32,
        do_sample=False,
        logits_processor=LogitsProcessorList([proc]),
        pad_token_id=tok.pad_token_id,
    )
    new = out[:, ids.shape[1] :]
    texts = tok.batch_decode(new, skip_special_tokens=True)
    for row, t in zip(new, texts):
        assert t.startswith("<answer>"), t
        if bool((row == tok.eos_token_id).any()):  # a random model may run out inside an expression
            assert re.fullmatch(r"<answer>.+</answer>", t), t
    assert len(proc.masks) >= len("<answer>") and proc.stats.tokens > 0


def test_the_format_reward_keeps_its_weight_when_the_reasoning_tags_are_the_models_own(tmp_path) -> None:
    from rlvr.engine.trainer import GRPOTrainer

    cfg = load_config(
        None,
        [
            "model.hidden=32",
            "model.layers=1",
            "model.heads=2",
            "rollout.prompts_per_step=2",
            "rollout.group_size=4",
            "run.eval_every=0",
            "data.eval_size=4",
            f"run.out_dir={tmp_path}",
            "decoding.constrain=answer",
            "rewards.options={format: {think_tag: think}}",
        ],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = GRPOTrainer(cfg)
    assert not any("format reward is constant" in str(w.message) for w in caught)
    assert trainer.rewards.weights_at(0)["format"] == 0.2
    assert trainer.constrainer.think_tag == "think"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["full", "answer"])
def test_no_rollout_is_cut_inside_its_answer(tiny, backend: str, mode: str) -> None:
    """A random model writes long, nested answers: each is finished and closed before the limit."""
    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode=mode, backend=backend)
    open_ends = 0
    for max_new, seed in ((24, 0), (32, 1), (40, 2), (48, 3)):
        b = _rollouts(model, tok, c, n_prompts=8, max_new=max_new, seed=seed)
        cut = [t for t, f in zip(b.texts, b.finish) if not (t.endswith("</answer>") and f == "eos")]
        assert len(cut) == b.decode_stats.unclosable  # the only way to end open, and it is counted
        open_ends += len(cut)
        for text in b.texts:
            if text.endswith("</answer>"):
                assert verify_math(text, "0", strict=True).status is not Status.NO_ANSWER
        assert b.decode_stats.metrics()["decoding/closed_forced_frac"] > 0  # the random model needed it
    # a random model nests brackets deeper than any sane answer; even so almost every answer is closed
    assert open_ends <= 2


def test_the_forced_opening_is_prefilled_with_the_same_samples(tiny, monkeypatch) -> None:
    """``full`` begins every output with the tag the grammar forces: prefilled with the prompt, not
    decoded token by token, with the same draws; and ended rows leave the decoder as in plain sampling."""
    import rlvr.sampling.decode as rollout

    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="full")
    assert tok.decode(c.lead()) == "<answer>"
    fast = _rollouts(model, tok, c, seed=5)
    monkeypatch.setattr(Constrainer, "lead", lambda self, max_new_tokens=None: [])
    monkeypatch.setattr(rollout, "COMPACT_AT", 2.0)  # never drop ended rows
    slow = _rollouts(model, tok, c, seed=5)
    assert fast.texts == slow.texts
    assert torch.allclose(fast.logprobs, slow.logprobs, atol=1e-5)
    assert torch.equal(fast.bitmask, slow.bitmask)


def test_an_opening_the_budget_forces_at_once_is_prefilled_with_the_same_samples(tiny, monkeypatch) -> None:
    """``answer`` with a token budget inside the answer's reserve: the budget opens every answer at
    the first token, so the opening is prefilled as ``full``'s is, with the same draws and statistics."""
    import rlvr.sampling.decode as rollout

    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode="answer", answer="math")
    assert c.lead(c.reserve + 1) == [] and tok.decode(c.lead(c.reserve)) == "<answer>"
    fast = _rollouts(model, tok, c, seed=5, max_new=c.reserve)
    monkeypatch.setattr(Constrainer, "lead", lambda self, max_new_tokens=None: [])
    monkeypatch.setattr(rollout, "COMPACT_AT", 2.0)  # never drop ended rows
    slow = _rollouts(model, tok, c, seed=5, max_new=c.reserve)
    assert fast.texts == slow.texts and all(t.startswith("<answer>") for t in fast.texts)
    assert torch.allclose(fast.logprobs, slow.logprobs, atol=1e-5)
    assert torch.equal(fast.bitmask, slow.bitmask)
    # the same counts; the prefilled tokens' logits are never computed, so the mass the masks removed
    # and the argmax changes are measured over the decoded steps only (as under full)
    drop = {
        "decoding/masked_mass",
        "decoding/mask_changed_argmax",
        "decoding/stop_blocked_frac",
        "decoding/jumped_frac",
    }
    got, want = fast.decode_stats.metrics(), slow.decode_stats.metrics()
    assert {k: v for k, v in got.items() if k not in drop} == {k: v for k, v in want.items() if k not in drop}
    assert got["decoding/budget_forced_frac"] == 1.0


@pytest.mark.parametrize("fast", [True, False], ids=["lean decoder", "model forward"])
@pytest.mark.parametrize("mode, max_new", [("answer", 20), ("answer", 40), ("full", 40)])
def test_jump_forward_gives_the_samples_and_masks_of_token_by_token_decoding(tiny, mode, max_new, fast) -> None:
    """Forced tokens (the budget's opening, the grammar's closing, the final stop) are taken without a
    forward each and fed with the sampled token before them: the same tokens, masks, log-probs and
    generator state as decoding them one by one, in fewer forwards."""
    from rlvr.models import fast_decode
    from rlvr.sampling import steppers

    model, tok = tiny
    c = Constrainer(tok, model.config.vocab_size, mode=mode, answer="math")
    prompts = [tok.encode(f"Q: {a}+{b}=") for a, b in [(1, 2), (12, 34), (7, 8), (55, 5)]]
    out = {}
    for jump in (True, False):
        g = torch.Generator().manual_seed(3)
        forwards = []
        with pytest.MonkeyPatch.context() as mp:
            for cls in (fast_decode.FastDecoder, steppers.HFStepper):
                mp.setattr(
                    cls,
                    "step",
                    lambda self, tokens, counts=None, _f=cls.step, _log=forwards: (
                        _log.append(tokens.shape[-1] if tokens.dim() == 2 else 1),
                        _f(self, tokens, counts),
                    )[1],
                )
            b = generate(
                model,
                tok,
                prompts,
                group_size=4,
                max_new_tokens=max_new,
                constrain=c,
                generator=g,
                fast=fast,
                jump=jump,
            )
        out[jump] = (b, torch.rand(1, generator=g), forwards)
    (a, ga, fa), (b, gb, fb) = out[True], out[False]
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert torch.equal(a.bitmask, b.bitmask) and torch.equal(a.completion_mask, b.completion_mask)
    torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=0)
    assert torch.equal(ga, gb)  # the generator ends where token-by-token decoding leaves it
    sa, sb = a.decode_stats, b.decode_stats
    assert (sa.tokens, sa.masked, sa.forced, sa.budget_forced) == (sb.tokens, sb.masked, sb.forced, sb.budget_forced)
    assert sb.jumped == len(c.lead(max_new)) * a.completion_ids.shape[0] < sa.jumped  # only the prefill, or more
    assert len(fa) < len(fb) and set(fb) == {1}  # fewer forwards; token by token, one token each
    if mode == "answer" and max_new > c.reserve:  # the budget opens answers mid-way: fed in one forward
        assert max(fa) > 1


def test_single_token_masks_are_found_in_every_bit_of_a_word() -> None:
    from rlvr.decoding.constrain import _single_token

    words = 3
    rows = [pack_bits(words, [t]) for t in (0, 31, 32, 63, 95)] + [
        pack_bits(words, [1, 2]),
        pack_bits(words, [5, 40]),
        torch.zeros(words, dtype=torch.int32),
        pack_bits(words, [7], allow=False),
    ]
    assert _single_token(torch.stack(rows)) == [0, 31, 32, 63, 95, -1, -1, -1, -1]


def test_under_full_the_demo_format_reward_is_flat_at_one(tmp_path) -> None:
    """The demo decodes under ``full``: its format reward is 1.0 on every step (no format death)."""
    from rlvr.engine.trainer import GRPOTrainer

    cfg = load_config(
        None,
        [
            "model.hidden=32",
            "model.layers=1",
            "model.heads=2",
            "rollout.prompts_per_step=4",
            "rollout.group_size=8",
            "rollout.max_new_tokens=20",
            "run.eval_every=0",
            "data.eval_size=4",
            "run.steps=3",
            f"run.out_dir={tmp_path}",
            "decoding.constrain=full",
        ],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GRPOTrainer(cfg).train()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [x for x in lines if "reward/format/mean" in x]
    assert len(steps) == 3 and all(x["reward/format/mean"] == 1.0 for x in steps)
    assert all(x["causes/no_answer"] == 0.0 for x in steps)


def test_the_trainer_jumps_forced_tokens_unless_told_not_to(tmp_path) -> None:
    """``decoding.jump_forward`` reaches the trainer's sampling: the same rollouts either way; only the
    jumped share (and the forwards) differ."""
    from rlvr.engine.trainer import GRPOTrainer

    logs = {}
    for jump in (True, False):
        out = tmp_path / str(jump)
        cfg = load_config(
            None,
            [
                "model.hidden=32",
                "model.layers=1",
                "model.heads=2",
                "rollout.prompts_per_step=2",
                "rollout.group_size=4",
                "rollout.max_new_tokens=40",
                "run.eval_every=0",
                "data.eval_size=4",
                "run.steps=2",
                f"run.out_dir={out}",
                "decoding.constrain=answer",
                f"decoding.jump_forward={str(jump).lower()}",
            ],
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            GRPOTrainer(cfg).train()
        logs[jump] = (
            [json.loads(x)["completion"] for x in (out / "rollouts.jsonl").read_text().splitlines()],
            [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()],
        )
    assert logs[True][0] == logs[False][0]
    steps = {j: [m for m in ms if "decoding/jumped_frac" in m] for j, (_, ms) in logs.items()}
    assert all(m["decoding/jumped_frac"] > 0 for m in steps[True])
    assert all(m["decoding/jumped_frac"] == 0 for m in steps[False])
    assert [m["decoding/forced_frac"] for m in steps[True]] == [m["decoding/forced_frac"] for m in steps[False]]
