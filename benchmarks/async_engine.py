"""Sampling and learning at the same time: rlvr's asynchronous engine against its synchronous one.

SmolLM2-135M-Instruct with LoRA on the real-learning task (reasoning-gym ``chain_sum``, the settings
of ``benchmarks/real_learning.py``), the same wall-clock budget of training per arm on this 2-core
machine (the clock stops while the held-out set is evaluated), paired seeds, one arm at a time:

* **sync**: today's engine, one process (sampling, then learning);
* **async lag 1 corrected**: a sampler process one step ahead, AReaL's decoupled objective: the old
  (proximal) log-probs the learner's (with one optimizer step a batch, the training forward's own:
  no forward of its own), each token's behaviour weight truncated at 2 (``CORRECTED``), nothing
  rejected;
* **async lag 1 banded**: the same, plus a geometric sequence band ``[0.98, 1.02]`` that rejects
  rows as ``off_policy`` (``BANDED``: a band as narrow as the bf16 one turns away a fifth of lag-1
  rows, which the asynchronous learner does not redraw; the band needs a separate recompute);
* **async lag 1 bypass**: the same overlap, the sampler's log-probs as the old ones, no band (the
  off-policy benchmark found correcting a gap of this size buys nothing);
* **async lag 1 stale dropped**: the same overlap, nothing corrected, and every row the sampler drew
  with older weights than the learner's is ``stale`` (``failure.max_staleness: 0``, seed 003's rule:
  out of the baseline and the loss, counted): the price of refusing off-policy rows outright;
* **async lag 4 uncorrected**: the sampler allowed four steps ahead, nothing corrected (how far it
  does run ahead depends on which side is slower; ``async/lag`` says).

Held-out accuracy (greedy, the same problems for every arm) at fixed points of training time, steps
per minute, how busy the two cores were (CPU seconds of learner and sampler over wall seconds), the
mean lag and the cause mix. Bars: async reaches sync's final accuracy in at most 0.7x its wall-clock,
ends within 2 SE of it or above, and keeps the cores at least 1.5 busy on average. The run ends::

    async: lag-1 corrected A.AAA +- a, sync B.BBB +- b at T min (N seeds); steps/min ratio R.RRx; cores busy C.C
    async: minutes to sync's final accuracy: lag-1 corrected M.M of T

    .venv/bin/python benchmarks/async_engine.py [--budget-min 4] [--points 1 2 3 4] [--seeds 3] [--quick]
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
from results import RESULTS, STARTED, Bar, KeptRuns, mean_se, report, save_figure, src_path

sys.path.insert(0, src_path())

CORRECTED = ("off_policy.proximal=recompute", "off_policy.token_cap=2.0")
BANDED = (*CORRECTED, "off_policy.geometric_band=[0.98, 1.02]")
BYPASS = ("off_policy.proximal=bypass",)
ARMS: dict[str, tuple[str, ...]] = {
    "sync": (),
    "async lag 1 corrected": ("rollout.mode=async", "rollout.max_lag=1", *CORRECTED),
    "async lag 1 banded": ("rollout.mode=async", "rollout.max_lag=1", *BANDED),
    # nothing corrected, said outright: an asynchronous run with no off_policy section is corrected
    "async lag 1 bypass": ("rollout.mode=async", "rollout.max_lag=1", *BYPASS),
    "async lag 1 stale dropped": ("rollout.mode=async", "rollout.max_lag=1", "failure.max_staleness=0", *BYPASS),
    "async lag 4 uncorrected": ("rollout.mode=async", "rollout.max_lag=4", "failure.max_staleness=4", *BYPASS),
}


def child(a: argparse.Namespace) -> dict:
    """One arm, one seed, to the training budget; the curve, steps, CPU seconds and lags."""
    import psutil
    import torch

    from rlvr.engine.async_engine import train_engine
    from rlvr.sampling import greedy_eval

    cfg, train, held = rl.arm(a, ARMS[a.arm], "auto", "rlvr-async-")
    trainer = train_engine(cfg, train_rows=train, eval_rows=[])
    me = psutil.Process()

    def cpu_s() -> float:
        own = me.cpu_times()
        total = own.user + own.system
        p = getattr(trainer, "_proc", None)
        if p is not None and p.pid is not None:
            try:
                c = psutil.Process(p.pid).cpu_times()
                total += c.user + c.system
            except psutil.NoSuchProcess:
                pass
        return total

    def evaluate() -> dict:
        trainer.model.eval()
        with torch.no_grad():
            r = greedy_eval(trainer.model, trainer.tok, held, max_new_tokens=a.new_tokens, batch_size=50)
        trainer.model.train()
        return r

    clock = rl.Clock(
        [m * 60 for m in a.points], a.budget_min * 60, evaluate, lambda p: print(json.dumps(p), file=sys.stderr)
    )
    clock.start()
    lags, causes, cpu, wall = [], {}, 0.0, 0.0
    # where a step's time goes: each process's idle share, the learner's update, the rows rejected
    per_step: dict[str, list[float]] = {k: [] for k in TIMINGS}
    try:
        while True:
            c0, t0 = cpu_s(), time.perf_counter()
            m = trainer.train_step()
            dt = time.perf_counter() - t0
            cpu, wall = cpu + cpu_s() - c0, wall + dt
            lags.append(m.get("async/lag", 0.0))
            for k in TIMINGS:
                per_step[k].append(float(m.get(k, 0.0)))
            for k, v in m.items():
                if k.startswith("causes/") and isinstance(v, float):
                    causes[k[7:]] = causes.get(k[7:], 0.0) + v
            if clock.step_done(dt):
                break
    finally:
        stop = getattr(trainer, "stop", None)
        if stop is not None:
            stop()
    n = max(clock.steps, 1)
    return {
        "curve": [{k: v for k, v in p.items() if k != "examples"} for p in clock.curve],
        "steps": clock.steps,
        "steps_per_min": clock.steps / (clock.trained_s / 60),
        "cores_busy": cpu / max(wall, 1e-9),
        "lag": sum(lags) / max(len(lags), 1),
        "causes": {k: v / n for k, v in causes.items() if v},
        "timings": {k: sum(v) / max(len(v), 1) for k, v in per_step.items()},
    }


#: Step metrics averaged per run: where the time goes and what the correction turned away.
TIMINGS = (
    "time/step_s",
    "time/generate_s",
    "time/score_s",
    "time/update_s",
    "async/sampler_idle",
    "async/learner_idle",
    "offpolicy/rejected",
)


def kept(a: argparse.Namespace) -> KeptRuns:
    """Finished runs under ``--keep``, reused when what a run depends on besides its arm and seed
    matches."""
    keys = ("budget_min", "points", "eval_n", "prompts", "group", "new_tokens", "lr")
    return KeptRuns(a.keep, {k: getattr(a, k) for k in keys})


def launch(a: argparse.Namespace, arm: str, seed: int) -> dict:
    """One arm and seed in a child process; a run kept under ``--keep`` with the same settings is
    reused (an interrupted benchmark resumes instead of starting its hours again)."""
    store = kept(a)
    if (old := store.get(arm, seed)) is not None:
        return old
    argv = [sys.executable, __file__, "--child", arm, "--seed", str(seed), "--budget-min", str(a.budget_min)]
    argv += ["--points", *map(str, a.points), *rl.arm_argv(a)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RLVR_BENCH_SRC": src_path()}
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"arm {arm!r} seed {seed} failed:\n{p.stderr[-3000:]}")
    result = json.loads(p.stdout.strip().splitlines()[-1])
    store.put(arm, seed, {**result, "commit": STARTED["commit"]})
    return result


def minutes_to(curve: list[dict], target: float) -> float | None:
    """Training minutes at which the curve first reaches ``target`` (None: never)."""
    return next((p["minutes"] for p in curve if p["minutes"] > 0 and p["accuracy"] >= target), None)


def plot(results: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for arm, runs in results.items():
        n = min(len(r["curve"]) for r in runs)
        xs = [sum(r["curve"][i]["minutes"] for r in runs) / len(runs) for i in range(n)]
        stats = [mean_se([r["curve"][i]["accuracy"] for r in runs]) for i in range(n)]
        ys = [m for m, _ in stats]
        ax.plot(xs, ys, "o-", label=f"{arm} ({sum(r['steps_per_min'] for r in runs) / len(runs):.1f} steps/min)")
        ax.fill_between(xs, [m - s for m, s in stats], [m + s for m, s in stats], alpha=0.15)
    ax.set_xlabel("training wall-clock (minutes, this 2-core CPU)")
    ax.set_ylabel("held-out accuracy (greedy)")
    ax.legend(fontsize=8)
    ax.set_title("Sampling and learning at the same time (SmolLM2-135M LoRA, chain_sum)")
    save_figure(fig, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget-min", type=float, default=4.0)
    ap.add_argument("--points", type=float, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    rl.add_arm_args(ap)
    ap.add_argument("--compare", default="async lag 1 corrected", choices=list(ARMS), help="the arm the bars judge")
    ap.add_argument("--keep", type=Path, default=RESULTS / "partial" / "async_engine", help="finished runs, reused")
    ap.add_argument("--quick", action="store_true", help="1 seed, 1 minute, sync and lag-1 corrected")
    ap.add_argument("--child", choices=list(ARMS))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.child:
        a.arm = a.child
        print(json.dumps(child(a)))
        return
    if a.quick:
        a.seeds, a.budget_min, a.points, a.eval_n = 1, 1.0, [1.0], 20
        a.arms = ["sync", "async lag 1 corrected"]
        a.keep = RESULTS / "quick" / "partial" / "async_engine"
    from rlvr.runtime import cpu_report

    print(f"CPU: {cpu_report()}", flush=True)
    results: dict[str, list[dict]] = {arm: [] for arm in a.arms}
    for seed in range(a.seeds):
        for arm in a.arms:  # one at a time: the async arms use both cores
            t0 = time.perf_counter()
            r = launch(a, arm, seed)
            results[arm].append(r)
            print(
                f"{arm:<24} seed {seed}: held-out {r['curve'][0]['accuracy']:.3f} -> {r['curve'][-1]['accuracy']:.3f}, "
                f"{r['steps']} steps ({r['steps_per_min']:.1f}/min), cores busy {r['cores_busy']:.2f}, "
                f"lag {r['lag']:.2f} ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
    summary: dict = {}
    for arm, runs in results.items():
        m, se = mean_se([r["curve"][-1]["accuracy"] for r in runs])
        summary[arm] = {
            "final": m,
            "final_se": se,
            "steps_per_min": sum(r["steps_per_min"] for r in runs) / len(runs),
            "cores_busy": sum(r["cores_busy"] for r in runs) / len(runs),
            "lag": sum(r["lag"] for r in runs) / len(runs),
            "timings": {k: sum(r.get("timings", {}).get(k, 0.0) for r in runs) / len(runs) for k in TIMINGS},
        }
    bars, lines = [], []
    arm = a.compare
    if "sync" in results and arm in results:
        s, c = summary["sync"], summary[arm]
        label = arm.removeprefix("async ").replace("lag 1 ", "lag-1 ")
        diff, se = mean_se(
            [x["curve"][-1]["accuracy"] - y["curve"][-1]["accuracy"] for x, y in zip(results[arm], results["sync"])]
        )
        ratio = c["steps_per_min"] / s["steps_per_min"]
        reach = [minutes_to(x["curve"], y["curve"][-1]["accuracy"]) for x, y in zip(results[arm], results["sync"])]
        reached = [r for r in reach if r is not None]
        to_sync = sum(reached) / len(reached) if len(reached) == len(reach) else None
        summary["comparison"] = {"diff": diff, "se": se, "steps_ratio": ratio, "minutes_to_sync_final": to_sync}
        lines.append(
            f"async: {label} {c['final']:.3f} +- {c['final_se']:.3f}, sync {s['final']:.3f} +- "
            f"{s['final_se']:.3f} at {a.budget_min:g} min ({a.seeds} seeds); steps/min ratio {ratio:.2f}x; "
            f"cores busy {c['cores_busy']:.1f}"
        )
        lines.append(
            f"async: minutes to sync's final accuracy: {label} "
            + (f"{to_sync:.1f}" if to_sync is not None else "not reached on every seed")
            + f" of {a.budget_min:g}"
        )
        bars += [
            Bar("async minutes to sync's final / budget", (to_sync or 1e9) / a.budget_min, "<=", 0.7, "", False),
            Bar("async - sync final held-out, in SE", diff / se if se else diff * 1e9, ">=", -2.0, "", False),
            Bar(f"cores busy ({arm})", c["cores_busy"], ">=", 1.5),
        ]
    png = (RESULTS / "quick" if a.quick else RESULTS) / "async_engine.png"
    plot(results, png)
    for arm, x in summary.items():
        if arm != "comparison":
            print(
                f"{arm:<24} {x['final']:.3f} +- {x['final_se']:.3f}  {x['steps_per_min']:.1f} steps/min  "
                f"cores busy {x['cores_busy']:.2f}  lag {x['lag']:.2f}  idle: sampler "
                f"{x['timings']['async/sampler_idle']:.2f} learner {x['timings']['async/learner_idle']:.2f}  "
                f"rejected {x['timings']['offpolicy/rejected']:.3f}"
            )
    commits = sorted({r.get("commit", STARTED["commit"]) for runs in results.values() for r in runs})
    figures = {"summary": summary, "runs": results, "cpu": cpu_report(), "run_commits": commits}
    report("async_engine", figures, bars, a, quick=a.quick)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
