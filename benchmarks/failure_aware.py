"""Failure-aware GRPO vs plain GRPO from a warm-up that is weak on format, same steps and seeds.

The warm-up (SFT of the tiny model on 2-digit addition) is trained on targets of which a third are
``the sum is N`` instead of ``<answer>N</answer>``, so about a third of its outputs lack the answer
tag. Answers are verified strictly (no last-number fallback), so those are format deaths. Then, from the
same warm model, for each seed:

* plain GRPO: every rollout scored and kept (quarantine, resampling and dynamic sampling off);
* failure-aware GRPO: invalid/truncated rollouts excluded and resampled, zero-signal groups
  replaced by dynamic sampling, prompts that keep dying quarantined, advantages clipped;
* failure-aware GRPO whose rollouts are sampled under the answer grammar
  (``decoding.constrain: full``; the held-out evaluation stays unconstrained, so the policy itself
  is judged).

Prints held-out accuracy every ``--eval-every`` steps and the format / verification death rates for
both, and how many steps the failure-aware run needed to reach the plain run's final accuracy
(the bar: at most 70% of the steps).

``--engine trl`` runs the same three on TRL's GRPOTrainer (``FailureAwareGRPOTrainer``, the same config
through ``rlvr train --set engine=trl``); there dynamic sampling filters flat groups out of the loss
(TRL's batch has a fixed shape: no replacement groups are drawn).

    .venv/bin/python benchmarks/failure_aware.py [--steps 150] [--seeds 0 1] [--variants ...] [--engine rlvr|trl]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import Bar, report, src_path

sys.path.insert(0, src_path())

PLAIN = ["failure.quarantine=false", "failure.resample_tries=0", "failure.dynamic_sampling=0"]
AWARE = [
    "failure.quarantine=true",
    "failure.resample_tries=2",
    "failure.exclude_truncated=true",
    "failure.dynamic_sampling=2",
    "algo.advantage_clip=3.0",
]
# failure-aware with the answer segment constrained while sampling rollouts; the held-out evaluation
# stays unconstrained (the policy itself is judged, leniently, as for the others)
CONSTRAINED = [*AWARE, "decoding.constrain=full", "decoding.in_eval=false"]
VARIANTS = {"plain": PLAIN, "aware": AWARE, "aware+constrained": CONSTRAINED}


def warm_model(out: Path, seed: int, untagged: float = 1 / 3) -> Path:
    """SFT the tiny model until a lenient held-out accuracy of 0.3, a share ``untagged`` of its targets
    ``the sum is N`` instead of ``<answer>N</answer>`` (the format-weak start); the saved model's
    folder."""
    from rlvr.data import Sample, addition_eval, addition_train
    from rlvr.models import build_model, build_tokenizer
    from rlvr.runtime import setup_torch
    from rlvr.sft import sft

    setup_torch(1, seed)
    tok = build_tokenizer()
    model = build_model(tok, seed=seed)
    rng = random.Random(seed)

    def target(s: Sample) -> str:
        return f"the sum is {s.gold}" if rng.random() < untagged else f"<answer>{s.gold}</answer>"

    res = sft(
        model,
        tok,
        addition_train(seed + 10_000),
        steps=1000,
        eval_rows=addition_eval(200),
        target_accuracy=0.3,
        completion_of=target,
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    print(
        f"warm-up ({untagged:.0%} untagged): {res['steps']} SFT steps, held-out accuracy {res['accuracy']:.3f} "
        "(lenient)",
        flush=True,
    )
    return out


def run(
    warm: Path,
    out: Path,
    seed: int,
    steps: int,
    every: int,
    extra: list[str],
    engine: str = "rlvr",
    accuracy: str = "{strict: true}",
) -> list[dict]:
    """Train one variant from the warm model; its evaluation and death-rate metrics."""
    from rlvr.config import load_config
    from rlvr.runs import read_metrics

    cfg = load_config(
        None,
        [
            f"model.name={warm}",
            f"run.out_dir={out}",
            f"run.steps={steps}",
            f"run.seed={seed}",
            f"run.eval_every={every}",
            f"run.save_every={steps}",
            f"engine={engine}",
            f"rewards.options={{accuracy: {accuracy}, format: {{think_tag: null}}}}",
            *extra,
        ],
    )
    if engine == "trl":
        import warnings

        from rlvr.integrations.trl import train_trl

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train_trl(cfg)
    else:
        from rlvr.engine import GRPOTrainer

        GRPOTrainer(cfg).train()
    return [m for m in read_metrics(out) if "eval/accuracy" in m or "verify/no_answer" in m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--engine", default="rlvr", choices=["rlvr", "trl"])
    ap.add_argument("--quick", action="store_true", help="one seed, 60 steps, plain vs aware (make bench-check)")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.steps, args.eval_every, args.variants = args.seeds[:1], min(args.steps, 60), 15, ["aware"]
    names = ["plain", *[v for v in args.variants if v != "plain"]]
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-failure-aware-"))
    warm = warm_model(tmp / "warm", 0)
    curves: dict[str, list[list[tuple[int, float]]]] = {n: [] for n in names}
    deaths: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for seed in args.seeds:
        for name in names:
            extra = VARIANTS[name]
            m = run(warm, tmp / f"{name}-{seed}", seed, args.steps, args.eval_every, extra, args.engine)
            curve = [(x["step"], x["eval/accuracy"]) for x in m if "eval/accuracy" in x]
            curves[name].append(curve)
            steps = [x for x in m if "verify/no_answer" in x]
            deaths[name].append(
                (
                    statistics.mean(x["verify/no_answer"] for x in steps),
                    statistics.mean(x["verify/wrong"] for x in steps),
                )
            )
            print(
                f"{name:17s} seed {seed}: "
                + "  ".join(f"{s}:{a:.3f}" for s, a in curve)
                + f"   mean format death {deaths[name][-1][0]:.3f}, verification death {deaths[name][-1][1]:.3f}",
                flush=True,
            )
    mean_curve = {
        n: [(c[0][i][0], statistics.mean(x[i][1] for x in c)) for i in range(len(c[0]))] for n, c in curves.items()
    }
    target = mean_curve["plain"][-1][1]
    print(f"\nplain final held-out accuracy (mean over seeds): {target:.3f} at step {args.steps}")
    bars, figures = [], {"plain_final": target, "curves": mean_curve, "deaths": deaths}
    start = mean_curve["plain"][0][1]
    if target <= start:  # then reaching it says little: the final accuracies are compared too
        print(f"plain ended at or below where it started ({start:.3f}): read the final accuracies, not the step share")
    for name in names[1:]:
        reached = next((s for s, a in mean_curve[name] if s > 0 and a >= target), None)
        fmt = statistics.mean(d[0] for d in deaths[name])
        if reached is None:
            print(
                f"{name}: never reached it in {args.steps} steps (final {mean_curve[name][-1][1]:.3f}); "
                f"format deaths {fmt:.1%}"
            )
        else:
            print(
                f"{name}: reached it at step {reached}: {reached / args.steps:.0%} of the steps (bar: <= 70%); "
                f"final {mean_curve[name][-1][1]:.3f}; format deaths {fmt:.1%}"
            )
        share = (reached if reached is not None else 2 * args.steps) / args.steps
        figures[f"{name}_reached_share"] = share
        # one quick seed and a few dozen steps cannot decide either (the spread of a seed is larger)
        bars.append(
            Bar(
                f"{name}: share of the steps to reach plain's final accuracy",
                share,
                "<=",
                0.7,
                "%",
                quick_decides=False,
            )
        )
        bars.append(
            Bar(f"{name} minus plain final accuracy", mean_curve[name][-1][1] - target, ">=", 0.0, quick_decides=False)
        )
    report("failure_aware" if args.engine == "rlvr" else "failure_aware-trl", figures, bars, args, quick=args.quick)


if __name__ == "__main__":
    main()
