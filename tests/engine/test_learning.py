"""GRPO learns: on a briefly warmed-up tiny model, the reward rises well beyond its step-to-step noise.

The warm-up (a short SFT on 2-digit addition) leaves the model writing the answer format only part
of the time; GRPO with the accuracy and format rewards must then raise the mean reward of its own
rollouts. Asserted: the mean over the last 15 steps exceeds the mean over the first 15 by more
than 4 standard errors (a real trend, not "the loss changed"), and the format-death rate falls.
"""

from __future__ import annotations

import statistics

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_grpo_raises_reward_beyond_noise(tmp_path):
    from rlvr.config import load_config
    from rlvr.data.tasks import addition_eval, addition_train
    from rlvr.engine.trainer import GRPOTrainer
    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.runtime import setup_torch
    from rlvr.sft import sft

    setup_torch(1, 0)
    tok = build_tokenizer()
    model = build_model(tok, hidden=64, layers=2, heads=4, seed=0)
    sft(model, tok, addition_train(7), steps=70, batch_size=64, lr=3e-3, warmup_steps=10)
    cfg = load_config(
        None,
        [
            "run.steps=80",
            "run.eval_every=0",
            f"run.out_dir={tmp_path}",
            "run.save_every=1000",
            "data.eval_size=50",
            "optim.lr=1e-3",
            "rollout.max_new_tokens=24",
            "rewards.weights={accuracy: 1.0, format: 1.0}",
        ],
    )
    trainer = GRPOTrainer(cfg, model=model, tokenizer=tok, train_rows=None, eval_rows=addition_eval(50))
    steps: list[dict] = []
    trainer.train(on_step=lambda s, m: steps.append(m))
    reward = [m["reward/total/mean"] for m in steps]
    first, last = reward[:15], reward[-15:]
    se = (statistics.pvariance(first) / len(first) + statistics.pvariance(last) / len(last)) ** 0.5
    gain = statistics.mean(last) - statistics.mean(first)
    assert gain > 4 * se, (statistics.mean(first), statistics.mean(last), se)
    deaths = [m["verify/no_answer"] + m["completions/truncated_frac"] for m in steps]
    assert statistics.mean(deaths[-15:]) < statistics.mean(deaths[:15])
