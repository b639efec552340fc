"""What reaches the gradient on TRL: ``FailureAwareGRPOTrainer``'s own objects, TRL's own shuffle and split.

* A trained row weighs the same whichever micro-batch TRL's shuffle puts it in (for every loss TRL
  shares with rlvr, rows excluded by the failure step in the batch), several shuffle seeds.
* rlvr's engine and the TRL adapter agree on the same batch of rollouts and advantages: the same
  loss and the same gradients for each aggregation they share.
"""

from __future__ import annotations

import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from datasets import Dataset
from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

from rlvr.config import FailureConfig, load_config
from rlvr.data.prompts import encode
from rlvr.engine.trainer import GRPOTrainer
from rlvr.integrations.trl import FailureAwareGRPOTrainer
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.sampling import generate
from tests.integrations.trl.test_drop_in import _args  # the CPU, float32, unsaved GRPOConfig

ROWS = [{"prompt": [{"role": "user", "content": f"{a}+{a}"}], "answer": str(2 * a)} for a in range(10, 18)]


def _declines_some(completions, **kw):
    """A user's only reward: it declines rows 1 and 5 (nothing scores them: excluded), scores the rest."""
    return [None if i in (1, 5) else float(len(str(c)) % 5) for i, c in enumerate(completions)]


def _trl(tmp_path, model, tok, *, loss: str, batch: int, accumulation: int, max_new: int = 12):
    args = _args(
        tmp_path,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=accumulation,
        max_completion_length=max_new,
        learning_rate=1e-3,
        loss_type=loss,
        temperature=1.0,
        top_k=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = FailureAwareGRPOTrainer(
            model=model,
            processing_class=tok,
            reward_funcs=[_declines_some],
            args=args,
            train_dataset=Dataset.from_list(ROWS),
            failure=FailureConfig(resample_tries=0),
        )
    t.model.train()
    return t


def _grads(model) -> dict[str, torch.Tensor]:
    out = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return out


def _assert_same(a, b) -> None:
    assert a.keys() == b.keys() and max(float(g.abs().max()) for g in a.values()) > 1e-7
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=1e-6, rtol=1e-4, msg=k)


@pytest.mark.parametrize("loss", ["grpo", "dr_grpo", "dapo", "sapo", "luspo"])
def test_trl_micro_batch_split_does_not_change_gradients(tmp_path, loss: str) -> None:
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, seed=4)
    whole = _trl(tmp_path / "whole", model, tok, loss=loss, batch=8, accumulation=1)
    split = _trl(tmp_path / "split", copy.deepcopy(model), tok, loss=loss, batch=4, accumulation=2)
    torch.manual_seed(0)
    out = whole._generate_and_score_completions([dict(ROWS[k]) for k in (0, 1) for _ in range(4)])
    assert not bool(out["rlvr_admit"].all()) and bool(out["rlvr_admit"].any())  # rows excluded in the batch
    whole.current_gradient_accumulation_steps = 1
    whole._compute_loss(whole.model, out).backward()
    reference = _grads(whole.model)
    split.current_gradient_accumulation_steps = 2
    for seed in range(4):  # TRL's own shuffle, then its split into the two accumulation steps
        torch.manual_seed(seed)
        for chunk in split_tensor_dict(shuffle_sequence_dict(dict(out)), 2):
            split._compute_loss(split.model, chunk).backward()
        _assert_same(reference, _grads(split.model))


