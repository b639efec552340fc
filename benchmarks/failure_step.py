"""What the failure step buys, with error bars: single-turn runs under the faults it exists for.

From the format-weak warm-up of ``failure_aware.py`` (the tiny model on 2-digit addition, a third
of its SFT targets without the answer tag: the cold start, the same in every run), one kind of
fault injected at each rate (``--fault``):

* ``outage`` (the default, where the bar is read): a seeded share of rows whose verifier times out
  or errors, as a judge or sandbox outage would (``rewards.outage``);
* ``bad_gold``: a seeded share of gold answers that cannot be parsed, the same ones all run, as
  broken dataset rows are (``rewards.bad_gold``): every rollout of their prompts is ``bad_gold``;
* ``truncation``: a seeded share of rollouts cut at a random point before their end, as a token
  budget cuts them (``rollout.truncation``; held-out evaluation is never cut);
* ``cold_start``: the format-weak start itself, varied: the warm-up's share of SFT targets without
  the answer tag is the rate (0 for the fault-free run), so a share of the start's answers die of
  format. Those are the policy's own deaths (every arm keeps them in the gradient); what the failure
  step brings here is its redraws of flat groups and, in the ``aware+constrained`` arm, the answer
  grammar while sampling (``decoding.constrain: full``; held-out evaluation unconstrained).

The arms:

* ``plain``: GRPO as TRL's default rewards have it: a failed verification, a bad gold and a
  truncated answer score 0 and stay in the baseline and the loss (``failure.verifier_failures:
  score``, ``accuracy.undecided: 0``, ``accuracy.bad_gold: 0``), no redraws, no quarantine, no
  dynamic sampling;
* ``exclude``: the failure step's admission alone, at plain's compute: failed verifications
  (``invalid``) and bad golds out of the baseline and the loss (truncated rows too, under
  ``--fault truncation``), nothing redrawn (no resampling, no dynamic sampling, no quarantine);
* ``redraw``: rlvr's failure defaults: the failed rows out of both and redrawn (``resample_tries:
  2``), nothing else (no flat-group redraws, no quarantine, no clipping): the fault handling alone;
* ``aware``: rlvr's failure step whole: failed verifications and truncated rows out of the
  baseline and the loss and redrawn, flat groups redrawn, quarantine, advantage clipping;

and the fault-free target (plain at 0), beside the aware arm at 0: what the failure step buys with no
fault at all (its flat-group redraws and clipping), so that its lead under faults can be read
against it: "aware's lead beyond its lead with no fault" is, per seed, (aware - plain) at the rate
minus (aware - plain) at 0, what handling the faults themselves buys. Every arm runs the same
seeds (paired: seed ``s`` of each arm starts from the same weights and data order); mean and
standard error over seeds at every evaluation point, the paired difference aware - plain with its
standard error, and the rollouts each arm sampled (the failure step's redraws cost rollouts: equal
steps are not equal compute).
A difference is called "better" or "worse" only beyond twice its standard error.

    .venv/bin/python benchmarks/failure_step.py [--fault outage|bad_gold|truncation|cold_start] [--seeds 5]
        [--rates 0.2 0.5] [--engine rlvr|trl] [--jobs 2] [--recompute RESULTS.json]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from failure_aware import AWARE, CONSTRAINED, warm_model
from failure_aware import run as train
from results import RESULTS, Bar, mean_se, report, save_figure, side_by_side, src_path

sys.path.insert(0, src_path())

PLAIN = [
    "failure.quarantine=false",
    "failure.resample_tries=0",
    "failure.dynamic_sampling=0",
    "failure.verifier_failures=score",
]
EXCLUDE = ["failure.quarantine=false", "failure.resample_tries=0", "failure.dynamic_sampling=0"]
#: rlvr's failure defaults for these faults: failed rows out of both and redrawn (``resample_tries: 2``),
#: no flat-group redraws, no quarantine, no clipping: the fault handling without dynamic sampling.
REDRAW = ["failure.quarantine=false", "failure.dynamic_sampling=0"]
ARMS = {"plain": PLAIN, "exclude": EXCLUDE, "redraw": REDRAW, "aware": AWARE}
#: Under the format-weak start nothing is excluded (format deaths are the policy's): the constrained
#: answer takes the admission-alone arm's place.
COLD_ARMS = {"plain": PLAIN, "aware": AWARE, "aware+constrained": CONSTRAINED}
#: The line each arm beside aware gets: what it is, and how its verdict against plain is written.
SIDE_LINES = {
    "redraw": ("failed rows redrawn alone (rlvr's defaults): redraw", "{}"),
    "exclude": ("admission alone at plain's compute: exclude", "{}"),
    "aware+constrained": ("answer constrained while sampling:", "against plain: {}"),
}
#: Each fault kind: the override that injects it at a rate and seed, and what it is, in words.
FAULTS = {
    "outage": (lambda rate, seed: [f"rewards.outage={rate}", f"rewards.outage_seed={seed}"], "verifier outages"),
    "bad_gold": (lambda rate, seed: [f"rewards.bad_gold={rate}", f"rewards.outage_seed={seed}"], "bad golds"),
    "truncation": (lambda rate, seed: [f"rollout.truncation={rate}"], "truncated rollouts"),
    "cold_start": (lambda rate, seed: [], "untagged SFT targets"),  # injected in the warm-up
}


def run(
    warm: Path,
    out: Path,
    seed: int,
    steps: int,
    every: int,
    rate: float,
    extra: list[str],
    engine: str,
    fault: str = "outage",
) -> list[dict]:
    """One arm at one rate of one fault kind (``failure_aware.run`` with the fault injected and
    plain's 0 for a failed verification or a bad gold); every step's metrics."""
    from rlvr.runs import read_metrics
    from rlvr.runtime import setup_torch

    setup_torch(1, seed)
    inject = FAULTS[fault][0](rate, seed) if rate else []
    train(
        warm,
        out,
        seed,
        steps,
        every,
        [*inject, *extra],
        engine,
        accuracy="{strict: true, undecided: 0.0, bad_gold: 0.0}",
    )
    return read_metrics(out)


def verdict(diff: float, se: float) -> str:
    """``better`` / ``worse`` only beyond twice the standard error, else ``no difference measured``."""
    if se > 0 and abs(diff) > 2 * se:
        return "better" if diff > 0 else "worse"
    return "no difference measured"


def summarise(metrics: list[dict], group: int, prompts: int) -> dict:
    curve = [[m["step"], m["eval/accuracy"]] for m in metrics if "eval/accuracy" in m]
    steps = [m for m in metrics if "causes/correct" in m]
    sampled = sum(
        prompts * group + m.get("failure/resampled", 0.0) + group * prompts * m.get("failure/dynamic_rounds", 0.0)
        for m in steps
    )
    return {
        "curve": curve,
        "final": curve[-1][1],
        "rollouts": sampled,
        "invalid": statistics.mean(m.get("causes/invalid", 0.0) for m in steps),
        "bad_gold": statistics.mean(m.get("causes/bad_gold", 0.0) for m in steps),
        "truncated": statistics.mean(m.get("causes/truncated", 0.0) for m in steps),
        "no_answer": statistics.mean(m.get("causes/no_answer", 0.0) for m in steps),
    }


def plot(agg: dict, rates: list[float], engine: str, path: Path, fault: str = "outage") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rates), figsize=(4.6 * len(rates), 3.8), squeeze=False, sharey=True)
    colours = {
        "plain": "tab:red",
        "exclude": "tab:blue",
        "redraw": "tab:orange",
        "aware": "tab:green",
        "aware+constrained": "tab:purple",
        "fault-free": "black",
        "aware @0": "tab:olive",
    }
    for j, rate in enumerate(rates):
        ax = axes[0][j]
        at0 = [("fault-free", agg["0"]["plain"])] + ([("aware @0", agg["0"]["aware"])] if "aware" in agg["0"] else [])
        for name, a in [*at0, *agg[f"{rate:g}"].items()]:
            xs = [s for s, _, _ in a["curve"]]
            ms = [m for _, m, _ in a["curve"]]
            ses = [e for _, _, e in a["curve"]]
            ls = "--" if name.endswith(("fault-free", "@0")) else "-"
            ax.plot(xs, ms, ls, color=colours[name], label=name)
            ax.fill_between(
                xs, [m - e for m, e in zip(ms, ses)], [m + e for m, e in zip(ms, ses)], color=colours[name], alpha=0.15
            )
        ax.set_title(f"{rate:g} injected {FAULTS[fault][1]}")
        ax.set_xlabel("GRPO step")
    axes[0][0].set_ylabel("held-out accuracy (mean +- SE)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"What the failure step buys ({engine} engine, tiny model, 2-digit addition)")
    save_figure(fig, path)


def compare(
    agg: dict[str, dict[str, dict]], rates: list[float], fault: str, engine: str, seeds: int
) -> tuple[dict[str, dict], list[str]]:
    """Every arm against plain at its rate (paired by seed), and the aware arm's lead beyond the one it
    has with no fault at all (the difference of the two paired differences, per seed: what handling
    the faults buys, apart from what the step's redraws of flat groups buy anyway); the differences
    and the lines to print."""
    ff = agg["0"]["plain"]["final"]
    lines: list[str] = []
    diffs: dict[str, dict] = {}
    # the line says "faults" for verifier outages, where the bar is read; the others name theirs
    label = "faults" if fault == "outage" else fault
    cause = {"outage": "invalid", "bad_gold": "bad_gold", "truncation": "truncated", "cold_start": "no_answer"}[fault]
    zero = agg["0"]
    lead0 = None  # results files from before the aware arm ran at 0 have none
    if "aware" in zero:
        lead0 = [x - y for x, y in zip(zero["aware"]["finals"], zero["plain"]["finals"])]
        d0, d0_se = mean_se(lead0)
        diffs["0/aware"] = {
            "diff": d0,
            "se": d0_se,
            "verdict": verdict(d0, d0_se),
            "compute_ratio": zero["aware"]["rollouts"] / zero["plain"]["rollouts"],
        }
        print(
            f"@0: aware - plain final {d0:+.3f} +- {d0_se:.3f} (paired, {seeds} seeds, no fault): {verdict(d0, d0_se)}"
        )
    for rate in rates:
        arms = agg[f"{rate:g}"]
        p = arms["plain"]
        for arm in [a for a in arms if a != "plain"]:
            a = arms[arm]
            d, d_se = mean_se([x - y for x, y in zip(a["finals"], p["finals"])])  # paired by seed
            diffs[f"{rate:g}/{arm}"] = {
                "diff": d,
                "se": d_se,
                "verdict": verdict(d, d_se),
                "compute_ratio": a["rollouts"] / p["rollouts"],
            }
            print(
                f"@{rate:g}: {arm} - plain final {d:+.3f} +- {d_se:.3f} (paired, {seeds} seeds): "
                f"{verdict(d, d_se)}; {arm} sampled {a['rollouts'] / p['rollouts']:.2f}x plain's rollouts; "
                f"{cause} rows {a.get(cause, 0.0):.1%} ({arm}) / {p.get(cause, 0.0):.1%} (plain)"
            )
        a = arms["aware"]
        lines.append(
            f"failure-aware @{rate:g} {label} ({engine}): aware {a['final'][0]:.3f} +- "
            f"{a['final'][1]:.3f}, plain {p['final'][0]:.3f} +- {p['final'][1]:.3f}, "
            f"fault-free {ff[0]:.3f} +- {ff[1]:.3f} ({seeds} seeds)"
        )
        if lead0 is not None:
            b, b_se = mean_se([x - y - z for x, y, z in zip(a["finals"], p["finals"], lead0)])
            diffs[f"{rate:g}/aware beyond 0"] = {"diff": b, "se": b_se, "verdict": verdict(b, b_se)}
            lines.append(
                f"failure-aware @{rate:g} {label} ({engine}), aware's lead beyond its lead with no fault: "
                f"{b:+.3f} +- {b_se:.3f} ({verdict(b, b_se)})"
            )
        for arm, (what, how) in SIDE_LINES.items():
            if arm in arms:
                x = arms[arm]
                lines.append(
                    f"failure-aware @{rate:g} {label} ({engine}), {what} {x['final'][0]:.3f} +- "
                    f"{x['final'][1]:.3f} ({how.format(diffs[f'{rate:g}/{arm}']['verdict'])})"
                )
    if lead0 is not None:
        lines.append(
            f"failure-aware @0 {label} ({engine}): aware {zero['aware']['final'][0]:.3f} +- "
            f"{zero['aware']['final'][1]:.3f}, plain {ff[0]:.3f} +- {ff[1]:.3f} "
            f"({diffs['0/aware']['verdict']}: what the step buys with no fault)"
        )
    return diffs, lines


def outage_bar(diffs: dict[str, dict]) -> Bar:
    """The issue's bar: at 0.2 verifier outages, aware above plain by more than 2 SE of the paired difference."""
    d2 = diffs["0.2/aware"]
    return Bar(
        "aware minus plain final @0.2, in standard errors of the paired difference",
        d2["diff"] / d2["se"] if d2["se"] > 0 else 0.0,
        ">",
        2.0,
        quick_decides=False,
    )


def recompute(path: Path) -> None:
    """Derive the differences, lines and bar of a results file again from its arms (the figures a
    run measured), for a comparison added after the run; the run's own provenance is kept."""
    import json

    from results import bar_records, provenance, write_record

    rec = json.loads(path.read_text())
    fig, args = rec["figures"], rec["args"]
    fault = fig.get("fault", "outage")
    diffs, lines = compare(fig["arms"], args["rates"], fault, args["engine"], args["seeds"])
    fig.update({"differences": diffs, "lines": lines})
    if fault == "outage":
        rec["bars"] = bar_records([outage_bar(diffs)])
    now = provenance()
    rec["derived"] = {"commit": now["commit"], "date": now["date"]}
    write_record(path, rec)
    print("\n".join(lines))
    print(f"rewritten: {path}")


def earlier_run(path: Path, args: argparse.Namespace) -> dict:
    """The results file ``--merge`` adds to, checked against this run's settings and CPU before any run
    starts (the warm starts themselves are compared once the runs have measured them)."""
    import json

    if not path.exists():
        raise SystemExit(f"--merge: no results file {path} to add to")
    rec = json.loads(path.read_text())
    same = ("fault", "seeds", "steps", "eval_every", "rates", "engine")
    theirs = {k: rec["args"].get(k, "outage" if k == "fault" else None) for k in same}
    if theirs != {k: getattr(args, k) for k in same}:
        raise SystemExit(f"--merge: {path} was run with {theirs}, not these settings")
    from rlvr.runtime import cpu_report

    if rec["figures"].get("cpu") not in (None, cpu_report()):  # another CPU lands the warm-up elsewhere
        raise SystemExit(f"--merge: {path} was measured on {rec['figures']['cpu']}, this is {cpu_report()}")
    for rate in [f"{r:g}" for r in args.rates]:
        have = set(rec["figures"]["arms"].get(rate, {})) | set(args.arms or [])
        if not {"plain", "aware"} <= have:
            raise SystemExit(f"--merge: {path} has no plain or aware arm at {rate} and this run adds none")
    return rec


def merge(agg: dict[str, dict[str, dict]], rec: dict) -> dict:
    """Add the arms of an earlier run with the same settings and warm-ups (the same CPU) to ``agg``,
    the arms measured now replacing theirs; what the earlier run was (its commit, date and arms)."""
    for rate, arms in rec["figures"]["arms"].items():
        ours = {a["curve"][0][1] for a in agg.get(rate, {}).values()}
        kept = {a["curve"][0][1] for arm, a in arms.items() if arm not in agg.get(rate, {})}
        if ours and kept and ours != kept:
            raise SystemExit(
                f"--merge: at {rate} the earlier run started from {sorted(kept)}, this one from "
                f"{sorted(ours)} (another CPU?); nothing was merged"
            )
    for rate, arms in rec["figures"]["arms"].items():
        for arm, a in arms.items():
            agg.setdefault(rate, {}).setdefault(arm, a)
    order = [*ARMS, *COLD_ARMS]  # the plot's and the lines' order
    for rate in agg:
        agg[rate] = dict(sorted(agg[rate].items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99))
    return {
        "commit": rec["commit"],
        "date": rec["date"],
        "arms": sorted({f"{r}/{a}" for r, arms in rec["figures"]["arms"].items() for a in arms}),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fault", default="outage", choices=list(FAULTS), help="the kind of fault injected")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per arm (0 .. N-1)")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--rates", type=float, nargs="+", default=[0.2, 0.5])
    ap.add_argument("--engine", default="rlvr", choices=["rlvr", "trl"])
    ap.add_argument("--jobs", type=int, default=1, help="runs side by side (one torch thread each)")
    ap.add_argument("--quick", action="store_true", help="3 seeds, 0.2 only, 60 steps (make bench-check)")
    ap.add_argument("--arms", nargs="+", metavar="ARM", help="run only these arms at the rates (with --merge)")
    ap.add_argument(
        "--merge",
        action="store_true",
        help="add the arms this run measures to the results file of a run with the same settings",
    )
    ap.add_argument(
        "--recompute",
        type=Path,
        metavar="JSON",
        help="derive the differences and lines of a results file again from its arms (no run)",
    )
    args = ap.parse_args()
    if args.recompute:
        recompute(args.recompute)
        return
    if args.quick:
        args.seeds, args.rates, args.steps, args.eval_every = min(args.seeds, 3), [0.2], min(args.steps, 60), 20
    if 0.2 not in args.rates:
        ap.error("--rates must include 0.2 (the bar is read there)")
    known = set(COLD_ARMS if args.fault == "cold_start" else ARMS)
    if args.arms and not set(args.arms) <= known:
        ap.error(f"--arms: {sorted(set(args.arms) - known)} not among {sorted(known)} for --fault {args.fault}")
    if args.arms and not args.merge and not {"plain", "aware"} <= set(args.arms):
        ap.error(
            "--arms without plain and aware needs --merge (every arm is read against plain's runs, and aware's at 0)"
        )
    from rlvr.config import RolloutConfig
    from rlvr.runtime import cpu_report

    print(f"CPU: {cpu_report()}", flush=True)
    name = (
        "failure_step"
        + ("" if args.fault == "outage" else f"-{args.fault}")
        + ("" if args.engine == "rlvr" else "-trl")
    )
    png = (RESULTS / "quick" if args.quick else RESULTS) / f"{name}.png"
    before = earlier_run(png.with_suffix(".json"), args) if args.merge else None  # before any run
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-failure-step-"))
    cold = args.fault == "cold_start"
    warm = warm_model(tmp / "warm", 0, untagged=0.0 if cold else 1 / 3)
    warms = dict.fromkeys([0.0, *args.rates], warm)
    if cold:  # one warm-up per rate, its share of untagged targets the rate, each SFT'd to the same
        # lenient held-out accuracy (a fixed number of steps leaves some before the tiny model "clicks")
        warms.update({r: warm_model(tmp / f"warm-{r:g}", 0, untagged=r) for r in args.rates})
    arms_of = dict(COLD_ARMS if cold else ARMS)
    if args.fault == "truncation":  # the admission the aware arm has for them
        arms_of["exclude"] = [*EXCLUDE, "failure.exclude_truncated=true"]
        arms_of["redraw"] = [*REDRAW, "failure.exclude_truncated=true"]
    zero_arms = ["plain", "aware"]
    if args.arms:
        arms_of = {a: arms_of[a] for a in args.arms}
        zero_arms = [a for a in zero_arms if a in arms_of]
    jobs = [(0.0, arm, s) for arm in zero_arms for s in range(args.seeds)]
    jobs += [(rate, arm, s) for rate in args.rates for arm in arms_of for s in range(args.seeds)]
    rc = RolloutConfig()
    raw: dict[tuple[float, str, int], dict] = {}

    def done(key: tuple[float, str, int], metrics: list[dict]) -> None:
        raw[key] = summarise(metrics, rc.group_size, rc.prompts_per_step)
        print(
            f"{key[1]:6s} @ {key[0]:g} seed {key[2]}: "
            + "  ".join(f"{s}:{a:.3f}" for s, a in raw[key]["curve"])
            + f"  ({raw[key]['rollouts']:.0f} rollouts)",
            flush=True,
        )

    def out(rate: float, arm: str, seed: int) -> Path:
        return tmp / f"{rate:g}" / f"{arm}-{seed}"

    calls = {
        (r, a, s): (warms[r], out(r, a, s), s, args.steps, args.eval_every, r, arms_of[a], args.engine, args.fault)
        for r, a, s in jobs
    }
    side_by_side(run, calls, args.jobs, done)
    seeds = range(args.seeds)
    agg: dict[str, dict[str, dict]] = {}
    for rate, arms in [(0.0, zero_arms), *[(r, list(arms_of)) for r in args.rates]]:
        for arm in arms:
            runs = [raw[(rate, arm, s)] for s in seeds]
            points = [(p[0], *mean_se([r["curve"][i][1] for r in runs])) for i, p in enumerate(runs[0]["curve"])]
            agg.setdefault(f"{rate:g}", {})[arm] = {
                "curve": points,
                "final": mean_se([r["final"] for r in runs]),
                "rollouts": statistics.mean(r["rollouts"] for r in runs),
                "invalid": statistics.mean(r["invalid"] for r in runs),
                "finals": [r["final"] for r in runs],
                **{k: statistics.mean(r.get(k, 0.0) for r in runs) for k in ("bad_gold", "truncated", "no_answer")},
            }
    earlier = merge(agg, before) if before is not None else None
    diffs, lines = compare(agg, args.rates, args.fault, args.engine, args.seeds)
    bars = [outage_bar(diffs)] if args.fault == "outage" else []  # the outage's bar; the other kinds are reported
    plot(agg, args.rates, args.engine, png, args.fault)
    report(
        name,
        {
            "fault": args.fault,
            "arms": agg,
            "differences": diffs,
            "lines": lines,
            "cpu": cpu_report(),
            "plot": png.name,
            **({"earlier": earlier} if earlier else {}),
        },
        bars,
        args,
        quick=args.quick,
    )
    print(f"plot: {png}")
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)  # the warm-up and the run folders


if __name__ == "__main__":
    main()
