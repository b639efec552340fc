"""The example config composes with verl's own defaults; configs rlvr cannot run are refused at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from rlvr.errors import ConfigError
from rlvr.integrations.verl.settings import check_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "verl"


def example(*overrides: str):
    with initialize_config_dir(config_dir=str(EXAMPLES), version_base=None):
        return compose(config_name="gsm8k_smollm2_rlvr", overrides=list(overrides))


def test_the_example_composes_with_verls_ppo_trainer_defaults_and_passes_rlvrs_checks():
    cfg = example()
    settings = check_config(cfg)
    assert cfg.trainer.v1.trainer_mode == "rlvr" and cfg.actor_rollout_ref.rollout.n == 8  # verl's keys, ours set
    assert cfg.trainer.v1.sampler.max_off_policy_threshold is not None  # and verl's defaults underneath
    assert settings.failure.cold_start and settings.advantage_clip == 3.0


def test_rlvrs_trainer_refuses_a_config_it_cannot_run_before_any_worker_starts():
    from rlvr.integrations.verl.trainer import RlvrTrainer

    with pytest.raises(ConfigError, match=r"needs reward\.reward_manager\.name=rlvr"):
        RlvrTrainer(example("reward.reward_manager.name=naive"))
    with pytest.raises(ConfigError, match=r"needs algorithm\.adv_estimator=rlvr_grpo"):
        RlvrTrainer(example("algorithm.adv_estimator=grpo"))
    with pytest.raises(ConfigError, match=r"rlvr\.failure\.cold_start"):
        RlvrTrainer(example("rlvr.failure.cold_start=sometimes"))
