"""verl's v1 trainer ``rlvr`` (``trainer.v1.trainer_mode: rlvr``): verl's sync trainer with rlvr's step.

What it adds to ``PPOTrainerSync``, each through a method verl's v1 trainer exposes:

* ``__init__``: the config is checked (:func:`.settings.check_config`) before any worker starts,
  and the ``rlvr_grpo`` clip set from ``rlvr.advantage_clip``;
* ``_build_replay_buffer``: :class:`.replay.RlvrReplayBuffer` (exclusion, quarantine, cold start,
  metrics, the run folder) in place of verl's sync buffer, with the same arguments;
* ``_init_dataloader``: prompts fetched one at a time (verl's exact-refill mode) so quarantined
  prompts can be skipped and evicted groups refilled exactly; the first training row is checked for
  the gold rlvr verifies against;
* ``_fetch_one_gen_batch``: quarantined prompts are passed over before they are generated, and the
  prompts of groups the replay buffer evicted to resample (:attr:`.replay.RlvrReplayBuffer.redraw`)
  come first, each under a fresh uid;
* ``_compute_advantage``: verl's, then the rows its ``algorithm.rollout_correction`` rejected (a
  ``response_mask`` it zeroed) are made cause ``off_policy`` by the replay buffer
  (:meth:`.replay.RlvrReplayBuffer.settle`), which logs the step. verl rejects them after sampling,
  so they are excluded and counted but not redrawn.
"""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict
from typing import Any

import numpy as np
from omegaconf import open_dict
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from rlvr.diagnostics.late_rejection import masked_rows
from rlvr.errors import DataError
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
            trainer_mode="sync",
            trainer_config=self.config.trainer.v1.get("sync", {}),
            max_off_policy_threshold=sampler.max_off_policy_threshold,
            max_off_policy_strategy=sampler.max_off_policy_strategy,
            sampler_kwargs=sampler.sampler_kwargs,
            refill_fn=self._add_prompts_to_generate,
            filter_groups_metric=metric,
            sync_refill_failed_groups=True,
            train_batch_size=self.config.data.train_batch_size,
            gen_batch_size=1,
            max_inflight_gen_batches=filter_groups.get("max_inflight_gen_batches", 1) if metric else 1,
            rlvr=self.rlvr,
            run_dir=run_dir,
            redraw_groups=True,
        )

    def _compute_advantage(self, batch: Any, metrics: dict[str, Any]) -> Any:
        rc = self.config.algorithm.get("rollout_correction", None)
        # verl corrects only with the sampler's log-probs and outside its bypass mode
        watched = rc is not None and not rc.get("bypass_mode", False)
        before = _masks(batch) if watched else None
        batch = super()._compute_advantage(batch, metrics=metrics)
        rejected: set[str] = set()
        tokens = 0
        if before is not None:
            after = _masks(batch)
            flags, tokens = masked_rows([before[k] for k in batch.keys], [after[k] for k in batch.keys])
            rejected = {k for k, r in zip(batch.keys, flags, strict=True) if r}
        self.replay_buffer.settle(rejected, tokens, metrics)
        return batch

    def _init_dataloader(self) -> None:
        with open_dict(self.config):  # one prompt per fetch: quarantined ones skipped, evicted groups refilled exactly
            self.config.data.gen_batch_size = 1
        super()._init_dataloader()
        if len(self.train_dataset):
            check_row(
                self.train_dataset[0],
                f"data.train_files {self.config.data.train_files}, row 0",
                needs_id=self.rlvr.failure.quarantine,
            )

    def _fetch_one_gen_batch(self) -> Any:
        rb = self.replay_buffer
        sent = self.__dict__.setdefault("_submitted", OrderedDict())  # uid -> the one-prompt batch submitted
        while rb.redraw:
            uid = rb.redraw.pop(0)
            if uid in sent:
                return self._remember(sent, _again(sent.pop(uid), rb, uid))
        for _ in range(max(len(self.train_dataset), 1)):
            batch = super()._fetch_one_gen_batch()
            if not rb.fa.skip(_prompt_id(batch)):
                return self._remember(sent, batch)

        raise DataError("every training prompt is quarantined; readmit some with rlvr quarantine RUN_DIR --readmit")

    def _remember(self, sent: OrderedDict[Any, Any], batch: Any) -> Any:
        """Keep the batch a uid was submitted with (a redraw submits it again); the oldest go first."""
        sent[_first(batch, "uid")] = batch
        while len(sent) > 4 * int(self.config.data.train_batch_size) + 16:
            sent.popitem(last=False)
        return batch


def _masks(batch: Any) -> dict[str, Any]:
    """Each row's ``response_mask`` as TransferQueue holds it now, by key."""
    import transfer_queue as tq

    got = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["response_mask"])
    return dict(zip(batch.keys, got["response_mask"].unbind(0), strict=True))


def _again(batch: Any, rb: RlvrReplayBuffer, uid: str) -> Any:
    """``batch`` (one prompt) under a fresh uid: a new group of the same prompt."""

    from verl.utils import tensordict_utils as tu

    again = batch.clone()
    new = str(uuid.uuid4())
    again["uid"] = tu.get_tensordict({"uid": np.array([new], dtype=object)})["uid"]
    rb.redrawn(uid, new)
    return again


def _first(batch: Any, key: str) -> Any:
    """The value of ``key`` for a one-prompt batch from verl's dataloader (None when it has none)."""
    values = batch.get(key, None) if hasattr(batch, "get") else None
    value = values[0] if values is not None and len(values) else None
    return getattr(value, "data", value)  # tensordict's NonTensorData


def _prompt_id(batch: Any) -> str:
    """The prompt id of a one-prompt batch from verl's dataloader, as the replay buffer counts it
    (``extra_info.index``)."""

    return prompt_id_of(_first(batch, "extra_info"))
