"""When most episodes die: the agentic benchmark at 0.9 faults and through outages in bursts.

The calculator episodes of ``benchmarks/agentic.py`` (the tiny model warmed up by SFT on calculator
traces of 3-digit products), two scenarios of faults injected by rlvr's seeded wrapper:

* **0.9**: 90% of tool calls fail, independently (a tool error, a hang, a crashed session at
  ``rate/2``, ``rate/4``, ``rate/4``): a step needs 10 episodes per admitted row on average;
* **bursts**: 0.2 faults, and the tool server down for 30% of the steps in two outages (every call
  fails, ``env.outages``), as a real environment fails: for stretches, not a coin flip per episode;

from a strong and a weak warm start (``--starts``: ``N`` is the model after N SFT steps, ``K/N`` the
same N-step warm-up as it stood at step K: a start that still learns, where a shorter warm-up, whose
schedule ends sooner, lands on either side of the skill), paired seeds, arms:

* ``rlvr``: the policy for thin steps (``POLICY``: a redraw budget instead of two rounds, groups
  of fewer than two admitted rows out, the step scaled by its admitted share, outages waited out);
* ``before``: rlvr's failure step as it was before that policy (two redraw rounds, nothing else);
* ``reward-0``: a faulted episode scores 0 in the baseline and the loss (TRL, verl);
* ``mask-only``: out of the loss, in the baseline at 0 (NeMo-RL #4061);

and the fault-free run of the same length as the target. Held-out accuracy (greedy, 200 problems, a
fault-free environment), episodes sampled per step and per admitted row (the compute), the share of
thin steps (fewer than half the rows admitted) and of steps the environment was down. Bars (each
start and scenario): rlvr ends within 2 SE of the fault-free run (paired), no seed ends below its
warm start, and it spends at most 1.5x the floor of episodes per admitted row (the floor is
1 / (1 - the share of calls that fail over the run): 10 at 0.9; 1.79 in bursts, where every call fails
during the 30% of steps the server is down, and telling an outage from bad luck costs two draws). The
run ends with::

    agentic @0.9 faults: rlvr A.AAA +- a, today's defaults B.BBB +- b, fault-free C.CCC +- c
        (N seeds, start S.SSS); episodes/step E.E      [one line]
    agentic @bursts: rlvr A.AAA +- a, reward-0 B.BBB +- b, fault-free C.CCC +- c (N seeds)

    .venv/bin/python benchmarks/agentic_heavy.py [--steps 60] [--seeds 5] [--starts 1000 750/1000] [--jobs 2] [--quick]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agentic import env_section, run_config, warm_model
from results import RESULTS, Bar, KeptRuns, mean_se, report, save_figure, side_by_side, src_path

sys.path.insert(0, src_path())

#: The policy for thin steps the ``rlvr`` arm runs (what the benchmark measures).
POLICY = [
    "failure.redraw_budget=12",
    "failure.min_group_rows=2",
    "failure.thin_step_scale=true",
    "failure.wait_out_outages=true",
]
ARMS = {
    "rlvr": POLICY,
    "before": ["failure.wait_out_outages=false"],
    "reward-0": ["failure.env_fault_handling=score_zero"],
    "mask-only": ["failure.env_fault_handling=mask_loss"],
}
BURST_RATE = 0.2


def outages(steps: int) -> list[tuple[int, int]]:
    """30% of ``steps`` in two outages (at a fifth and at three fifths of the run)."""
    n = max(1, round(0.15 * steps))
    a, b = round(0.2 * steps) + 1, round(0.6 * steps) + 1
    return [(a, a + n), (b, b + n)]


def start_of(text: str) -> str:
    """A ``--starts`` entry checked: ``N`` or ``K/N`` with 0 < K < N."""
    at, slash, of = text.partition("/")
    if not at.isdigit() or int(at) <= 0 or (slash and (not of.isdigit() or int(at) >= int(of))):
        raise argparse.ArgumentTypeError(f"a start is N or K/N with 0 < K < N, got {text!r}")
    return text


def warm_name(start: str) -> str:
    """The warm-up's folder: ``warm-1000``; a checkpoint inside one, ``warm-1000-at-750``."""
    at, _, of = start.partition("/")
    return f"warm-{of}-at-{at}" if of else f"warm-{at}"


def fault_share(scenario: str, steps: int) -> float:
    """The share of tool calls the scenario fails over the run: every call while the server is down."""
    if scenario == "0.9":
        return 0.9
    down = sum(b - a for a, b in outages(steps)) / steps
    return down + (1 - down) * BURST_RATE


