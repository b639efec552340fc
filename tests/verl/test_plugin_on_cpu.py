"""``import verl`` loads rlvr's plugin through verl's own ``verl.plugins`` entry-point discovery."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import verl
from verl.experimental.reward_loop.reward_manager.registry import REWARD_MANAGER
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY
from verl.trainer.ppo.v1 import trainer_base
print("rlvr" in REWARD_MANAGER, "rlvr_grpo" in ADV_ESTIMATOR_REGISTRY, "rlvr" in trainer_base.TRAINER_REGISTRY)
"""


def _probe(policy: str) -> str:
    env = {**os.environ, "VERL_USE_EXTERNAL_PLUGINS": policy}
    res = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.strip().splitlines()[-1]


def test_import_verl_registers_the_manager_the_estimator_and_the_trainer():
    assert _probe("auto") == "True True True"


def test_it_is_the_entry_point_that_does_it():
    assert _probe("none") == "False False False"  # verl's switch for plugin discovery, off
