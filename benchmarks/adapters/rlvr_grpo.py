"""rlvr's GRPO on the shared trainer benchmark: same model, task, batch, lengths, lr as TRL's run.

Writes a ``summary.json`` with the same fields as ``../shared/bench/trainer/trl_grpo_baseline.py``,
and evaluates before/after with the *shared* ``task.greedy_eval`` (the same judge for both).

    python benchmarks/adapters/rlvr_grpo.py --model M --log-dir D [--steps 100 --seed 0 --lr 1e-4] [--cuda-graphs]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
BENCH = ROOT.parent / "shared" / "bench" / "trainer"
sys.path.insert(0, str(BENCH))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(BENCH / "models" / "tiny-warm"))
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--format-weight", type=float, default=0.2)
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none")
    ap.add_argument("--cuda-graphs", action="store_true", help="rollout.cuda_graphs (the recorded static step)")
    ap.add_argument(
        "--async-lag", type=int, default=0, help="rollout.mode=async with this max_lag (0: the synchronous engine)"
    )
    args = ap.parse_args()

    import task  # the shared benchmark task (held-out set, judge)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlvr.config import load_config
    from rlvr.data import Sample
    from rlvr.engine.async_engine import train_engine

    torch.set_num_threads(1)
    out = Path(args.log_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    before = task.greedy_eval(model, tok)
    pairs = task.train_pairs(args.steps * 8 * 2, seed=10_000 + args.seed)
    rows = [Sample(task.make_prompt(a, b), str(a + b), "math", f"{a}+{b}") for a, b in pairs]
    cfg = load_config(
        None,
        [
            f"run.steps={args.steps}",
            f"run.seed={args.seed}",
            f"run.out_dir={out / 'run'}",
            "run.eval_every=0",
            f"run.save_every={args.steps}",
            f"optim.lr={args.lr}",
            "rollout.prompts_per_step=8",
            "rollout.group_size=8",
            "rollout.max_new_tokens=32",
            "algo.loss=dapo",
            "algo.beta=0",
            f"rewards.weights={{accuracy: 1.0, format: {args.format_weight}}}",
            f"model.autocast={args.autocast}",
            f"rollout.cuda_graphs={str(args.cuda_graphs).lower()}",
            # the sampler a process of its own, at most this many versions behind the learner
            *(["rollout.mode=async", f"rollout.max_lag={args.async_lag}"] if args.async_lag else []),
        ],
    )
    trainer = train_engine(cfg, model=model, tokenizer=tok, train_rows=rows, eval_rows=[])
    steps: list[dict] = []
    t0 = time.perf_counter()
    trainer.train(on_step=lambda s, m: steps.append(m))
    wall = time.perf_counter() - t0  # the whole loop: metrics, logging, checkpoint and model saves too
    after = task.greedy_eval(trainer.model.cpu(), tok)  # the shared judge feeds its inputs on the CPU
    step_s = [m["time/step_s"] for m in steps]
    tokens = [m["completions/mean_length"] * 64 for m in steps]
    gen_s = [m["time/generate_s"] for m in steps]
    summary = {
        "steps_done": len(steps),
        "train_wall_s": round(wall, 1),
        "median_step_s": round(statistics.median(step_s), 3),
        "completion_tokens_per_s_train": round(sum(tokens) / sum(step_s), 1),
        "completion_tokens_per_s_generate_only": round(sum(tokens) / sum(gen_s), 1),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "heldout_before": {"acc": before["acc"], "fmt": before["fmt"]},
        "heldout_after": {"acc": after["acc"], "fmt": after["fmt"]},
        "loadavg": os.getloadavg(),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