def run(warm: Path, out: Path, steps: int, every: int, scenario: str, arm: str, seed: int) -> dict:
    """One run; its summary (final accuracy, compute, thin and down steps)."""
    from rlvr.engine import GRPOTrainer
    from rlvr.runs import read_metrics

    rate = 0.0 if scenario == "fault-free" else (0.9 if scenario == "0.9" else BURST_RATE)
    env = env_section(rate, seed)
    if scenario == "bursts":
        env = env[:-1] + f", outages: {[list(o) for o in outages(steps)]}}}"
    cfg = run_config(warm, out, steps, every, seed, env, ARMS.get(arm, []))
    GRPOTrainer(cfg).train()
    metrics = read_metrics(out)
    evals = [(m["step"], m["eval/accuracy"]) for m in metrics if "eval/accuracy" in m]
    steps_m = [m for m in metrics if "causes/correct" in m]
    rows = cfg.rollout.prompts_per_step * cfg.rollout.group_size
    episodes = [rows + m.get("failure/resampled", 0.0) for m in steps_m]
    admitted = [rows * (1.0 - m.get("failure/excluded_frac", 0.0)) for m in steps_m]
    return {
        "curve": evals,
        "start": evals[0][1],
        "final": evals[-1][1],
        "episodes_per_step": statistics.mean(episodes),
        "episodes_per_admitted": sum(episodes) / max(sum(admitted), 1.0),
        "thin_steps": statistics.mean(float(a < rows / 2) for a in admitted),
        "down_steps": statistics.mean(m.get("env/down", 0.0) for m in steps_m),
        "cause_mix": {
            k.split("/", 1)[1]: statistics.mean(m.get(k, 0.0) for m in steps_m)
            for k in sorted({k for m in steps_m for k in m if k.startswith("causes/")})
        },
    }


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [(s, sc) for s in results for sc in ("0.9", "bursts")]
    colours = {"fault-free": "black", "rlvr": "tab:green", "before": "tab:blue", "reward-0": "tab:red"}
    colours["mask-only"] = "tab:orange"
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.8), squeeze=False, sharey=True)
    for ax, (start, scenario) in zip(axes[0], keys):
        arms = {"fault-free": results[start]["fault-free"], **results[start][scenario]}
        for name, r in arms.items():
            xs = [s for s, _ in r["runs"][0]["curve"]]
            ys = [statistics.mean(run["curve"][i][1] for run in r["runs"]) for i in range(len(xs))]
            ax.plot(xs, ys, "--" if name == "fault-free" else "-", color=colours[name], label=name)
        if scenario == "bursts":
            for a, b in outages(results[start]["steps"]):
                ax.axvspan(a - 0.5, b - 0.5, color="k", alpha=0.1, lw=0)
        ax.set_title(f"{scenario} (SFT steps: {start})")
        ax.set_xlabel("GRPO step")
    axes[0][0].set_ylabel("held-out accuracy (fault-free env)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Episodes when most die: 0.9 faults and outages (shaded), tiny model, calculator")
    save_figure(fig, path)


