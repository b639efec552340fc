"""Episodes with a calculator under injected environment faults: what keeping the faults out buys.

The tiny model cannot multiply 3-digit numbers in its head; warmed up by SFT on calculator traces
(``<tool_call>{"name":"calculator","arguments":{"expression":"123*456"}}</tool_call><tool_response>
56088</tool_response><answer>56088</answer>``) it calls the tool but copies digits wrongly often
enough that GRPO has something to improve. Faults are injected into the calculator by rlvr's seeded
wrapper (``env.faults``: a tool error, a hang past the limit, a crashed session, at ``rate/2``,
``rate/4``, ``rate/4``; the hang is recorded as ``env_timeout`` without waiting it out), and from
the same warm model and seed four runs train:

* ``fault-free``: no faults, ``M`` steps (the target);
* ``reward-0`` (what TRL and verl do): a faulted episode scores 0 and stays in its group's baseline
  and the loss (``failure.env_fault_handling: score_zero``), not redrawn;
* ``mask-only``: a faulted episode leaves the loss but stays in its group's baseline at 0
  (``failure.env_fault_handling: mask_loss``, NeMo-RL #4061), not redrawn;
* ``rlvr``: a faulted episode leaves the baseline and the loss and is redrawn whole with a fresh
  environment; prompts that keep dying of the environment are quarantined (the defaults);

the three with faults for ``1.5 M`` steps (they lose episodes to the faults). Held-out accuracy is
greedy on 200 problems in a fault-free environment (what the policy can do), with the share of
episodes that call the tool (the signature of failure-as-zero is a policy that learns to avoid it).

With ``--engine trl`` the same arms train on TRL's ``GRPOTrainer`` (``FailureAwareGRPOTrainer``:
TRL's own tool loop, rlvr's guards on every row), warmed up on traces in the chat template's turn
format (the call turn ends with ``<eos>``, as TRL renders it); the last lines then say ``(trl)``.

With ``--environment verifiers`` the same task is a published ``verifiers`` tool environment
(``benchmarks/envs/vf_products.py``, written in verifiers' API: its dataset, its ``calculator``
function, its rubric) loaded from one config line; the faults are injected at the same tool
boundary, and the result file is ``agentic_verifiers*.json``. ``--environment openenv`` serves it from
an OpenEnv server rlvr starts (``benchmarks/envs/openenv_products.py``), whose reward is the product
computed with the tool (OpenEnv judges steps, not the final answer); ``agentic_openenv*.json``.

With ``--seeds N`` every run trains from N paired seeds on the one warm-up (GRPO's draws and the
faults' both move with the seed); the lines then give the means, and one more line per rate the
paired difference rlvr minus reward-0 with its standard error (a claim only beyond 2 SE); the
results go to ``agentic-<N>seeds.json`` (``agentic_trl-<N>seeds.json``) beside the one-seed file.

    .venv/bin/python benchmarks/agentic.py [--engine rlvr|trl] [--steps M] [--rates 0.2 0.5 0.9] [--seeds N]
        [--environment calculator|verifiers|openenv] [--keep DIR] [--quick]
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import RESULTS, Bar, mean_se, report, save_figure, side_by_side, src_path

sys.path.insert(0, src_path())

TASK = ["data.task=arithmetic", "data.task_options={digits: 3, ops: '*'}", "data.eval_size=200"]
BASE = [
    *TASK,
    "rollout.prompts_per_step=8",
    "rollout.group_size=4",
    "rollout.max_new_tokens=160",
    "rollout.temperature=1.0",
    "optim.lr=2e-4",
    "optim.warmup_steps=0",
    "rewards.options={accuracy: {strict: true}, format: {think_tag: null}}",
]
ARMS = {
    "rlvr": [],
    "reward-0": ["failure.env_fault_handling=score_zero"],
    "mask-only": ["failure.env_fault_handling=mask_loss"],
}


def warm_model(out: Path, steps: int, seed: int = 0, after_call: str = "", keep: dict[int, Path] | None = None) -> dict:
    """The tiny model after SFT on calculator traces of 3-digit products (the tool-use warm-up;
    ``after_call``: what the engine's turn format writes between a call and its result). ``keep``:
    the model as it stood at these steps of the same run is saved too (a weaker start of the same
    recipe: a shorter warm-up is another run, its schedule ending sooner)."""
    from rlvr.data import arithmetic
    from rlvr.episodes import trace_of
    from rlvr.models import build_model, build_tokenizer
    from rlvr.runtime import setup_torch
    from rlvr.sft import sft

    setup_torch(1, seed)
    tok = build_tokenizer()
    model = build_model(tok, seed=seed)
    t0 = time.perf_counter()

    def checkpoint(step: int, state: dict) -> None:
        if keep and step in keep:
            model.save_pretrained(keep[step])
            tok.save_pretrained(keep[step])

    res = sft(
        model,
        tok,
        arithmetic(seed + 10_000, digits=3, ops="*"),
        steps=steps,
        batch_size=16,
        lr=3e-3,
        eval_every=0,
        warmup_steps=20,
        completion_of=lambda row: trace_of(row, after_call=after_call),
        on_eval=lambda s, a, loss: print(f"  warm-up step {s}: loss {loss:.3f}", flush=True),
        checkpoint=checkpoint if keep else None,
        checkpoint_every=math.gcd(*keep) if keep else 0,
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    print(
        f"warm-up: {steps} SFT steps on calculator traces in {time.perf_counter() - t0:.0f}s "
        f"(final loss {res['loss']:.3f})",
        flush=True,
    )
    return res


#: ``--environment verifiers``: the same task as a published verifiers tool environment (its own
#: dataset, tool and rubric; rlvr's fault injection at the tool boundary, as for the calculator).
VERIFIERS_ENV = f"verifiers:{Path(__file__).resolve().parent / 'envs' / 'vf_products.py'}?size=4000&eval_size=200"
#: ``--environment openenv``: the same task as an OpenEnv server rlvr starts (its reward: the product
#: computed with the tool; the answer is not what it judges).
OPENENV_SERVER = f"{sys.executable} {Path(__file__).resolve().parent / 'envs' / 'openenv_products.py'} --port {{port}}"


def env_section(rate: float, seed: int = 0, environment: str = "calculator") -> str:
    """The calculator environment (rlvr's own, or ``verifiers``: the task's published verifiers
    environment) with faults at ``rate``, drawn from ``seed`` (7 + the run's seed: seed 0 keeps the
    draws of the one-seed runs)."""
    faults = "{}" if rate == 0 else f"{{tool_error: {rate / 2:g}, env_timeout: {rate / 4:g}, env_crash: {rate / 4:g}}}"
    where = {
        "calculator": "tools: [calculator]",
        "verifiers": f'environment: "{VERIFIERS_ENV}"',
        "openenv": f'environment: "openenv?tool=calculator", server: "{OPENENV_SERVER}"',
    }[environment]
    return f"env={{{where}, max_turns: 2, faults: {faults}, fault_seed: {7 + seed}}}"


def run_config(warm: Path, out: Path, steps: int, every: int, seed: int, env: str, extra: list[str]) -> Any:
    """The config of one run from the warm model (``BASE``, the run's folder, length and seed, ``env``,
    then ``extra`` overrides): what this benchmark and ``agentic_heavy.py`` both train."""
    from rlvr.config import load_config

    run = [f"run.out_dir={out}", f"run.steps={steps}", f"run.seed={seed}", f"run.eval_every={every}"]
    return load_config(None, [*BASE, f"model.name={warm}", *run, f"run.save_every={steps}", env, *extra])


def train(
    warm: Path,
    out: Path,
    steps: int,
    every: int,
    rate: float,
    extra: list[str],
    seed: int,
    engine: str = "rlvr",
    environment: str = "calculator",
) -> list[dict]:
    from rlvr.engine import GRPOTrainer
    from rlvr.runs import read_metrics

    env = env_section(rate, seed, environment)
    cfg = run_config(warm, out, steps, every, seed, env, [f"engine={engine}", *extra])
    t0 = time.perf_counter()
    if engine == "trl":
        from rlvr.integrations.trl import train_trl

        train_trl(
            cfg,
            on_log=lambda step, logs: (
                print(f"    step {step:4d} ({time.perf_counter() - t0:.0f}s)", flush=True)
                if step % every == 0
                else None
            ),
        )
        return read_metrics(out)

    def progress(step: int, ev: dict) -> None:
        print(
            f"    step {step:4d}: held-out {ev['accuracy']:.3f}, tool-call rate {ev.get('tool_rate', 0):.2f} "
            f"({time.perf_counter() - t0:.0f}s)",
            flush=True,
        )

    GRPOTrainer(cfg).train(on_eval=progress)
    return read_metrics(out)


def summarise(metrics: list[dict]) -> dict:
    evals = [(m["step"], m["eval/accuracy"], m.get("eval/tool_rate", 0.0)) for m in metrics if "eval/accuracy" in m]
    steps = [m for m in metrics if "causes/correct" in m]
    causes = sorted({k for m in steps for k in m if k.startswith("causes/")})
    mix = {k.split("/", 1)[1]: statistics.mean(m.get(k, 0.0) for m in steps) for k in causes}
    return {
        "curve": [[s, a] for s, a, _ in evals],
        "tool_rate": [[s, r] for s, _, r in evals],
        "final": evals[-1][1],
        "final_tool_rate": evals[-1][2],
        "start": evals[0][1],
        "cause_mix": {k: v for k, v in mix.items() if v > 0},
        "fault_rate": statistics.mean(m.get("env/fault_rate", 0.0) for m in steps),
        "redrawn_per_step": statistics.mean(m.get("failure/resampled", 0.0) for m in steps),
    }


def aggregate(runs: list[dict]) -> dict:
    """One arm over paired seeds: the mean of its summaries (curves point by point, with their SE),
    each seed's final kept."""

    def mean_curve(key: str) -> tuple[list[list[float]], list[float]]:
        points = [mean_se([r[key][i][1] for r in runs]) for i in range(len(runs[0][key]))]
        return [[runs[0][key][i][0], m] for i, (m, _) in enumerate(points)], [se for _, se in points]

    curve, curve_se = mean_curve("curve")
    tool_rate, _ = mean_curve("tool_rate")
    final, final_se = mean_se([r["final"] for r in runs])
    causes = sorted({k for r in runs for k in r["cause_mix"]})
    return {
        "curve": curve,
        "curve_se": curve_se,
        "tool_rate": tool_rate,
        "final": final,
        "final_se": final_se,
        "finals": [r["final"] for r in runs],
        "final_tool_rate": statistics.mean(r["final_tool_rate"] for r in runs),
        "start": statistics.mean(r["start"] for r in runs),
        "cause_mix": {k: statistics.mean(r["cause_mix"].get(k, 0.0) for r in runs) for k in causes},
        "fault_rate": statistics.mean(r["fault_rate"] for r in runs),
        "redrawn_per_step": statistics.mean(r["redrawn_per_step"] for r in runs),
    }


def plot(results: dict, rates: list[float], path: Path, engine: str = "rlvr") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"fault-free": "black", "rlvr": "tab:green", "reward-0": "tab:red", "mask-only": "tab:orange"}
    fig, axes = plt.subplots(2, len(rates), figsize=(max(4.2 * len(rates), 7.0), 6.4), squeeze=False, sharey="row")
    for j, rate in enumerate(rates):
        arms = {"fault-free": results["0"]["fault-free"], **results[f"{rate:g}"]}
        for name, r in arms.items():
            ls = "--" if name == "fault-free" else "-"
            axes[0][j].plot(*zip(*r["curve"]), ls, color=colours[name], label=name)
            if any(r.get("curve_se", [])):  # several seeds: a band of one SE either side
                xs, ys = zip(*r["curve"])
                axes[0][j].fill_between(
                    xs,
                    [y - e for y, e in zip(ys, r["curve_se"])],
                    [y + e for y, e in zip(ys, r["curve_se"])],
                    color=colours[name],
                    alpha=0.15,
                )
            axes[1][j].plot(*zip(*r["tool_rate"]), ls, color=colours[name], label=name)
        axes[0][j].set_title(f"{rate:g} injected faults")
        axes[1][j].set_xlabel("GRPO step")
        axes[1][j].set_ylim(0, 1.05)  # the whole range: a few episodes either way is not a policy avoiding the tool
    axes[0][0].set_ylabel("held-out accuracy (fault-free env)")
    axes[1][0].set_ylabel("episodes that call the tool")
    axes[0][0].legend(fontsize=8)
    on = "rlvr's engine" if engine == "rlvr" else "TRL's GRPOTrainer"
    fig.suptitle(f"Tool-use episodes under environment faults on {on}\n(tiny model, calculator, 3-digit products)")
    save_figure(fig, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=60, help="M: the fault-free run's steps (faulty arms: 1.5 M)")
    ap.add_argument("--rates", type=float, nargs="+", default=[0.2, 0.5, 0.9])
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument(
        "--sft-steps",
        type=int,
        help="warm-up SFT steps (default 1000; 2000 with --engine trl: in "
        "TRL's turn format, whose call turn ends with <eos>, the tiny model copies the tool's digits "
        "only after ~2000)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--warm-seed",
        type=int,
        help="the warm-up's seed (default --seed). The tiny model learns to copy the tool's digits in "
        "TRL's turn format in some seeds' runs and not others (on an AVX2 machine, 2000 steps: seed 0 "
        "copies none of 30 products, seed 1 28 of 30); the GRPO seeds stay --seed's",
    )
    ap.add_argument(
        "--warm-step",
        type=int,
        help="start from the warm-up as it stood at this SFT step of its --sft-steps run (a weaker start "
        "of the same recipe, with room to learn; the folder --warm names then holds that model)",
    )
    ap.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="paired GRPO seeds from --seed, on the one warm-up (faults "
        "drawn from 7 + seed): the figures are their means, with the SE of rlvr minus reward-0",
    )
    ap.add_argument("--warm", type=Path, help="reuse a warm-up folder (written there when it does not exist)")
    ap.add_argument("--jobs", type=int, default=1, help="runs side by side (one torch thread each)")
    ap.add_argument(
        "--keep",
        type=Path,
        help="keep each run folder as DIR/<fault rate>/<arm>/ (DIR/seed-<s>/<fault rate>/<arm>/ with several seeds)",
    )
    ap.add_argument("--quick", action="store_true", help="0.5 faults only, 30 steps (make bench-check)")
    ap.add_argument("--engine", choices=["rlvr", "trl"], default="rlvr")
    ap.add_argument(
        "--environment",
        choices=["calculator", "verifiers", "openenv"],
        default="calculator",
        help="rlvr's calculator tool, or the same task as a published verifiers environment "
        "(benchmarks/envs/vf_products.py: its dataset, tool and rubric) or an OpenEnv server "
        "(benchmarks/envs/openenv_products.py: its reward is the product computed with the tool)",
    )
    args = ap.parse_args()
    if args.quick:
        args.rates, args.steps, args.eval_every = [0.5], min(args.steps, 30), 10
    if 0.5 not in args.rates:
        ap.error("--rates must include 0.5 (the bars are read there)")
    from rlvr.runtime import cpu_report

    print(f"CPU: {cpu_report()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-agentic-"))
    root = args.keep or tmp
    warm = args.warm or tmp / "warm"
    if args.sft_steps is None:
        args.sft_steps = 2000 if args.engine == "trl" else 1000
    if args.warm_step is not None and not 0 < args.warm_step <= args.sft_steps:
        ap.error(f"--warm-step {args.warm_step}: a step of the {args.sft_steps}-step warm-up")
    if not (warm / "config.json").exists():
        warm_seed = args.seed if args.warm_seed is None else args.warm_seed
        after = "<eos>" if args.engine == "trl" else ""
        if args.warm_step is None or args.warm_step == args.sft_steps:
            warm_model(warm, args.sft_steps, warm_seed, after_call=after)
        else:  # the whole recipe runs (its schedule is the full run's); the model at that step is kept
            warm_model(tmp / "warm-full", args.sft_steps, warm_seed, after_call=after, keep={args.warm_step: warm})
    m, long = args.steps, int(1.5 * args.steps)
    seeds = list(range(args.seed, args.seed + args.seeds))
    jobs = [("0", "fault-free", m, 0.0, [])]
    jobs += [(f"{rate:g}", arm, long, rate, extra) for rate in args.rates for arm, extra in ARMS.items()]
    per_seed: dict[tuple[str, str], list[dict]] = {}

    def folder(seed: int, key: str, arm: str) -> Path:  # DIR/<rate>/<arm>/, DIR/seed-<s>/... with several
        return root / key / arm if len(seeds) == 1 else root / f"seed-{seed}" / key / arm

    def done(k: tuple[int, str, str], metrics: list[dict]) -> None:
        seed, key, arm = k
        r = summarise(metrics)
        per_seed.setdefault((key, arm), []).append(r)
        print(
            f"{arm} @ {key} faults (seed {seed}): {r['start']:.3f} -> {r['final']:.3f} held-out, tool-call rate "
            f"{r['final_tool_rate']:.2f}",
            flush=True,
        )

    calls = {
        (seed, key, arm): (
            warm,
            folder(seed, key, arm),
            steps,
            args.eval_every,
            rate,
            extra,
            seed,
            args.engine,
            args.environment,
        )
        for seed in seeds
        for key, arm, steps, rate, extra in jobs
    }
    side_by_side(train, calls, args.jobs, done)
    results: dict[str, dict[str, dict]] = {}
    for key in ["0", *(f"{r:g}" for r in args.rates)]:
        results[key] = {arm: aggregate(runs) for (k, arm), runs in per_seed.items() if k == key}
    ff = results["0"]["fault-free"]
    lines, bars = [], []
    tag = (
        "agentic"
        + ("" if args.engine == "rlvr" else " (trl)")
        + ("" if args.environment == "calculator" else f" ({args.environment} env)")
    )
    for rate in args.rates:
        r = results[f"{rate:g}"]
        lines.append(
            f"{tag} @{rate:g} faults, final held-out accuracy: rlvr {r['rlvr']['final']:.3f}, reward-0 "
            f"{r['reward-0']['final']:.3f}, mask-only {r['mask-only']['final']:.3f}, "
            f"fault-free {ff['final']:.3f}"
        )
        lines.append(
            f"{tag} @{rate:g} faults, tool-call rate: rlvr {r['rlvr']['final_tool_rate']:.2f}, reward-0 "
            f"{r['reward-0']['final_tool_rate']:.2f}, mask-only {r['mask-only']['final_tool_rate']:.2f}, "
            f"fault-free {ff['final_tool_rate']:.2f}"
        )
        reached = next((s for s, a in r["rlvr"]["curve"] if s > 0 and a >= ff["final"] - 0.02), None)
        r["rlvr"]["reached_at"] = reached
        lines.append(
            f"{tag} @{rate:g} faults, steps to the fault-free final: rlvr "
            f"{reached if reached is not None else 'never'} of {m}"
        )
        if len(seeds) > 1:  # paired seeds: the lead over failure-as-zero, with its standard error
            diff, se = mean_se([a - b for a, b in zip(r["rlvr"]["finals"], r["reward-0"]["finals"])])
            r["rlvr"]["minus_reward0"] = [diff, se]
            lines.append(
                f"{tag} @{rate:g} faults, rlvr minus reward-0 final over {len(seeds)} paired seeds: "
                f"{diff:+.3f} +- {se:.3f} SE ({diff / se if se else float('inf'):.1f} SE)"
            )
            # and against its own fault-free run (same seed): what the faults cost once kept out
            gap, gap_se = mean_se([a - b for a, b in zip(r["rlvr"]["finals"], ff["finals"])])
            r["rlvr"]["minus_fault_free"] = [gap, gap_se]
            lines.append(
                f"{tag} @{rate:g} faults, rlvr minus fault-free final over {len(seeds)} paired seeds: "
                f"{gap:+.3f} +- {gap_se:.3f} SE"
            )
        for arm in r:
            mix = ", ".join(f"{k} {v:.1%}" for k, v in sorted(r[arm]["cause_mix"].items(), key=lambda kv: -kv[1]))
            print(f"  @{rate:g} {arm:9s} causes per step: {mix}; redrawn per step {r[arm]['redrawn_per_step']:.1f}")
    r5 = results["0.5"]
    reached = r5["rlvr"]["reached_at"]
    bars = [
        Bar(
            "rlvr @0.5: reaches the fault-free final (less 0.02) within 1.5 M steps",
            1.0 if reached is not None else 0.0,
            ">=",
            1.0,
            quick_decides=False,
        ),
        Bar(
            "rlvr minus reward-0 final accuracy @0.5",
            r5["rlvr"]["final"] - r5["reward-0"]["final"],
            ">=",
            0.10,
            quick_decides=False,
        ),
        Bar(
            "|rlvr - fault-free| tool-call rate @0.5",
            abs(r5["rlvr"]["final_tool_rate"] - ff["final_tool_rate"]),
            "<=",
            0.10,
            quick_decides=False,
        ),
    ]
    if len(seeds) > 1:  # the project's rule: a claim only beyond 2 SE
        diff, se = r5["rlvr"]["minus_reward0"]
        bars.append(
            Bar(
                "rlvr minus reward-0 final @0.5, in SE of the paired difference",
                diff / se if se else 0.0,
                ">=",
                2.0,
                quick_decides=False,
            )
        )
    if len(seeds) > 1:  # with the faults kept out, the run ends where its fault-free run does
        gap, gap_se = r5["rlvr"]["minus_fault_free"]
        bars.append(
            Bar(
                "rlvr minus fault-free final @0.5, in SE of the paired difference (no worse than -2)",
                gap / gap_se if gap_se else (0.0 if gap >= 0 else -float("inf")),
                ">=",
                -2.0,
                quick_decides=False,
            )
        )
    # Several seeds write a file of their own: a paired-seed run never overwrites the full one-seed run.
    name = ("agentic" if args.engine == "rlvr" else "agentic_trl") + (
        "" if args.environment == "calculator" else f"_{args.environment}"
    )
    name += f"-{len(seeds)}seeds" if len(seeds) > 1 else ""
    png = (RESULTS / "quick" if args.quick else RESULTS) / f"{name}.png"
    plot(results, args.rates, png, args.engine)
    report(
        name,
        {
            "results": results,
            "lines": lines,
            "steps": m,
            "cpu": cpu_report(),
            "plot": png.name,
            "engine": args.engine,
            "environment": args.environment,
            "seeds": seeds,
            "per_seed": {f"{k}/{arm}": runs for (k, arm), runs in per_seed.items()},
        },
        bars,
        args,
        quick=args.quick,
    )
    print(f"plot: {png}")
    print("\n".join(lines))
    if args.keep is not None and args.warm is None:  # the warm-up is kept for the runs it started
        print(f"run folders: {args.keep}/<fault rate>/<arm>/ (warm-up: {warm})")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
