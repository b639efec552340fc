"""The sampler's log-probs are the training forward's, in float32, on every kind of row.

rlvr's engine uses the log-probs it recorded while sampling as the old policy's; they must be what
the loss's own forward (:meth:`rlvr.engine.learner.Learner.logprobs`, the shared-prompt path and
the model's own) computes for every trained token: plain rows, rows that end on a stop id other than
the tokenizer's eos (one that is also the pad id), rows sampled under a grammar (the masks applied
again), and episodes whose tool results sit between the policy's turns.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import load_config
from rlvr.data.prompts import encode
from rlvr.engine.trainer import GRPOTrainer
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.sampling import generate, stop_ids_of
from tests.conftest import calculator_rows

TINY = [
    "model.hidden=32",
    "model.layers=2",
    "model.heads=2",
    "rollout.prompts_per_step=4",
    "rollout.group_size=4",
    "rollout.max_new_tokens=16",
    "run.eval_every=0",
    "data.eval_size=4",
    "run.steps=1",
    "rewards.weights={cosine: 1.0}",
    "rewards.options={}",
]


def _trainer(tmp_path, *extra: str, model=None, tok=None) -> GRPOTrainer:
    return GRPOTrainer(load_config(None, [*TINY, f"run.out_dir={tmp_path}", *extra]), model=model, tokenizer=tok)


def _gap(trainer: GRPOTrainer, b) -> float:
    """The largest |training - sampling| log-prob over the tokens the loss trains."""
    admit = torch.ones(b.completion_ids.shape[0], dtype=torch.bool)
    trained = trainer.learner.trained_tokens(b, admit).bool()
    assert bool(trained.any())
    return float((trainer.learner.logprobs(b) - b.logprobs)[trained].abs().max())


@pytest.mark.parametrize("micro_batch", [None, 2], ids=["shared-prompt forward", "model's own forward"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampler_logprobs_match_training(tmp_path, micro_batch, temperature) -> None:
    extra = [f"rollout.temperature={temperature}"] + ([f"algo.micro_batch={micro_batch}"] if micro_batch else [])
    trainer = _trainer(tmp_path, *extra)
    b = trainer.rollout(trainer.data.take(4))
    assert _gap(trainer, b) < 1e-4


def test_rows_end_on_every_declared_stop_id_and_nothing_after_it_is_trained(tmp_path) -> None:
    """A model whose generation config lists a second stop id (as Qwen2.5-Instruct lists
    ``<|endoftext|>``, its pad token, beside ``<|im_end|>``): a row ends on the first stop it
    samples, that stop is its last trained token, and the training forward agrees with the sampler."""
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=2, heads=2, seed=5)
    prompt = encode(tok, [{"role": "user", "content": "1+2"}])
    with torch.no_grad():  # the token the model finds likeliest after the prompt: sampled early and often
        second = int(model(input_ids=torch.tensor([prompt])).logits[0, -1].argmax())
    assert second != tok.eos_token_id
    tok.pad_token = tok.convert_ids_to_tokens(second)  # the second stop is also the pad id, as Qwen's is
    model.generation_config.eos_token_id = [tok.eos_token_id, second]
    assert stop_ids_of(model, tok) == tuple(sorted({tok.eos_token_id, second}))
    trainer = _trainer(tmp_path, "rollout.max_new_tokens=24", model=model, tok=tok)
    b = trainer.rollout(trainer.data.take(4))
    ended = 0
    for ids, m, fin in zip(b.completion_ids, b.completion_mask, b.finish):
        n = int(m.sum())
        assert bool(m[:n].all()) and not bool(m[n:].any())  # one contiguous run: nothing trained after the end
        stops = [i for i, t in enumerate(ids[:n].tolist()) if t in (tok.eos_token_id, second)]
        if fin == "eos":
            assert stops == [n - 1]  # the first stop sampled is the row's last token
            ended += int(ids[n - 1]) == second
        else:
            assert stops == []
    assert ended >= 2  # rows really did end on the second stop id
    assert _gap(trainer, b) < 1e-4


def test_constrained_rows_are_scored_under_their_sampling_masks(tmp_path) -> None:
    trainer = _trainer(
        tmp_path,
        "decoding.constrain=answer",
        "rewards.weights={cosine: 1.0, format: 0.2}",
        "rewards.options={format: {think_tag: null}}",
        "rollout.max_new_tokens=24",
    )
    b = trainer.rollout(trainer.data.take(4))
    assert b.bitmask is not None and bool((b.bitmask != -1).any())
    assert _gap(trainer, b) < 1e-4


def test_episode_rows_with_tool_results_match_training(calculator_policy, tmp_path) -> None:
    """A policy taught to call the calculator: its turns around the tool's result are scored by the
    training forward as they were sampled, the result itself is attended and never trained."""
    model, tok = calculator_policy
    rows = calculator_rows()
    trainer = GRPOTrainer(
        load_config(
            None,
            [
                *TINY,
                f"run.out_dir={tmp_path}",
                "model.hidden=64",
                "model.heads=4",
                "env.tools=[calculator]",
                "env.max_tokens=160",
            ],
        ),
        model=copy.deepcopy(model),
        tokenizer=tok,
        train_rows=rows * 4,
        eval_rows=rows,
    )
    b = trainer.rollout(rows)
    assert b.tool_mask is not None and bool(b.tool_mask.any())  # real calls were made
    assert not bool((b.loss_mask * b.tool_mask).any())
    assert _gap(trainer, b) < 1e-4


def test_greedy_and_sampled_paths_stop_on_the_same_ids() -> None:
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, seed=2)
    model.generation_config.eos_token_id = [tok.eos_token_id, tok.convert_tokens_to_ids("7")]
    prompts = [encode(tok, [{"role": "user", "content": "3+4"}])]
    for fast in (True, False):
        b = generate(
            model, tok, prompts, group_size=8, max_new_tokens=40, fast=fast, generator=torch.Generator().manual_seed(0)
        )
        for ids, m in zip(b.completion_ids, b.completion_mask):
            kept = ids[m.bool()].tolist()
            assert all(t not in b.stop_ids for t in kept[:-1])
