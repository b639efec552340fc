"""Does the sampler/trainer mismatch matter, and does correcting it help? Arms on the same budget.

SmolLM2-135M-Instruct with LoRA on the real-learning task (reasoning-gym ``chain_sum``, the
settings of ``benchmarks/real_learning.py``), the same number of GRPO steps on every arm, paired
seeds (each seed: the same prompts and the same initial model on every arm):

* **fp32**: rollouts sampled in float32 (the trainer's precision: on-policy up to float noise);
* **bf16 bypass**: sampled in bfloat16, the sampler's log-probs as the ratio's old log-probs (rlvr
  before ``off_policy``, verl's bypass mode);
* **bf16 corrected**: sampled in bfloat16, old log-probs recomputed by the trainer, a truncated
  token weight and a geometric sequence mask (``CORRECTED`` below);
* **stale k uncorrected / corrected** (k = 2, 4): rollouts sampled by the policy k updates back
  (``off_policy.lag``, as an asynchronous engine's buffer hands them over), float32, bypass vs the
  same correction.

Held-out accuracy (greedy, the same problems for every arm) at the start, every ``--eval-every``
steps and at the end, the
mismatch (k3 per token between sampler and trainer) every step, the share of rows the mask
rejected, and rollouts per second of sampling. Claims only beyond twice the standard error of the
paired differences. Bars: bfloat16 corrected ends within 2 SE of float32 sampling at at least 1.5x
its sampling throughput (where the CPU multiplies bfloat16 natively); at staleness 4 the corrected
arm ends above the uncorrected one by more than 2 SE, or the run says no difference was measured.
The run ends with::

    off-policy @bf16: corrected A.AAA +- a, bypass B.BBB +- b, fp32 C.CCC +- c (N seeds); mismatch k3 D.DDDe-E
    off-policy @stale 4: corrected A.AAA +- a, uncorrected B.BBB +- b, on-policy C.CCC +- c (N seeds)

    .venv/bin/python benchmarks/off_policy.py [--seeds 3] [--steps 30] [--arms ...] [--jobs 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import real_learning as rl
from results import RESULTS, Bar, KeptRuns, mean_se, report, save_figure, src_path

sys.path.insert(0, src_path())

#: The correction the corrected arms apply (verl: rollout_is token + rollout_rs seq_mean_k1).
CORRECTED = (
    "off_policy.proximal=recompute",
    "off_policy.token_cap=2.0",
    "off_policy.geometric_band=[0.98, 1.02]",
)
ARMS: dict[str, tuple[str, ...]] = {
    "fp32": ("rollout.dtype=model",),
    "bf16 bypass": ("rollout.dtype=bfloat16",),
    "bf16 corrected": ("rollout.dtype=bfloat16", *CORRECTED),
    "stale 2 uncorrected": ("rollout.dtype=model", "off_policy.lag=2", "failure.max_staleness=2"),
    "stale 2 corrected": ("rollout.dtype=model", "off_policy.lag=2", "failure.max_staleness=2", *CORRECTED),
    "stale 4 uncorrected": ("rollout.dtype=model", "off_policy.lag=4", "failure.max_staleness=4"),
    "stale 4 corrected": ("rollout.dtype=model", "off_policy.lag=4", "failure.max_staleness=4", *CORRECTED),
}


def child(a: argparse.Namespace) -> dict:
    """One arm, one seed: ``--steps`` GRPO steps, held-out accuracy at the start and the end."""
    import torch

    from rlvr.engine import GRPOTrainer
    from rlvr.sampling import greedy_eval

    cfg, train, held = rl.arm(a, ARMS[a.arm], "model", "rlvr-offpolicy-")
    trainer = GRPOTrainer(cfg, train_rows=train, eval_rows=[])

    def evaluate() -> float:
        trainer.model.eval()
        with torch.no_grad():
            r = greedy_eval(trainer.model, trainer.tok, held, max_new_tokens=a.new_tokens, batch_size=50)
        trainer.model.train()
        return float(r["accuracy"])

    start = evaluate() if a.eval_start else None
    steps, curve = [], []
    for _ in range(a.steps):
        m = trainer.train_step()
        steps.append(
            {
                "k3": m.get("offpolicy/k3", 0.0),
                "k1": m.get("offpolicy/k1", 0.0),
                "rejected": m.get("offpolicy/rejected", 0.0),
                "truncated": m.get("offpolicy/token_truncated", 0.0),
                "clipfrac": m.get("loss/clipfrac", 0.0),
                "generate_s": m["time/generate_s"],
                "step_s": m["time/step_s"],
                # between sampling and the update: scoring, the recompute and the redraw of rejected rows
                "score_s": m["time/score_s"],
                "rollouts": a.prompts * a.group,
                "reward": m.get("reward/total/mean"),
            }
        )
        print(json.dumps({"arm": a.arm, "seed": a.seed, "step": len(steps), **steps[-1]}), file=sys.stderr, flush=True)
        if a.eval_every and len(steps) % a.eval_every == 0 and len(steps) < a.steps:
            curve.append([len(steps), evaluate()])
    end = evaluate()
    curve.append([len(steps), end])
    return {"start": start, "end": end, "curve": curve, "steps": steps, "bf16": bool(trainer.rollout_dtype is not None)}


def launch(a: argparse.Namespace, arm: str, seed: int, eval_start: bool) -> subprocess.Popen:
    argv = [sys.executable, __file__, "--child", arm, "--seed", str(seed), "--steps", str(a.steps)]
    argv += ["--eval-every", str(a.eval_every)]
    argv += rl.arm_argv(a) + (["--eval-start"] if eval_start else [])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RLVR_BENCH_SRC": src_path()}
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kept(a: argparse.Namespace) -> KeptRuns:
    """Finished runs under ``--keep``, reused when what a run depends on besides its arm and seed
    matches."""
    keys = ("steps", "eval_every", "eval_n", "prompts", "group", "new_tokens", "lr")
    return KeptRuns(a.keep, {k: getattr(a, k) for k in keys})


def run_all(a: argparse.Namespace) -> dict[str, dict[int, dict]]:
    """Every (arm, seed), ``--jobs`` at a time, the progress of each step on stderr.

    Each finished run is kept under ``--keep`` with its settings, so an interrupted benchmark
    resumes where it stopped instead of starting its hours again.
    """
    results: dict[str, dict[int, dict]] = {arm: {} for arm in a.arms}
    store, todo = kept(a), []
    for seed in range(a.seeds):
        for arm in a.arms:
            if (old := store.get(arm, seed)) is not None:
                results[arm][seed] = old
            else:
                todo.append((arm, seed))
    running: list[tuple[str, int, subprocess.Popen, float]] = []
    done = 0
    while todo or running:
        while todo and len(running) < a.jobs:
            arm, seed = todo.pop(0)
            first = arm == a.arms[0]  # the initial model is the same on every arm: evaluated once per seed
            running.append((arm, seed, launch(a, arm, seed, first), time.perf_counter()))
        time.sleep(2)
        for item in list(running):
            arm, seed, p, t0 = item
            if p.poll() is None:
                continue
            running.remove(item)
            out, err = p.communicate()
            if p.returncode:
                sys.exit(f"arm {arm!r} seed {seed} failed:\n{err[-3000:]}")
            results[arm][seed] = json.loads(out.strip().splitlines()[-1])
            store.put(arm, seed, results[arm][seed])
            done += 1
            r = results[arm][seed]
            print(
                f"[{done}/{len(todo) + len(running) + done}] {arm:<20} seed {seed}: held-out {r['end']:.3f} "
                f"k3 {sum(s['k3'] for s in r['steps']) / len(r['steps']):.2e} "
                f"({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
    return results


def paired(results: dict[str, dict[int, dict]], x: str, y: str) -> tuple[float, float]:
    """Mean and standard error of ``x - y`` over the seeds both ran (paired: same seed, same prompts)."""
    seeds = sorted(set(results[x]) & set(results[y]))
    return mean_se([results[x][s]["end"] - results[y][s]["end"] for s in seeds])


def summarise(results: dict[str, dict[int, dict]]) -> dict[str, dict]:
    out = {}
    for arm, by_seed in results.items():
        ends = [r["end"] for r in by_seed.values()]
        steps = [s for r in by_seed.values() for s in r["steps"]]
        m, se = mean_se(ends)
        out[arm] = {
            "end_mean": m,
            "end_se": se,
            "seeds": len(ends),
            "k3": sum(s["k3"] for s in steps) / max(len(steps), 1),
            "rejected": sum(s["rejected"] for s in steps) / max(len(steps), 1),
            "clipfrac": sum(s["clipfrac"] for s in steps) / max(len(steps), 1),
            "rollouts_per_s": sum(s["rollouts"] for s in steps) / max(sum(s["generate_s"] for s in steps), 1e-9),
            # the whole step (sampling, the recompute where the arm has one, scoring, update)
            "step_s": sum(s["step_s"] for s in steps) / max(len(steps), 1),
            "score_s": sum(s.get("score_s", 0.0) for s in steps) / max(len(steps), 1),
            "bf16": any(r["bf16"] for r in by_seed.values()),
        }
    starts = [r["start"] for by_seed in results.values() for r in by_seed.values() if r["start"] is not None]
    out["start"] = {"end_mean": mean_se(starts)[0] if starts else None, "seeds": len(starts)}
    return out


def plot(results: dict[str, dict[int, dict]], summary: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    arms = [a for a in results if results[a]]
    means = [summary[a]["end_mean"] for a in arms]
    errs = [2 * summary[a]["end_se"] for a in arms]
    axes[0].barh(arms, means, xerr=errs, color="tab:green", alpha=0.7)
    if summary["start"]["end_mean"] is not None:
        axes[0].axvline(summary["start"]["end_mean"], color="grey", ls="--", label="before training")
        axes[0].legend(fontsize=8)
    axes[0].set_xlabel("held-out accuracy at the end (mean +- 2 SE over seeds)")
    for arm in arms:
        per_step = list(zip(*[[s["k3"] for s in r["steps"]] for r in results[arm].values()]))
        axes[1].plot(range(1, len(per_step) + 1), [sum(x) / len(x) for x in per_step], label=arm)
    axes[1].set_yscale("symlog", linthresh=1e-6)
    axes[1].set_xlabel("GRPO step")
    axes[1].set_ylabel("sampler/trainer mismatch (k3 per token)")
    axes[1].legend(fontsize=7)
    start = summary["start"]["end_mean"]
    for arm in arms:
        curves = [r.get("curve") or [[len(r["steps"]), r["end"]]] for r in results[arm].values()]
        at = [pt[0] for pt in curves[0]]
        acc = [sum(c[i][1] for c in curves) / len(curves) for i in range(len(at))]
        xs, ys = ([0, *at], [start, *acc]) if start is not None else (at, acc)
        axes[2].plot(xs, ys, marker="o", ms=3, label=arm)
    axes[2].set_xlabel("GRPO step")
    axes[2].set_ylabel("held-out accuracy (mean over seeds)")
    axes[2].legend(fontsize=7)
    fig.suptitle("Off-policy rollouts: corrected vs not (SmolLM2-135M LoRA, chain_sum)")
    save_figure(fig, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--eval-every", type=int, default=10, help="held-out accuracy every N steps (0: end only)")
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    rl.add_arm_args(ap)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=RESULTS / "partial" / "off_policy", help="finished runs, reused")
    ap.add_argument("--quick", action="store_true", help="1 seed, 3 steps, 3 arms, 20 problems (make bench-check)")
    ap.add_argument("--child", choices=list(ARMS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-start", action="store_true")
    a = ap.parse_args()
    if a.child:
        a.arm = a.child
        print(json.dumps(child(a)))
        return
    if a.quick:
        a.seeds, a.steps, a.eval_n, a.eval_every = 1, 3, 20, 0
        a.arms = ["fp32", "bf16 corrected", "stale 2 corrected"]
        a.keep = RESULTS / "quick" / "partial" / "off_policy"
    from rlvr.runtime import native_bf16

    left_out = [] if native_bf16() else [arm for arm in a.arms if "rollout.dtype=bfloat16" in ARMS[arm]]
    if left_out:  # rlvr refuses emulated bfloat16 (tens of times slower): those arms cannot run here
        print(f"left out on this CPU (no native bfloat16, which rlvr refuses to emulate): {', '.join(left_out)}")
        a.arms = [arm for arm in a.arms if arm not in left_out]
    t0 = time.perf_counter()
    results = run_all(a)
    s = summarise(results)
    s["native_bf16"], s["left_out"] = native_bf16(), left_out
    s["wall_s"] = time.perf_counter() - t0
    plot(results, s, RESULTS / ("quick" if a.quick else "") / "off_policy.png")
    bars: list[Bar] = []
    lines = []
    if {"fp32", "bf16 corrected"} <= set(a.arms):
        diff, se = paired(results, "bf16 corrected", "fp32")
        if "bf16 bypass" in a.arms:
            s["bf16_bypass_vs_fp32"] = dict(zip(("diff", "se"), paired(results, "bf16 bypass", "fp32")))
        speed = s["bf16 corrected"]["rollouts_per_s"] / s["fp32"]["rollouts_per_s"]
        s["bf16_vs_fp32"] = {"diff": diff, "se": se, "sampling_speedup": speed}
        # within 2 SE of the paired difference (one seed has no SE: a quick run shows the figure only)
        bars.append(
            Bar("|bf16 corrected - fp32| held-out accuracy, in SE", abs(diff) / max(se, 1e-9), "<=", 2.0, "", False)
        )
        if s["native_bf16"]:
            bars.append(Bar("bf16 / fp32 sampling throughput", speed, ">=", 1.5, "x"))
        if "bf16 bypass" in a.arms:
            c, b, f = s["bf16 corrected"], s["bf16 bypass"], s["fp32"]
            lines.append(
                f"off-policy @bf16: corrected {c['end_mean']:.3f} +- {c['end_se']:.3f}, bypass {b['end_mean']:.3f} "
                f"+- {b['end_se']:.3f}, fp32 {f['end_mean']:.3f} +- {f['end_se']:.3f} ({a.seeds} seeds); "
                f"mismatch k3 {b['k3']:.3e}"
            )
    for k in (2, 4):  # the line is staleness 4; staleness 2 is printed the same way
        if not {f"stale {k} corrected", f"stale {k} uncorrected"} <= set(a.arms):
            continue
        diff, se = paired(results, f"stale {k} corrected", f"stale {k} uncorrected")
        s[f"stale{k}_corrected_vs_uncorrected"] = {"diff": diff, "se": se, "measured": diff > 2 * se}
        c, u = s[f"stale {k} corrected"], s[f"stale {k} uncorrected"]
        on = s.get("fp32", {"end_mean": float("nan"), "end_se": float("nan")})
        lines.append(
            f"off-policy @stale {k}: corrected {c['end_mean']:.3f} +- {c['end_se']:.3f}, uncorrected "
            f"{u['end_mean']:.3f} +- {u['end_se']:.3f}, on-policy {on['end_mean']:.3f} +- {on['end_se']:.3f} "
            f"({a.seeds} seeds)"
            + (
                f"; corrected - uncorrected {diff:+.3f} +- {se:.3f}"
                if diff > 2 * se
                else f"; no difference measured (corrected - uncorrected {diff:+.3f} +- {se:.3f})"
            )
        )
    print()
    for arm in a.arms:
        x = s[arm]
        print(
            f"{arm:<20} held-out {x['end_mean']:.3f} +- {x['end_se']:.3f}  k3 {x['k3']:.2e}  rejected "
            f"{x['rejected']:.3f}  clipfrac {x['clipfrac']:.3f}  {x['rollouts_per_s']:.1f} rollouts/s  "
            f"{x['step_s']:.1f} s/step ({x['score_s']:.1f} s scoring, recompute, redraws)"
        )
    report("off_policy", {"summary": s, "runs": results}, bars, a, quick=a.quick)
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
