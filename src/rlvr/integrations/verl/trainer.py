"""verl's v1 trainer ``rlvr`` (``trainer.v1.trainer_mode: rlvr``): verl's sync trainer with rlvr's step.

What it adds to ``PPOTrainerSync``, each through a method verl's v1 trainer exposes:

* ``__init__``: the config is checked (:func:`.settings.check_config`) before any worker starts,
  and the ``rlvr_grpo`` clip set from ``rlvr.advantage_clip``;
* ``_build_replay_buffer``: :class:`.replay.RlvrReplayBuffer` (exclusion, quarantine, cold start,
  metrics, the run folder) in place of verl's sync buffer, with the same arguments;
* ``_init_dataloader``: prompts fetched one at a time (verl's exact-refill mode) so quarantined
  prompts can be skipped and evicted groups refilled exactly; the first training row is checked for
  the gold rlvr verifies against;
* ``_fetch_one_gen_batch``: quarantined prompts are passed over before they are generated.
"""

from __future__ import annotations

import logging
from typing import Any

from omegaconf import open_dict
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from rlvr.integrations.verl import advantage
from rlvr.integrations.verl.replay import RlvrReplayBuffer, prompt_id_of
from rlvr.integrations.verl.settings import check_config, check_row

logger = logging.getLogger(__name__)


@register_trainer("rlvr")
class RlvrTrainer(PPOTrainerSync):
    """verl's synchronous PPO trainer with rlvr's failure-aware step (see the module docstring)."""

    def __init__(self, config: Any) -> None:
        self.rlvr = check_config(config)
        advantage.configure(clip=self.rlvr.advantage_clip)
        super().__init__(config)
        self.trainer_mode = "sync"  # verl's sync paths from here on (prompt submission, checkpoints)

    def _build_replay_buffer(self) -> RlvrReplayBuffer:
        sampler = self.config.trainer.v1.sampler
        filter_groups = self.config.algorithm.get("filter_groups", None)
        metric = self._resolve_filter_groups_metric()
        run_dir = self.rlvr.run_dir or self.config.trainer.get("default_local_dir")
        return RlvrReplayBuffer(
            trainer_mode="sync", trainer_config=self.config.trainer.v1.get("sync", {}),
            max_off_policy_threshold=sampler.max_off_policy_threshold,
            max_off_policy_strategy=sampler.max_off_policy_strategy, sampler_kwargs=sampler.sampler_kwargs,
            refill_fn=self._add_prompts_to_generate, filter_groups_metric=metric,
            sync_refill_failed_groups=True, train_batch_size=self.config.data.train_batch_size, gen_batch_size=1,
            max_inflight_gen_batches=filter_groups.get("max_inflight_gen_batches", 1) if metric else 1,
            rlvr=self.rlvr, run_dir=run_dir)

    def _init_dataloader(self) -> None:
        with open_dict(self.config):  # one prompt per fetch: quarantined ones skipped, evicted groups refilled exactly
            self.config.data.gen_batch_size = 1
        super()._init_dataloader()
        if len(self.train_dataset):
            check_row(self.train_dataset[0], f"data.train_files {self.config.data.train_files}, row 0",
                      needs_id=self.rlvr.failure.quarantine)

    def _fetch_one_gen_batch(self) -> Any:
        fa = self.replay_buffer.fa
        for _ in range(max(len(self.train_dataset), 1)):
            batch = super()._fetch_one_gen_batch()
            if not fa.skip(_prompt_id(batch)):
                return batch
        from rlvr.errors import DataError

        raise DataError("every training prompt is quarantined; readmit some with rlvr quarantine RUN_DIR --readmit")


def _prompt_id(batch: Any) -> str:
    """The prompt id of a one-prompt batch from verl's dataloader, as the replay buffer counts it
    (``extra_info.index``)."""

    def first(key: str) -> Any:
        values = batch.get(key, None) if hasattr(batch, "get") else None
        value = values[0] if values is not None and len(values) else None
        return getattr(value, "data", value)  # tensordict's NonTensorData

    return prompt_id_of(first("extra_info"))