def _in_se(diff: float, se: float) -> float:
    """A paired difference in standard errors; with no spread (one seed) only its sign is known."""
    if se:
        return diff / se
    return 0.0 if diff == 0 else math.copysign(math.inf, diff)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument(
        "--starts",
        type=start_of,
        nargs="+",
        default=["1000", "750/1000"],
        help="each start: N (after N SFT steps) or K/N (step K of the N-step warm-up)",
    )
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--scenarios", nargs="+", default=["0.9", "bursts"], choices=["0.9", "bursts"])
    ap.add_argument("--warm", type=Path, help="a folder keeping the warm-ups (warm-<steps>/), reused when there")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=RESULTS / "partial" / "agentic_heavy", help="finished runs, reused")
    ap.add_argument("--quick", action="store_true", help="one start, one seed, 12 steps (make bench-check)")
    a = ap.parse_args()
    if a.quick:
        a.steps, a.seeds, a.starts, a.eval_every, a.arms = 12, 1, a.starts[:1], 6, ["rlvr", "before"]
        a.keep = RESULTS / "quick" / "partial" / "agentic_heavy"
    # an hour of runs: each finished one is kept, so an interrupted benchmark resumes where it stopped
    kept = KeptRuns(a.keep, {"steps": a.steps, "eval_every": a.eval_every})
    from rlvr.runtime import cpu_report

    print(f"CPU: {cpu_report()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-agentic-heavy-"))
    warm_root = a.warm or tmp
    calls = {}
    # one warm-up run per length, keeping the checkpoints the K/N starts take from it
    runs_of: dict[int, dict[int, Path]] = {}
    for start in a.starts:
        at, _, of = start.partition("/")
        runs_of.setdefault(int(of or at), {})
        if of:
            runs_of[int(of)][int(at)] = warm_root / warm_name(start)
    for n, keep in runs_of.items():
        if not all((w / "config.json").exists() for w in [warm_root / f"warm-{n}", *keep.values()]):
            warm_model(warm_root / f"warm-{n}", n, 0, keep=keep)
    for start in a.starts:
        warm = warm_root / warm_name(start)
        for seed in range(a.seeds):
            calls[(start, "fault-free", "fault-free", seed)] = (
                warm,
                tmp / f"{start}/ff/{seed}",
                a.steps,
                a.eval_every,
                "fault-free",
                "fault-free",
                seed,
            )
            for scenario in a.scenarios:
                for arm in a.arms:
                    out = tmp / f"{start}/{scenario}/{arm}/{seed}"
                    calls[(start, scenario, arm, seed)] = (warm, out, a.steps, a.eval_every, scenario, arm, seed)
    runs: dict[tuple[int, str, str], list] = {}

    def name(key: tuple) -> str:
        start, scenario, arm, _ = key
        return f"{start.replace('/', '-of-')}/{scenario}/{arm}"

    reused = {key: r for key in calls if (r := kept.get(name(key), key[3])) is not None}

    def done(key: tuple, r: dict) -> None:
        start, scenario, arm, seed = key
        if key not in reused:
            kept.put(name(key), seed, r)
        runs.setdefault((start, scenario, arm), []).append((seed, r))
        print(
            f"[{sum(map(len, runs.values()))}/{len(calls)}] start {start} {scenario:10s} {arm:10s} seed {seed}: "
            f"{r['start']:.3f} -> {r['final']:.3f}, {r['episodes_per_step']:.0f} episodes/step, "
            f"{r['episodes_per_admitted']:.1f} per admitted row, thin {r['thin_steps']:.0%}, "
            f"down {r['down_steps']:.0%}",
            flush=True,
        )

    for key, r in reused.items():
        done(key, r)
    side_by_side(run, {k: v for k, v in calls.items() if k not in reused}, a.jobs, done)
    # paired by seed: kept runs and fresh ones arrive in different orders
    runs = {k: [r for _, r in sorted(v, key=lambda x: x[0])] for k, v in runs.items()}
    results: dict = {}
    bars, lines = [], []
    for start in a.starts:
        ff = runs[(start, "fault-free", "fault-free")]
        res: dict = {"steps": a.steps, "fault-free": _arm(ff)}
        for scenario in a.scenarios:
            res[scenario] = {arm: _arm(runs[(start, scenario, arm)]) for arm in a.arms}
            r = res[scenario]
            floor = 1 / (1 - fault_share(scenario, a.steps))
            diff, se = mean_se([x["final"] - y["final"] for x, y in zip(runs[(start, scenario, "rlvr")], ff)])
            r["rlvr"]["minus_fault_free"] = [diff, se]
            tag = f"start {start} @{scenario}"
            bars.append(Bar(f"{tag}: rlvr - fault-free final, in SE", _in_se(diff, se), ">=", -2.0, "", False))
            worst = min(x["final"] - x["start"] for x in runs[(start, scenario, "rlvr")])
            bars.append(Bar(f"{tag}: rlvr's worst seed, final - warm start", worst, ">=", 0.0, "", False))
            bars.append(
                Bar(f"{tag}: rlvr episodes per admitted row / floor", r["rlvr"]["per_admitted"] / floor, "<=", 1.5)
            )
            other = "before" if scenario == "0.9" and "before" in r else "reward-0"
            if other in r:
                label = "today's defaults" if other == "before" else "reward-0"
                lines.append(
                    f"agentic @{'0.9 faults' if scenario == '0.9' else 'bursts'}: rlvr {r['rlvr']['final']:.3f} +- "
                    f"{r['rlvr']['final_se']:.3f}, {label} {r[other]['final']:.3f} +- {r[other]['final_se']:.3f}, "
                    f"fault-free {res['fault-free']['final']:.3f} +- {res['fault-free']['final_se']:.3f} "
                    f"({a.seeds} seeds, start {res['fault-free']['start']:.3f})"
                    + (f"; episodes/step {r['rlvr']['episodes_per_step']:.1f}" if scenario == "0.9" else "")
                )
        results[start] = res
    png = (RESULTS / "quick" if a.quick else RESULTS) / "agentic_heavy.png"
    plot(results, png)
    for start in a.starts:
        for scenario in a.scenarios:
            for arm, x in results[start][scenario].items():
                print(
                    f"  start {start} @{scenario:7s} {arm:10s} {x['final']:.3f} +- {x['final_se']:.3f}  "
                    f"episodes/step {x['episodes_per_step']:.1f}  per admitted row {x['per_admitted']:.1f}  "
                    f"thin {x['thin_steps']:.0%}  down {x['down_steps']:.0%}"
                )
    report("agentic_heavy", {"results": results, "lines": lines, "cpu": cpu_report()}, bars, a, quick=a.quick)
    print("\n".join(lines))


def _arm(runs: list[dict]) -> dict:
    final, final_se = mean_se([r["final"] for r in runs])
    return {
        "final": final,
        "final_se": final_se,
        "finals": [r["final"] for r in runs],
        "start": statistics.mean(r["start"] for r in runs),
        "episodes_per_step": statistics.mean(r["episodes_per_step"] for r in runs),
        "per_admitted": statistics.mean(r["episodes_per_admitted"] for r in runs),
        "thin_steps": statistics.mean(r["thin_steps"] for r in runs),
        "down_steps": statistics.mean(r["down_steps"] for r in runs),
        "runs": runs,
    }


if __name__ == "__main__":
    main()
