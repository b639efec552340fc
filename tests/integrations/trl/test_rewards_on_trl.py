"""rlvr rewards plug into TRL's GRPOTrainer unchanged (2 CPU steps, tiny model from a config)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")


def test_grpo_trainer_logs_our_rewards(tmp_path):
    from datasets import Dataset
    from transformers import TrainerCallback

    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.rewards import Total, build_reward

    torch.set_num_threads(1)
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2)
    rows = [{"prompt": f"{a}+{b}", "answer": str(a + b)} for a, b in [(1, 2), (3, 4), (5, 6), (7, 8)]]
    accuracy = build_reward("accuracy")
    fmt = build_reward("format")
    total = Total({"accuracy": 1.0, "repetition": [[0, 0.0], [1, 1.0]]})
    seen: list[dict] = []

    class Keep(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            seen.append(dict(logs or {}))

    calls: list[list[float | None]] = []

    def spy(fn):
        def wrapped(*a, **kw):
            out = fn(*a, **kw)
            calls.append(out)
            return out

        wrapped.__name__ = fn.__name__
        return wrapped

    config = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        learning_rate=1e-4,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        save_strategy="no",
        seed=0,
        beta=0.0,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[spy(accuracy), fmt, total],
        train_dataset=Dataset.from_list(rows),
        args=config,
        callbacks=[Keep()],
    )
    trainer.train()
    logs = [x for x in seen if "rewards/accuracy/mean" in x]
    assert len(logs) == 2
    for name in ("accuracy", "format", "total"):
        assert f"rewards/{name}/mean" in logs[0] and f"rewards/{name}/std" in logs[0]
    # TRL's accuracy metric is the mean of what our function returned in that step
    first = [v for v in calls[0] if v is not None]
    assert math.isclose(logs[0]["rewards/accuracy/mean"], sum(first) / len(first), abs_tol=1e-6)
    # the verdicts came through the side channel; the schedule's weight is logged by TRL
    assert accuracy.last and all(s.verdict is not None for s in accuracy.last)
    assert logs[1]["weights/repetition"] == pytest.approx(1.0) and logs[0]["weights/repetition"] == 0.0
