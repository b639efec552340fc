"""The shared TRL baseline script, unchanged, with its trainer swapped for rlvr's FailureAwareGRPOTrainer.

Same model, task, rewards, settings and summary as ``../shared/bench/trainer/trl_grpo_baseline.py``;
the failure features are off (no quarantine, no resampling, no cold start, no dynamic sampling), so
what is measured is the cost of rlvr's layer on TRL: the verdicts, the decision on gathered data,
the run folder.

    python benchmarks/adapters/rlvr_on_trl.py --model M --out O --log-dir D [--steps 100 --seed 0]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT.parent / "shared" / "bench" / "trainer"
sys.path.insert(0, os.environ.get("RLVR_BENCH_SRC") or str(ROOT / "src"))
sys.path.insert(0, str(BENCH))

import trl_grpo_baseline as baseline

from rlvr.config import FailureConfig
from rlvr.integrations.trl import FailureAwareGRPOTrainer

OFF = FailureConfig(
    quarantine=False,
    resample_tries=0,
    cold_start=False,
    dynamic_sampling=0,
    exclude_truncated=False,
    max_staleness=10**6,
)


def failure_aware_off(**kwargs):  # what the baseline calls as GRPOTrainer(...)
    run_dir = Path(tempfile.mkdtemp(prefix="rlvr-on-trl-"))
    return FailureAwareGRPOTrainer(**kwargs, failure=OFF, run_dir=run_dir)


baseline.GRPOTrainer = failure_aware_off

if __name__ == "__main__":
    baseline.main()
