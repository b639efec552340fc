"""TRL's own GRPO test module run against ``trl.GRPOTrainer`` and rlvr's ``FailureAwareGRPOTrainer``.

The harness (``../shared/bench/trl-conformance/``: TRL's ``tests/test_grpo_trainer.py`` unedited, an
offline pytest plugin and local stand-ins for the hub's tiny models) runs each arm; this script runs
the arms, compares them test by test and fails when a test that passes with ``GRPOTrainer`` fails
with rlvr's class.

    .venv/bin/python benchmarks/conformance.py            # both arms (~18 min on 2 cores), results JSON
    .venv/bin/python benchmarks/conformance.py --check    # rlvr's arm only, against the TRL arm's passes
                                                          # recorded in benchmarks/results/conformance.json

The line it ends with: ``TRL conformance: rlvr passes P of T tests that pass on GRPOTrainer``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import RESULTS, ROOT, Bar, report

HARNESS = ROOT.parent / "shared" / "bench" / "trl-conformance"
WORK = Path(os.environ.get("TRLSUITE_WORK", "/tmp/trl-conformance"))


def run_arm(arm: str) -> dict[str, str]:
    """Run one arm of the harness; ``{test id: outcome}`` from its results file."""
    print(f"running arm {arm} (TRL's test module, offline) ...", flush=True)
    subprocess.run(
        [str(HARNESS / "run.sh"), arm],
        cwd=ROOT,
        check=True,
        env={**os.environ, "PYTHON": sys.executable, "TRLSUITE_WORK": str(WORK)},
    )
    return outcomes(arm)


def outcomes(arm: str) -> dict[str, str]:
    rows = [json.loads(x) for x in (WORK / "results" / arm / "results.jsonl").read_text().splitlines() if x.strip()]
    return {r["nodeid"].split("::", 1)[1]: r["outcome"] for r in rows if "nodeid" in r}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="rlvr's arm only, against the recorded TRL passes")
    ap.add_argument(
        "--reuse-trl",
        action="store_true",
        help="take TRL's arm from the last run in $TRLSUITE_WORK (it does not depend on rlvr's code)",
    )
    a = ap.parse_args()
    if not (HARNESS / "run.sh").exists():
        sys.exit(f"no harness at {HARNESS} (../shared is not there): nothing to run")
    if a.check:
        recorded = json.loads((RESULTS / "conformance.json").read_text())["figures"]
        trl_passed = set(recorded["trl_passed"])
    else:
        trl = outcomes("trl") if a.reuse_trl else run_arm("trl")
        trl_passed = {t for t, o in trl.items() if o == "passed"}
    rlvr = run_arm("rlvr")
    lost = sorted(t for t in trl_passed if rlvr.get(t) != "passed")
    kept = len(trl_passed) - len(lost)
    line = f"TRL conformance: rlvr passes {kept} of {len(trl_passed)} tests that pass on GRPOTrainer"
    if lost:
        print("passes on GRPOTrainer, not on FailureAwareGRPOTrainer:\n  " + "\n  ".join(lost))
    print(line)
    if not a.check:
        counts = {
            arm: {o: sum(v == o for v in res.values()) for o in ("passed", "failed", "error", "skipped")}
            for arm, res in (("trl", trl), ("rlvr", rlvr))
        }
        report(
            "conformance",
            {"trl_passed": sorted(trl_passed), "rlvr_lost": lost, "counts": counts, "line": line},
            [Bar("TRL's passing tests that fail on rlvr's class", len(lost), "==", 0)],
            a,
        )
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