@pytest.mark.parametrize("scale", [1.0, 0.25], ids=["full step", "thin step scaled"])
@pytest.mark.parametrize("loss", ["grpo", "dr_grpo", "dapo"])
def test_engines_agree_on_loss_and_gradients(tmp_path, loss: str, scale: float) -> None:
    """The same rollouts (prompts of one length: TRL's forward takes positions from the layout, rlvr's
    from the mask) and advantages, rows excluded, the old log-probs the current policy's (ratio 1);
    and a thin step scaled by its admitted share (``failure.thin_step_scale``) is that share of the
    full step's gradient on both."""
    cfg = load_config(
        None,
        [
            "model.hidden=32",
            "model.layers=1",
            "model.heads=2",
            "rollout.prompts_per_step=2",
            "rollout.group_size=4",
            "rollout.max_new_tokens=12",
            "run.steps=1",
            f"algo.loss={loss}",
            f"run.out_dir={tmp_path / 'rlvr'}",
            "rewards.weights={cosine: 1.0}",
            "rewards.options={}",
            "data.eval_size=4",
        ],
    )
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, seed=6)
    engine = GRPOTrainer(cfg, model=copy.deepcopy(model), tokenizer=tok, train_rows=[], eval_rows=[])
    adapter = _trl(tmp_path / "trl", copy.deepcopy(model), tok, loss=loss, batch=8, accumulation=1)
    prompts = [encode(tok, r["prompt"]) for r in ROWS[:2]]
    assert len({len(p) for p in prompts}) == 1
    batch = generate(
        engine.model, tok, prompts, group_size=4, max_new_tokens=12, generator=torch.Generator().manual_seed(3)
    )
    batch = type(batch)(**{**vars(batch), "logprobs": engine.learner.logprobs(batch)})  # the current policy's: ratio 1
    adv = torch.randn(8, generator=torch.Generator().manual_seed(2))
    admit = torch.ones(8, dtype=torch.bool)
    admit[[2, 5]] = False
    engine.model.zero_grad(set_to_none=True)
    engine.learner.backward(batch, adv, admit)
    full = _grads(engine.model)
    engine.model.zero_grad(set_to_none=True)
    engine.learner.backward(batch, adv, admit, scale=scale)
    ours = _grads(engine.model)
    _assert_same({k: g * scale for k, g in full.items()}, ours)
    trained = engine.learner.trained_tokens(batch, admit)
    inputs = {
        "prompt_ids": batch.prompt_ids,
        "prompt_mask": batch.prompt_mask,
        "completion_ids": batch.completion_ids,
        "completion_mask": batch.completion_mask,
        "advantages": adv,
        "old_per_token_logps": None,
        "num_items_in_batch": trained.sum(),
        "rlvr_admit": admit,
        "rlvr_trained_rows": (trained.sum(1) > 0).sum(),
        "rlvr_step_scale": torch.tensor(scale),
    }
    adapter.current_gradient_accumulation_steps = 1
    adapter._compute_loss(adapter.model, inputs).backward()
    _assert_same(ours, _grads(adapter.model))


def _scores_all(completions, **kw):
    """A user's reward that scores every row, correctness + 0.2 x format as the trainer bench's: values
    whose group statistics round differently when computed in another order."""
    codes = [sum(map(ord, str(c))) for c in completions]
    return [k % 2 + 0.2 * (k % 3 == 0) for k in codes]


def test_failure_features_off_is_trls_step_to_the_last_bit(tmp_path) -> None:
    """The promise of the one-import swap: ``FailureAwareGRPOTrainer`` with the failure features off
    trains the same weights as TRL's ``GRPOTrainer``, bit for bit (the advantages' statistics are
    TRL's own operations), over steps whose sampling depends on the step before."""
    off = FailureConfig(
        quarantine=False, resample_tries=0, cold_start=False, dynamic_sampling=0, exclude_truncated=False
    )
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, seed=5)
    weights = []
    for name, make in (("trl", trl.GRPOTrainer), ("rlvr", FailureAwareGRPOTrainer)):
        args = _args(
            tmp_path / name,
            max_steps=4,
            per_device_train_batch_size=16,
            num_generations=8,
            max_completion_length=10,
            learning_rate=1e-2,
            loss_type="dapo",
            top_k=0,
        )
        extra = {"failure": off, "run_dir": tmp_path / f"{name}-run"} if name == "rlvr" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = make(
                model=copy.deepcopy(model),
                processing_class=tok,
                reward_funcs=[_scores_all],
                args=args,
                train_dataset=Dataset.from_list([{"prompt": r["prompt"]} for r in ROWS]),  # no verifier
                **extra,
            )
            t.train()
        weights.append({n: p.detach().clone() for n, p in t.model.named_parameters()})
    trl_w, rlvr_w = weights
    assert any(not torch.equal(trl_w[n], p) for n, p in model.named_parameters())  # it trained
    assert [n for n in trl_w if not torch.equal(trl_w[n], rlvr_w[n])] == []
