"""rlvr's GRPO trainer vs TRL's GRPOTrainer on the same model, task and settings, in the same run.

Both start from ``../shared/bench/trainer/models/tiny-warm`` (2-digit addition, 37% held-out
greedy accuracy) and train 100 steps of 8 prompts x 8 completions, max 32 new tokens, lr 1e-4,
beta 0, DAPO token-level loss, rewards correctness + 0.2 x format, one torch thread. TRL runs the
shared baseline script unchanged (``trl_grpo_baseline.py``); rlvr runs
``benchmarks/adapters/rlvr_grpo.py``. Both are judged by the shared ``task.greedy_eval``.

Prints per run and on average: median seconds per step, whole-run wall time per step (logging and
saves included), completion tokens per second, peak RSS, held-out accuracy before/after; then the
ratio of seconds per step (rlvr / TRL). ``rlvr-async`` is rlvr's asynchronous engine
(``rollout.mode: async``, lag 1: a sampler process one step ahead of the learner); its figure is the
whole-run wall per step (a learner step's own time hides the sampling it overlaps). A fourth
trainer, ``rlvr-on-TRL``, is the same baseline script with its trainer swapped for
``FailureAwareGRPOTrainer`` with the failure features off (``benchmarks/adapters/rlvr_on_trl.py``):
the cost of rlvr's layer on TRL. ``--trl-alloc`` adds TRL runs with the allocator setting rlvr's
trainer makes for itself (``rlvr.runtime``), to show what that setting alone is worth.

Bars: rlvr / TRL seconds per step <= 0.6x; held-out accuracy after the run at least TRL's;
rlvr-on-TRL / TRL seconds per step <= 1.10x with TRL's accuracy after the run (same seeds).

    .venv/bin/python benchmarks/trainer_vs_trl.py [--seeds 0 1 2] [--steps 100] [--trl-alloc] [--quick]
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
sys.path.insert(0, str(ROOT / "benchmarks"))
from results import Bar, report, src_path

# rlvr's trainer keeps freed memory in the process (rlvr.runtime.keep_freed_memory); the same glibc
# setting by environment, for a TRL run with it too (--trl-alloc)
ALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def run(cmd: list[str], cwd: Path, summary: Path, extra_env: dict[str, str] | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=src_path(), **(extra_env or {}))
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(summary.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument(
        "--trl-alloc",
        action="store_true",
        help="also run TRL with rlvr's allocator setting (glibc thresholds by environment)",
    )
    ap.add_argument("--quick", action="store_true", help="one seed, 30 steps (make bench-check)")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.steps = args.seeds[:1], min(args.steps, 30)
    model = BENCH / "models" / "tiny-warm"
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-bench-"))
    names = ["TRL", "rlvr", "rlvr-async", "rlvr-on-TRL"] + (["TRL+alloc"] if args.trl_alloc else [])
    rows: dict[str, list[dict]] = {n: [] for n in names}
    print(
        f"{'run':<16} {'s/step':>7} {'wall/st':>7} {'tok/s':>7} {'RSS MB':>7} {'acc before':>10} {'acc after':>9}  load"
    )
    for seed in args.seeds:
        for name in names:
            log = tmp / f"{name}-{seed}"
            if name.startswith("TRL") or name == "rlvr-on-TRL":
                script = (
                    BENCH / "trl_grpo_baseline.py"
                    if name.startswith("TRL")
                    else ROOT / "benchmarks" / "adapters" / "rlvr_on_trl.py"
                )
                cmd = [
                    sys.executable,
                    str(script),
                    "--model",
                    str(model),
                    "--out",
                    str(log / "model"),
                    "--log-dir",
                    str(log),
                    "--steps",
                    str(args.steps),
                    "--seed",
                    str(seed),
                ]
            else:
                cmd = [
                    sys.executable,
                    str(ROOT / "benchmarks" / "adapters" / "rlvr_grpo.py"),
                    "--model",
                    str(model),
                    "--log-dir",
                    str(log),
                    "--steps",
                    str(args.steps),
                    "--seed",
                    str(seed),
                    *(["--async-lag", "1"] if name == "rlvr-async" else []),
                ]
            s = run(cmd, BENCH, log / "summary.json", ALLOC_ENV if name == "TRL+alloc" else None)
            s["wall_per_step_s"] = s["train_wall_s"] / s["steps_done"]
            rows[name].append(s)
            print(
                f"{name + ' s' + str(seed):<16} {s['median_step_s']:7.3f} {s['wall_per_step_s']:7.3f} "
                f"{s['completion_tokens_per_s_train']:7.0f} "
                f"{s['ru_maxrss_mb']:7.0f} {s['heldout_before']['acc']:10.3f} {s['heldout_after']['acc']:9.3f}  "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print()
    mean = {
        n: {
            k: statistics.mean(r[k] if not isinstance(r[k], dict) else r[k]["acc"] for r in rs)
            for k in (
                "median_step_s",
                "wall_per_step_s",
                "completion_tokens_per_s_train",
                "ru_maxrss_mb",
                "heldout_after",
            )
        }
        for n, rs in rows.items()
    }
    for n, m in mean.items():
        print(
            f"{n:<12} mean: {m['median_step_s']:.3f} s/step (median), {m['wall_per_step_s']:.3f} s/step (wall), "
            f"{m['completion_tokens_per_s_train']:.0f} tok/s, {m['ru_maxrss_mb']:.0f} MB, "
            f"held-out after {args.steps} steps {m['heldout_after']:.3f}"
        )
    r, t = mean["rlvr"], mean["TRL"]
    print(
        f"\nrlvr / TRL seconds per step: {r['median_step_s'] / t['median_step_s']:.2f}x (bar: <= 0.6x); "
        f"whole-run wall per step {r['wall_per_step_s'] / t['wall_per_step_s']:.2f}x; "
        f"accuracy after: rlvr {r['heldout_after']:.3f} vs TRL {t['heldout_after']:.3f} (bar: rlvr >= TRL)"
    )
    if "TRL+alloc" in mean:
        print(
            f"rlvr / (TRL with the same allocator setting): "
            f"{r['median_step_s'] / mean['TRL+alloc']['median_step_s']:.2f}x"
        )
    a = mean["rlvr-async"]
    print(
        f"rlvr-async / TRL whole-run wall per step: {a['wall_per_step_s'] / t['wall_per_step_s']:.2f}x "
        f"(rlvr sync {r['wall_per_step_s'] / t['wall_per_step_s']:.2f}x); accuracy after: {a['heldout_after']:.3f}"
    )
    o = mean["rlvr-on-TRL"]
    print(
        f"rlvr-on-TRL / TRL seconds per step: {o['median_step_s'] / t['median_step_s']:.2f}x (bar: <= 1.10x); "
        f"accuracy after: {o['heldout_after']:.3f} vs TRL {t['heldout_after']:.3f} (bar: the same)"
    )
    bars = [
        Bar("rlvr / TRL seconds per step", r["median_step_s"] / t["median_step_s"], "<=", 0.6, "x"),
        # one quick seed on 200 problems: the difference's standard error (~0.05) dwarfs the bar
        Bar(
            "rlvr minus TRL held-out accuracy after the run",
            r["heldout_after"] - t["heldout_after"],
            ">=",
            0.0,
            quick_decides=False,
        ),
        Bar("rlvr-on-TRL / TRL seconds per step", o["median_step_s"] / t["median_step_s"], "<=", 1.10, "x"),
        Bar(
            "rlvr-on-TRL minus TRL held-out accuracy, absolute",
            abs(o["heldout_after"] - t["heldout_after"]),
            "<=",
            0.005,
        ),
    ]
    report("trainer_vs_trl", {"mean": mean, "runs": rows}, bars, args, quick=args.quick)


if __name__ == "__main__":
    main()
