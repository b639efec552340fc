"""Constrained decoding on a format-weak model: format deaths, throughput, accuracy, same run.

The tiny model is warmed up on 2-digit addition with a third of its targets written
``the sum is N`` (no answer tag: a format death under strict verification), as in
``benchmarks/failure_aware.py``. Then 512 rollouts (64 prompts x 8, 32 new tokens,
temperature 1, one torch thread) are sampled without and with
``decoding.constrain: answer``, from the same seeds, alternately, ``--reps`` times:

* format-death rate (strict verification finds no answer): bar < 1% with constraints;
* rollout throughput (rollouts/s, median over reps): bar >= 85% of the unconstrained rate; also
  completion tokens/s, since a constrained rollout is longer by construction (a row that would
  have ended with "the sum is N" cannot stop before it gave an answer);
* accuracy of the rollouts whose answer parsed in both runs (same prompt, same seed):
  bar: not lower with constraints.

    .venv/bin/python benchmarks/constrained.py [--seed 0] [--reps 5] [--backend auto|xgrammar|llguidance] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import Bar, report, src_path

sys.path.insert(0, src_path())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=32)
    ap.add_argument("--backend", default="auto", choices=["auto", "xgrammar", "llguidance"])
    ap.add_argument("--quick", action="store_true", help="2 reps (make bench-check)")
    args = ap.parse_args()
    if args.quick:
        args.reps = min(args.reps, 2)

    import torch
    from failure_aware import warm_model

    from rlvr.config import ModelConfig
    from rlvr.data import addition_eval, encode
    from rlvr.decoding import Constrainer
    from rlvr.models import load_model
    from rlvr.runtime import setup_torch
    from rlvr.sampling import generate
    from rlvr.types import Status
    from rlvr.verify.math import verify_math

    setup_torch(1, args.seed)
    with tempfile.TemporaryDirectory() as d:
        warm = warm_model(Path(d) / "warm", args.seed)
        model, tok = load_model(ModelConfig(name=str(warm)), args.seed)
    rows = addition_eval(args.prompts)
    prompts = [encode(tok, s.prompt) for s in rows]
    golds = [s.gold for s in rows for _ in range(args.group)]
    vocab = model.get_output_embeddings().weight.shape[0]
    variants = {
        "plain": None,
        # lazy: from the model's own <answer>; full: the whole (answer-only) output
        "answer": Constrainer(tok, vocab, mode="answer", answer="math", backend=args.backend),
        "full": Constrainer(tok, vocab, mode="full", answer="math", backend=args.backend),
    }

    def sample(c: Constrainer | None, rep: int):
        gen = torch.Generator().manual_seed(args.seed * 1000 + rep)
        t0 = time.perf_counter()
        b = generate(
            model,
            tok,
            prompts,
            group_size=args.group,
            max_new_tokens=args.max_new,
            temperature=1.0,
            generator=gen,
            constrain=c,
        )
        return b, time.perf_counter() - t0

    for c in variants.values():
        sample(c, 99)  # warm every path (first-call costs are not what we measure)
    results: dict[str, list] = {name: [] for name in variants}
    for rep in range(args.reps):  # alternate, so machine load hits every variant alike
        for name, c in variants.items():
            results[name].append(sample(c, rep))

    def judge(batch):
        return [verify_math(t, g, strict=True, timeout=5) for t, g in zip(batch.texts, golds)]

    n = len(golds)
    summary = {}
    verdicts = {}
    for name, runs in results.items():
        vs = [v for b, _ in runs for v in judge(b)]
        verdicts[name] = vs
        secs = statistics.median(s for _, s in runs)
        summary[name] = {
            "rollouts_per_s": n / secs,
            "tokens_per_s": statistics.median(int(b.lengths.sum()) / t for b, t in runs),
            "mean_length": sum(float(b.lengths.float().mean()) for b, _ in runs) / len(runs),
            "format_death": sum(v.status is Status.NO_ANSWER for v in vs) / len(vs),
            "truncated": sum(f == "length" for b, _ in runs for f in b.finish) / (n * len(runs)),
            "accuracy": sum(v.correct for v in vs) / len(vs),
        }
    print(f"\n{n} rollouts x {args.reps} reps ({args.prompts} prompts x {args.group}, {args.max_new} new tokens)")
    print(
        f"{'':<8}{'rollouts/s':>12}{'tokens/s':>10}{'length':>8}{'format death':>14}{'truncated':>11}{'accuracy':>10}"
    )
    for name, s in summary.items():
        print(
            f"{name:<8}{s['rollouts_per_s']:>12.0f}{s['tokens_per_s']:>10.0f}{s['mean_length']:>8.1f}"
            f"{s['format_death']:>14.2%}{s['truncated']:>11.2%}{s['accuracy']:>10.3f}"
        )
    bars = []
    for name in ("answer", "full"):
        both = [
            (a, b)
            for a, b in zip(verdicts["plain"], verdicts[name])
            if a.status is not Status.NO_ANSWER and b.status is not Status.NO_ANSWER
        ]
        acc_plain = sum(a.correct for a, _ in both) / max(len(both), 1)
        acc_con = sum(b.correct for _, b in both) / max(len(both), 1)
        ratio = summary[name]["rollouts_per_s"] / summary["plain"]["rollouts_per_s"]
        tok_ratio = summary[name]["tokens_per_s"] / summary["plain"]["tokens_per_s"]
        summary[name].update(
            throughput_ratio=ratio,
            tokens_ratio=tok_ratio,
            pairs=len(both),
            accuracy_plain_pairs=acc_plain,
            accuracy_constrained_pairs=acc_con,
        )
        stats = results[name][-1][0].decode_stats.metrics()
        print(
            f"\nconstrain: {name}: rollouts/s / plain {ratio:.2f}, tokens/s / plain {tok_ratio:.2f}; "
            f"accuracy where both parsed ({len(both)} pairs): plain {acc_plain:.3f}, constrained {acc_con:.3f}"
        )
        print("  masks: " + ", ".join(f"{k.split('/')[1]} {v:.3f}" for k, v in stats.items()))
        bars += [
            Bar(f"{name}: rollouts/s vs plain", ratio, ">=", 0.85),
            Bar(f"{name}: format deaths", summary[name]["format_death"], "<", 0.01, "%"),
            Bar(f"{name}: accuracy where both parsed minus plain's", acc_con - acc_plain, ">=", 0.0),
        ]
    name = "constrained" if args.backend in ("auto", "xgrammar") else f"constrained-{args.backend}"
    report(name, summary, bars, args, quick=args.quick)


if __name__ == "__main__":
    main()
