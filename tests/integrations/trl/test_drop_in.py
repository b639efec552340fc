"""A TRL user changes one import and nothing else breaks: the semantics TRL's own GRPO tests pin down,
held by tests of rlvr's own (so the project stands without the conformance harness).

* no gold column and no rlvr reward: the trainer degrades to TRL plus the causes it can still tell
  (rows scored by the reward functions alone: ``scored``), never refuses;
* a batch row holds the dataset's own columns, nothing rlvr added;
* a streaming (``IterableDataset``) train set, async reward functions, TRL's ``scale_rewards`` and
  ``multi_objective_aggregation`` work as on ``trl.GRPOTrainer``.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from datasets import Dataset, IterableDataset

from rlvr.integrations.trl import FailureAwareGRPOTrainer
from rlvr.models.tiny import build_model, build_tokenizer

PROMPTS = [{"prompt": [{"role": "user", "content": f"{a}+{a}"}], "topic": f"t{a}"} for a in range(8)]


def _args(tmp_path: Path, **kw) -> trl.GRPOConfig:
    base = {
        "output_dir": str(tmp_path),
        "max_steps": 1,
        "per_device_train_batch_size": 8,
        "num_generations": 4,
        "max_completion_length": 8,
        "learning_rate": 0.1,
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,
        "save_strategy": "no",
        "seed": 0,
        "beta": 0.0,
        "disable_tqdm": True,
    }
    return trl.GRPOConfig(**{**base, **kw})


def _trainer(tmp_path: Path, rewards, dataset=None, **kw) -> FailureAwareGRPOTrainer:
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FailureAwareGRPOTrainer(
            model=model,
            processing_class=tok,
            reward_funcs=rewards,
            args=_args(tmp_path, **kw),
            train_dataset=dataset if dataset is not None else Dataset.from_list(PROMPTS),
        )


def _length(completions, **kw):
    return [float(len(c[0]["content"] if isinstance(c, list) else c)) for c in completions]


def test_without_a_gold_column_it_trains_on_the_rewards_alone_and_says_what_it_can_tell(tmp_path: Path) -> None:
    seen: list[set[str]] = []

    def length(completions, **kw):  # records which columns a user's reward receives
        seen.append(set(kw))
        return _length(completions)

    trainer = _trainer(tmp_path, [length])
    assert "no gold column" in trainer.telling and "scored" in trainer.telling
    before = {n: p.clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(p, trainer.model.get_parameter(n)) for n, p in before.items())
    causes = trainer._gen.decision.causes if trainer._gen is not None else []
    assert causes and {c.value for c in causes} <= {"scored", "truncated"}
    columns = set().union(*seen)
    assert "topic" in columns and "prompt_id" not in columns  # the dataset's own columns, nothing rlvr added


def test_with_a_gold_column_the_verification_causes_join(tmp_path: Path) -> None:
    rows = [dict(r, answer=str(2 * a)) for a, r in enumerate(PROMPTS)]
    trainer = _trainer(tmp_path, [_length], Dataset.from_list(rows))
    assert "verifying each completion" in trainer.telling
    trainer.model.train()
    trainer._generate_and_score_completions([dict(rows[k]) for k in (0, 1) for _ in range(4)])
    assert {c.value for c in trainer._gen.decision.causes} <= {"correct", "wrong", "no_answer", "truncated"}


def test_a_streaming_train_set_trains(tmp_path: Path) -> None:
    stream = IterableDataset.from_generator(lambda: iter(PROMPTS * 4))
    trainer = _trainer(tmp_path, [_length], stream)
    trainer.train()
    assert trainer.state.global_step == 1


def test_async_reward_functions_are_awaited(tmp_path: Path) -> None:
    returned: list[list[float]] = []

    async def slow_length(completions, **kw):
        await asyncio.sleep(0)
        returned.append(_length(completions))
        return returned[-1]

    trainer = _trainer(tmp_path, [slow_length])
    trainer.model.train()
    trainer._generate_and_score_completions([dict(PROMPTS[k]) for k in (0, 1) for _ in range(4)])
    assert [v.total for v in trainer._gen.views] == returned[-1]  # awaited: its values are the rows' rewards


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
@pytest.mark.parametrize("aggregation", ["sum_then_normalize", "normalize_then_sum"])
def test_scale_rewards_and_multi_objective_aggregation_are_honoured(
    tmp_path: Path, scale: str, aggregation: str
) -> None:
    """With nothing excluded, rlvr's advantages are TRL's own for each of TRL's settings."""

    def parity(completions, **kw):
        return [float(len(c[0]["content"]) % 2) for c in completions]

    trainer = _trainer(
        tmp_path,
        [_length, parity],
        scale_rewards=scale,
        multi_objective_aggregation=aggregation,
        reward_weights=[0.3, 1.0],
    )
    trainer.model.train()
    captured: dict[str, torch.Tensor] = {}
    real = trl.GRPOTrainer._calculate_rewards

    def spy(self, *a, **k):
        captured["r"] = real(self, *a, **k)
        return captured["r"]

    trl.GRPOTrainer._calculate_rewards = spy
    try:
        out = trainer._generate_and_score_completions([dict(PROMPTS[k]) for k in (0, 1) for _ in range(4)])
    finally:
        trl.GRPOTrainer._calculate_rewards = real
    assert bool(out["rlvr_admit"].all())
    r, w = captured["r"], torch.tensor([0.3, 1.0])
    if aggregation == "sum_then_normalize":
        total = (r * w).sum(1)
        mean = total.view(-1, 4).mean(1).repeat_interleave(4)
        std = {
            "group": total.view(-1, 4).std(1).repeat_interleave(4),
            "batch": total.std().expand(8),
            "none": torch.ones(8),
        }[scale]
        want = (total - mean) / (std + (1e-4 if scale != "none" else 0.0))
    else:
        g = r.view(-1, 4, 2)
        normed = ((g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True) + 1e-4)).view(-1, 2)
        total = (normed * w).sum(1)
        want = (total - total.mean()) / (total.std() + 1e-4)  # TRL scales GDPO by the batch std always
    torch.testing.assert_close(out["advantages"], want.to(out["advantages"].dtype), atol=1e-4, rtol=1e-3)
