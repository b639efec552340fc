"""rlvr's maths verifier vs math-verify on the shared peer suite, in the same run.

Runs ``../shared/bench/verifier/run.py`` (one worker process per job, hard per-case
timeout) once for math-verify 0.9.0 with its defaults (the anchor adapter shipped
with the harness) and once for rlvr with its defaults, prints both tables, then a
side-by-side summary with the throughput ratio.

    .venv/bin/python benchmarks/verifier.py [--jobs 2] [--timeout 5] [--cases FILE ...]
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
HARNESS = ROOT.parent / "shared" / "bench" / "verifier"
ADAPTER = ROOT / "benchmarks" / "adapters" / "rlvr_adapter.py"
PEERS = {
    "rlvr": f"{ADAPTER}:verify",
    "math-verify": "adapters.math_verify_adapter:verify",
}


def run(name: str, spec: str, args: argparse.Namespace) -> dict:
    out = Path(tempfile.mkdtemp()) / f"{name}.json"
    cmd = [sys.executable, str(HARNESS / "run.py"), "--verifier", spec, "--jobs", str(args.jobs),
           "--timeout", str(args.timeout), "--json", str(out)]
    for c in args.cases or []:
        cmd += ["--cases", c]
    print(f"\n=== {name} ===", flush=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    subprocess.run(cmd, cwd=HARNESS, check=True, env=env)
    return json.loads(out.read_text())


def headline(report: dict) -> dict:
    """The few numbers we compare, from run.py's --json report."""
    rows = report["results"]
    default = [r for r in rows if not r["convention"]]
    overall = report["overall"]
    return {
        "accuracy": overall["accuracy"],
        "default_accuracy": sum(r["correct"] for r in default) / len(default) if default else None,
        "timeouts": overall["timeouts"],
        "cases_per_s": overall["throughput_cases_per_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--cases", action="append", help="extra case files (default: peers.jsonl)")
    args = ap.parse_args()
    if not HARNESS.exists():
        sys.exit(f"harness not found at {HARNESS}: this benchmark needs ../shared beside the checkout")
    reports = {name: run(name, spec, args) for name, spec in PEERS.items()}
    rows = {name: headline(r) for name, r in reports.items()}
    print("\n=== side by side (same run, same machine) ===")
    print(f"{'verifier':<12} {'all':>8} {'default':>8} {'timeouts':>9} {'cases/s':>9}")
    for name, h in rows.items():
        pct = lambda x: f"{100 * x:.1f}%" if isinstance(x, (int, float)) else "?"
        cps = h["cases_per_s"]
        print(f"{name:<12} {pct(h['accuracy']):>8} {pct(h['default_accuracy']):>8} {h['timeouts']!s:>9} "
              f"{cps if cps is None else round(cps, 1)!s:>9}")
    a, b = rows["rlvr"]["cases_per_s"], rows["math-verify"]["cases_per_s"]
    if a and b:
        print(f"\nthroughput ratio rlvr / math-verify: {a / b:.2f}x")


if __name__ == "__main__":
    main()
