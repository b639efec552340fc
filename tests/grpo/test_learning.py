"""GRPO learns: on a warmed-up tiny model, the reward rises well beyond its step-to-step noise.

Single-digit addition (answers 0..18) keeps the whole test on CPU within a couple of minutes:
a short SFT brings the model to a partial accuracy, then GRPO runs with the accuracy and
format rewards. Asserted: the mean rollout accuracy of the last steps exceeds that of the
first steps by more than 4 standard errors, and held-out greedy accuracy goes up.
"""

from __future__ import annotations

import statistics

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_grpo_raises_reward_beyond_noise(tmp_path):
    from rlvr.config import load_config
    from rlvr.data.tasks import addition_eval, addition_train
    from rlvr.grpo.trainer import GRPOTrainer, setup_torch
    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.sft import sft

    setup_torch(1, 0)
    tok = build_tokenizer()
    model = build_model(tok, hidden=64, layers=2, heads=4, seed=0)
    held = addition_eval(25, max_operand=9)
    warm = sft(model, tok, addition_train(7, max_operand=9, held_out=25), steps=400, batch_size=32, lr=3e-3,
               eval_rows=held, eval_every=10, target_accuracy=0.2)
    assert warm["accuracy"] < 0.9, "warm-up overshot: nothing left for GRPO to learn"
    cfg = load_config(None, ["run.steps=250", "run.eval_every=0", f"run.out_dir={tmp_path}", "run.save_every=1000",
                             "data.task_options={max_operand: 9}", "data.eval_size=25", "optim.lr=1e-3",
                             "rollout.max_new_tokens=16"])
    trainer = GRPOTrainer(cfg, model=model, tokenizer=tok)
    steps: list[dict] = []
    result = trainer.train(on_step=lambda s, m: steps.append(m))
    acc = [m["verify/correct"] for m in steps]
    first, last = acc[:20], acc[-20:]
    se = (statistics.pstdev(first) ** 2 / len(first) + statistics.pstdev(last) ** 2 / len(last)) ** 0.5
    gain = statistics.mean(last) - statistics.mean(first)
    assert gain > 4 * se, (statistics.mean(first), statistics.mean(last), se)
    assert result["after"]["accuracy"] > result["before"]["accuracy"]
