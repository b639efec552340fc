"""A TRL user's script, run by ``tests/integrations/test_trl_failure_aware.py`` under torchrun (2 CPU processes).

The dataset plants failures: a prompt whose every rollout the reward declines (``None`` from every
reward function: nothing scores it, so it is invalid, resampled, dies and is quarantined), rows whose
gold cannot be parsed (``bad_gold``, told by rlvr's verifier from the gold column), and rows the
reward declines at random. Each process writes what it saw (its quarantine set, its cold-start
switch, the loss tokens and normaliser of every micro-batch) to ``OUT/rank<k>.json``.

    python -m torch.distributed.run --nproc_per_node 2 tests/integrations/trl/two_process.py OUT
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import trl
from datasets import Dataset

from rlvr.config import FailureConfig
from rlvr.integrations.trl import FailureAwareGRPOTrainer
from rlvr.models.tiny import build_model, build_tokenizer

warnings.simplefilter("ignore")
out = Path(sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(1)
tok = build_tokenizer()
model = build_model(tok, hidden=32, layers=1, heads=2, seed=0)
# unshuffled: step 1 trains on the prompt that dies and the bad gold, then the others in order
rows = [
    {"prompt": [{"role": "user", "content": "1+1"}], "answer": "2", "prompt_id": "dies"},
    {"prompt": [{"role": "user", "content": "2+3"}], "answer": "\\frac{", "prompt_id": "badgold"},
]
rows += [
    {"prompt": [{"role": "user", "content": f"{a}+{a + 1}"}], "answer": str(2 * a + 1), "prompt_id": f"p{a}"}
    for a in range(8)
]


def declines(completions, prompt_id, **kw):  # a user's only reward: None for the prompt that always dies, some others
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [None if pid == "dies" or len(t) % 7 == 3 else 0.0 for t, pid in zip(texts, prompt_id)]


seen: list[dict] = []
real_loss = trl.GRPOTrainer._compute_loss


def spy(self, model, inputs):  # what TRL's loss receives, after rlvr excluded rows
    seen.append(
        {
            "mask": inputs["completion_mask"].sum(1).tolist(),
            "items": float(inputs["num_items_in_batch"]),
            "admit": self._spy_admit,
        }
    )
    return real_loss(self, model, inputs)


class Spy(FailureAwareGRPOTrainer):
    def _compute_loss(self, model, inputs):
        self._spy_admit = inputs["rlvr_admit"].tolist()
        return super()._compute_loss(model, inputs)


trl.GRPOTrainer._compute_loss = spy
args = trl.GRPOConfig(
    output_dir=str(out),
    max_steps=4,
    per_device_train_batch_size=4,
    num_generations=4,
    max_completion_length=10,
    learning_rate=1e-3,
    logging_steps=1,
    report_to="none",
    use_cpu=True,
    bf16=False,
    gradient_checkpointing=False,
    save_strategy="no",
    seed=0,
    beta=0.0,
    ddp_backend="gloo",
    loss_type="dapo",
    disable_tqdm=True,
    shuffle_dataset=False,
)
trainer = Spy(
    model=model,
    processing_class=tok,
    reward_funcs=[declines],
    train_dataset=Dataset.from_list(rows),
    args=args,
    failure=FailureConfig(
        quarantine_consecutive=1,
        resample_tries=1,
        cold_start=True,
        cold_start_window=2,
        cold_start_threshold=1.0,
        max_staleness=10,
    ),
)
trainer.train()
trainer.save_model(str(out / "model"))
rank = trainer.accelerator.process_index
fa = trainer.fa
(out / f"rank{rank}.json").write_text(
    json.dumps(
        {
            "quarantined": sorted(fa.quarantine.entries),
            "cold_start": fa.cold_start.state(),
            "loss_inputs": seen,
            "world": trainer.accelerator.num_processes,
        }
    )
)
