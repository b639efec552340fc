"""rlvr's GRPO trainer vs TRL's GRPOTrainer on the same model, task and settings, in the same run.

Both start from ``../shared/bench/trainer/models/tiny-warm`` (2-digit addition, 37% held-out
greedy accuracy) and train 100 steps of 8 prompts x 8 completions, max 32 new tokens, lr 1e-4,
beta 0, DAPO token-level loss, rewards correctness + 0.2 x format, one torch thread. TRL runs the
shared baseline script unchanged (``trl_grpo_baseline.py``); rlvr runs
``benchmarks/adapters/rlvr_grpo.py``. Both are judged by the shared ``task.greedy_eval``.

Prints per run and on average: median seconds per step, completion tokens per second, peak RSS,
held-out accuracy before/after; then the ratio of seconds per step (rlvr / TRL).

    .venv/bin/python benchmarks/trainer_vs_trl.py [--seeds 0 1 2] [--steps 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench" / "trainer"


def run(cmd: list[str], cwd: Path, summary: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(summary.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    model = BENCH / "models" / "tiny-warm"
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-bench-"))
    rows: dict[str, list[dict]] = {"TRL": [], "rlvr": []}
    print(f"{'run':<12} {'s/step':>7} {'tok/s':>7} {'RSS MB':>7} {'acc before':>10} {'acc after':>9}  load")
    for seed in args.seeds:
        for name in ("TRL", "rlvr"):
            log = tmp / f"{name}-{seed}"
            if name == "TRL":
                cmd = [sys.executable, str(BENCH / "trl_grpo_baseline.py"), "--model", str(model), "--out",
                       str(log / "model"), "--log-dir", str(log), "--steps", str(args.steps), "--seed", str(seed)]
            else:
                cmd = [sys.executable, str(ROOT / "benchmarks" / "adapters" / "rlvr_grpo.py"), "--model", str(model),
                       "--log-dir", str(log), "--steps", str(args.steps), "--seed", str(seed)]
            s = run(cmd, BENCH, log / "summary.json")
            rows[name].append(s)
            print(f"{name + ' s' + str(seed):<12} {s['median_step_s']:7.3f} {s['completion_tokens_per_s_train']:7.0f} "
                  f"{s['ru_maxrss_mb']:7.0f} {s['heldout_before']['acc']:10.3f} {s['heldout_after']['acc']:9.3f}  "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
    print()
    mean = {n: {k: statistics.mean(r[k] if not isinstance(r[k], dict) else r[k]["acc"] for r in rs)
                for k in ("median_step_s", "completion_tokens_per_s_train", "ru_maxrss_mb", "heldout_after")}
            for n, rs in rows.items()}
    for n, m in mean.items():
        print(f"{n:<6} mean: {m['median_step_s']:.3f} s/step, {m['completion_tokens_per_s_train']:.0f} tok/s, "
              f"{m['ru_maxrss_mb']:.0f} MB, held-out after {args.steps} steps {m['heldout_after']:.3f}")
    print(f"\nrlvr / TRL seconds per step: {mean['rlvr']['median_step_s'] / mean['TRL']['median_step_s']:.2f}x "
          f"(bar: <= 0.6x); accuracy after: rlvr {mean['rlvr']['heldout_after']:.3f} vs TRL "
          f"{mean['TRL']['heldout_after']:.3f} (bar: rlvr >= TRL)")


if __name__ == "__main__":
    main()
