"""Scoring throughput: rlvr's rewards vs TRL's ``trl.rewards`` on the same rollouts, same run.

10,000 synthetic rollouts (1,250 prompts x 8 completions, TRL's conversational
form): correct, wrong, malformed (no answer, broken tags) and long ones, over golds
that are integers, decimals, fractions, radicals and expressions.

* rlvr: ``Total({accuracy, format, cosine, repetition})`` with the verifier in
  ``--jobs`` worker processes; every component and the verdict are kept.
* TRL: ``trl.rewards.accuracy_reward`` (math-verify) and ``think_format_reward``,
  called as GRPOTrainer calls them, in this process (they have no parallel mode).

Prints rows/s for each and the ratio, then the death causes that only rlvr reports.

Bar: rlvr's steady-state rows/s at least 3x TRL's (the figure before this bar was written: 4.2x-5.5x).

    .venv/bin/python benchmarks/score.py [--rows 10000] [--jobs 2] [--seed 0] [--quick]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import Bar, report, src_path

sys.path.insert(0, src_path())

GOLDS = [
    (lambda r: (str(n := r.randint(0, 5000)), str(n), str(n + r.randint(1, 9)))),
    (lambda r: (f"{(n := r.randint(1, 999))}.5", f"{n}.50", f"{n}.25")),
    (
        lambda r: (
            rf"\frac{{{(a := r.randint(1, 9))}}}{{{(b := r.randint(11, 19))}}}",
            rf"\dfrac{{{a}}}{{{b}}}",
            rf"\frac{{{a + 1}}}{{{b}}}",
        )
    ),
    (
        lambda r: (
            rf"{(a := r.randint(2, 9))}\sqrt{{{(b := r.choice([2, 3, 5, 7]))}}}",
            rf"{a}\sqrt{b}",
            rf"{a + 1}\sqrt{{{b}}}",
        )
    ),
    (lambda r: (rf"{(a := r.randint(2, 9))}\pi", rf"\pi \cdot {a}", rf"{a}")),
    (lambda r: (f"{(n := r.randint(10, 90))}\\%", f"{n}%", f"{n + 5}%")),
]

FILLER = (
    "We compute each part carefully, checking the arithmetic at every step. "
    "First, we add the terms. Next, we simplify. Finally, we check the result. "
)


def make_rows(n: int, seed: int) -> tuple[list[list[dict]], list[str]]:
    """``n`` completions (8 per prompt) and their golds."""
    r = random.Random(seed)
    completions, golds = [], []
    for _ in range(n // 8):
        gold, right, wrong = r.choice(GOLDS)(r)
        for _ in range(8):
            kind = r.random()
            think = FILLER * (r.randint(8, 25) if r.random() < 0.2 else r.randint(0, 2))  # 20% long
            if kind < 0.35:
                text = f"<think>{think}</think><answer>${right}$</answer>"
            elif kind < 0.55:
                text = f"<think>{think}</think><answer>{wrong}</answer>"
            elif kind < 0.7:
                text = f"{think} so the final answer is $\\boxed{{{right}}}$."
            elif kind < 0.8:
                text = f"<think>{think} the the the the the the"  # truncated: no answer
            elif kind < 0.9:
                text = f"<think>{think}</think><answer>\\frac{{</answer>"  # malformed LaTeX
            else:
                text = f"<think>{think}</think>I am not sure."
            completions.append([{"role": "assistant", "content": text}])
            golds.append(f"${gold}$")
    return completions, golds


def run_rlvr(completions, golds, jobs: int) -> tuple[float, list]:
    from rlvr.rewards import Total
    from rlvr.verify.math import warm_up

    total = Total({"accuracy": 1.0, "format": 0.1, "cosine": 1.0, "repetition": 1.0}, jobs=jobs)
    t = time.perf_counter()
    warm_up()  # one-time per process (ANTLR's DFA caches), as in a long-lived trainer
    warm = time.perf_counter() - t
    print(f"  (rlvr one-time parser warm-up: {warm:.1f} s, not in the steady-state time)")
    t = time.perf_counter()
    rows = total.breakdown(completions, solution=golds)
    return time.perf_counter() - t, warm, rows


def run_trl(completions, golds) -> tuple[float, list]:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    from trl.rewards import accuracy_reward, think_format_reward

    t = time.perf_counter()
    accuracy_reward(completions[:200], golds[:200])  # the same one-time warm-up for math-verify's parser
    warm = time.perf_counter() - t
    print(f"  (TRL warm-up on 200 rows: {warm:.1f} s, not in the steady-state time)")
    t = time.perf_counter()
    acc = accuracy_reward(completions, golds)
    fmt = think_format_reward(completions)
    return time.perf_counter() - t, warm, list(zip(acc, fmt))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show-disagreements", type=int, default=0, metavar="N", help="print N rows judged differently")
    # the whole run takes seconds, and on fewer rows the per-call costs hide the steady state (2,000
    # rows measured 1.75x where 10,000 measure 5.3x): quick mode keeps every row
    ap.add_argument("--quick", action="store_true", help="the same rows, results in results/quick (make bench-check)")
    args = ap.parse_args()
    completions, golds = make_rows(args.rows, args.seed)
    n = len(completions)
    print(f"{n} rollouts, {len(set(golds))} distinct golds, load {os.getloadavg()[0]:.1f}", flush=True)

    t_rlvr, w_rlvr, rows = run_rlvr(completions, golds, args.jobs)
    print(
        f"rlvr  accuracy+format+cosine+repetition, jobs={args.jobs}: {t_rlvr:6.1f} s  {n / t_rlvr:8.0f} rows/s",
        flush=True,
    )
    t_trl, w_trl, trl_rows = run_trl(completions, golds)
    print(f"TRL   accuracy_reward+think_format_reward:          {t_trl:6.1f} s  {n / t_trl:8.0f} rows/s", flush=True)
    print(
        f"ratio (rlvr rows/s / TRL rows/s): {t_trl / t_rlvr:.1f}x steady state; "
        f"{(t_trl + w_trl) / (t_rlvr + w_rlvr):.1f}x counting each side's one-time warm-up"
    )

    statuses = Counter(b.verdict.status.value for b in rows)
    agree = sum((b.components["accuracy"] == 1.0) == (a == 1.0) for b, (a, _) in zip(rows, trl_rows))
    print(f"\naccuracy agreement with TRL on the same rows: {agree / n:.1%}")
    print("death causes (rlvr only; TRL returns 0.0 for all of these alike):")
    for status in ("correct", "wrong", "no_answer", "bad_gold", "timeout", "error"):
        print(f"  {status:10s} {statuses.get(status, 0):6d}  {statuses.get(status, 0) / n:6.1%}")
    if args.show_disagreements:
        shown = 0
        for c, g, b, (a, _) in zip(completions, golds, rows, trl_rows):
            if (b.components["accuracy"] == 1.0) != (a == 1.0) and shown < args.show_disagreements:
                shown += 1
                print(
                    f"  gold {g!r}  rlvr {b.verdict.status.value} ({b.verdict.extracted!r})  TRL {a}  "
                    f"...{c[0]['content'][-60:]!r}"
                )
    zeros = sum(1 for a, _ in trl_rows if a == 0.0)
    print(f"  (TRL: {zeros} rows scored 0.0, with no cause)")
    figures = {
        "rows": n,
        "rlvr_rows_per_s": n / t_rlvr,
        "trl_rows_per_s": n / t_trl,
        "ratio": t_trl / t_rlvr,
        "ratio_with_warmup": (t_trl + w_trl) / (t_rlvr + w_rlvr),
        "agreement": agree / n,
        "statuses": dict(statuses),
    }
    report(
        "score",
        figures,
        [Bar("rlvr / TRL rows/s (steady state)", t_trl / t_rlvr, ">=", 3.0, "x")],
        args,
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
