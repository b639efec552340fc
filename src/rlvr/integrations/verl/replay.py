"""rlvr's replay buffer for verl's v1 trainer: the failure-aware step where verl samples its batch.

verl's v1 trainer takes each training batch from a ``ReplayBuffer`` (over TransferQueue) before any
log-prob, reference or update work. :class:`RlvrReplayBuffer` is that buffer with rlvr's step added:

* groups of quarantined prompts are evicted as they finish and refilled (verl's own refill path), so
  they never reach training;
* a finished group with rows to resample (``invalid``; ``truncated`` with ``exclude_truncated``) is
  evicted and its prompt generated again, up to ``failure.resample_tries`` times (with rlvr's
  trainer; as a custom sampler of verl's own trainer such rows are only excluded): verl's agent loop
  makes a prompt's rows together, so the group is redrawn whole (each row of the new group is drawn
  as a resampled row would be, from the same prompt; the cost is the group's other rows). The
  prompt is queued in :attr:`RlvrReplayBuffer.redraw`, which rlvr's trainer fetches before fresh
  prompts; the originals are logged as ``replaced`` and quarantine counts the first attempt's causes;
* on the sampled batch, :class:`rlvr.diagnostics.step.FailureAware` decides from the causes the
  ``rlvr`` reward manager wrote (cold start, admission, quarantine counters, alarms, metrics);
* excluded rows get an all-zero ``response_mask`` written back to TransferQueue, so they leave the
  group baseline (``rlvr_grpo``) and every loss token and normaliser of verl's update;
* rlvr's metrics (``causes/*``, ``verify/*``, ``failure/*``, ``reward/<name>/*``, ``alarms/*``) are
  returned as the sample's metrics, which verl merges into its step metrics and loggers;
* rows verl's ``rollout_correction`` rejects later in the step (after the old log-probs) become
  cause ``off_policy`` (:meth:`RlvrReplayBuffer.settle`, called by rlvr's trainer after the
  advantage); the step is logged then;
* the run folder (``metrics.jsonl``, ``rollouts.jsonl``, ``quarantine.jsonl``) is written from the
  driver, so ``rlvr causes`` / ``rlvr report`` / ``rlvr quarantine`` read a verl run.

Turn it on with rlvr's trainer (``trainer.v1.trainer_mode: rlvr``, which also checks the config), or
with verl's sync trainer and ``trainer.v1.sampler.custom_sampler.{path: pkg://rlvr.integrations.verl.replay,
name: RlvrReplayBuffer}`` and the ``rlvr`` section passed as ``trainer.v1.sampler.sampler_kwargs.rlvr``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import transfer_queue as tq
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import FailureAware, RolloutView, rollout_record
from rlvr.errors import ConfigError
from rlvr.integrations.verl.batch import Row, decide_rows, view_of
from rlvr.integrations.verl.settings import VerlSettings, prompt_key, settings_of
from rlvr.runs import MetricsLog, RolloutLog

_FIELDS = ["extra_fields", "extra_info", "response_mask", "data_source", "reward_model"]


def prompt_id_of(extra_info: Any) -> str:
    """A prompt's stable id: ``extra_info.prompt_id`` / ``extra_info.index`` (verl's preprocessing
    scripts write the row index there); ``""`` for a row without one (the trainer refuses such
    rows when quarantine is on, see :func:`rlvr.integrations.verl.settings.check_row`)."""
    return prompt_key(extra_info) or ""


def _data(value: Any) -> Any:
    return getattr(value, "data", value)  # tensordict's NonTensorData


class RlvrReplayBuffer(ReplayBuffer):
    """verl's sync ``ReplayBuffer`` + rlvr's failure-aware step (see the module docstring).

    Args:
        rlvr: the validated ``rlvr`` section (rlvr's trainer passes it); otherwise it is read from
            ``sampler_kwargs["rlvr"]``.
        run_dir: the run folder (default ``rlvr.run_dir``).
        redraw_groups: generate groups with rows to resample again (the refill then has to submit
            :attr:`redraw` first: rlvr's trainer does, and turns this on). Off, such rows are only
            excluded: verl's own trainer would refill with a fresh prompt instead.
        *args, **kwargs: verl's ``ReplayBuffer`` arguments.
    """

    def __init__(
        self,
        *args: Any,
        rlvr: VerlSettings | None = None,
        run_dir: str | Path | None = None,
        redraw_groups: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.redraw_groups = redraw_groups
        self.rlvr = rlvr or settings_of({"rlvr": (self.sampler_kwargs or {}).get("rlvr")})
        out = run_dir or self.rlvr.run_dir
        self.run_dir = Path(out) if out else None
        self.fa = FailureAware(
            self.rlvr.failure,
            group_size=1,
            scale_rewards=self.rlvr.scale_rewards,
            advantage_clip=self.rlvr.advantage_clip,
            run_dir=self.run_dir,
        )
        self._prompt_of_uid: dict[str, str] = {}
        self._logs: tuple[Any, Any] | None = None
        #: uids of groups to generate again: the trainer fetches their prompts first
        self.redraw: list[str] = []
        self._attempt: dict[str, int] = {}  # uid -> how many times its prompt was redrawn this step
        self._first: dict[str, list[Cause]] = {}  # uid -> the causes of its prompt's first attempt
        self._checked: set[str] = set()  # finished uids already looked at for rows to resample
        # the redrawn groups' rows: (uid, view, cause, attempt, gold, data source)
        self._replaced: list[tuple[str, RolloutView, Cause, int, Any, Any]] = []
        self._pending: tuple[int, Any, Any, list[Any]] | None = None  # decided, not yet logged (settle)

    def redrawn(self, old_uid: str, new_uid: str) -> None:
        """The trainer submitted ``old_uid``'s prompt again as ``new_uid``: the attempt count and the
        first attempt's causes follow it."""
        self._attempt[new_uid] = self._attempt.pop(old_uid, 0)
        if old_uid in self._first:
            self._first[new_uid] = self._first.pop(old_uid)

    # ------------------------------------------------------------------ quarantine at the source
    def _quarantined_uids(self, partition_id: str) -> set[str]:
        if self.fa.quarantine is None or not self.fa.quarantine.entries:
            return set()
        finished = self.finished_keys[partition_id] | self.failure_keys[partition_id]
        unknown = [u for u in finished if u not in self._prompt_of_uid]
        if unknown:
            keys = [k for k in self.partitions[partition_id] if k.split("_")[0] in set(unknown) and k.endswith("_0_0")]
            if keys:
                data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["extra_info"])
                for key, info in zip(keys, data["extra_info"], strict=True):
                    self._prompt_of_uid[key.split("_")[0]] = prompt_id_of(_data(info))
        return {u for u in finished if self.fa.skip(self._prompt_of_uid.get(u, ""))}

    def _terminal_eviction_reasons(self, global_steps: int, partition_id: str) -> tuple[Any, ...]:
        stale, dapo, failed, counts = super()._terminal_eviction_reasons(global_steps, partition_id)
        if partition_id == "val":
            return stale, dapo, failed, counts
        # quarantined prompts leave as failed groups do: evicted, and refilled with fresh prompts;
        # groups with rows to resample too, refilled with their own prompt (see `redraw`)
        quarantined = self._quarantined_uids(partition_id)
        return stale, dapo, failed | quarantined | self._redraw_uids(global_steps, partition_id, quarantined), counts

    # ------------------------------------------------------------------ resampling, a group at a time
    def _redraw_uids(self, global_steps: int, partition_id: str, leaving: set[str]) -> set[str]:
        """Finished groups (not ``leaving`` already) with rows to resample whose prompt has tries left."""
        tries = self.rlvr.failure.resample_tries if self.redraw_groups else 0
        new = self.finished_keys[partition_id] - self._checked - leaving
        if not tries or not new:
            return set()
        self._checked |= new
        tags = self.partitions[partition_id]
        keys = [k for k in tags if k.split("_")[0] in new]
        if not keys:
            return set()
        data = tq.kv_batch_get(
            keys=keys,
            partition_id=partition_id,
            select_fields=["extra_fields", "extra_info", "reward_model", "data_source"],
        )
        groups: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(key.split("_")[0], []).append(i)
        out = set()
        for uid, ix in groups.items():
            rows = [
                self._row(keys[i], data["extra_fields"][i], data["extra_info"][i], tags[keys[i]], global_steps)
                for i in ix
            ]
            views = [view_of(r) for r in rows]
            causes = self.fa.causes(views, global_steps)
            self._first.setdefault(uid, causes)
            attempt = self._attempt.get(uid, 0)
            if not self.fa.to_resample(causes) or attempt >= tries:
                continue
            out.add(uid)
            self.redraw.append(uid)
            self._attempt[uid] = attempt + 1
            self._replaced += [
                (
                    uid,
                    v,
                    c,
                    attempt + 1,
                    (_data(data["reward_model"][i]) or {}).get("ground_truth"),
                    _data(data["data_source"][i]),
                )
                for v, c, i in zip(views, causes, ix, strict=True)
            ]
        return out

    def _row(self, key: str, extra: Any, info: Any, tag: dict[str, Any], global_steps: int) -> Row:
        extra, info = _data(extra) or {}, _data(info)
        uid = key.split("_")[0]
        pid = prompt_id_of(info)
        if not pid and self.fa.quarantine is not None:
            raise ConfigError(
                f"trajectory {key}: its extra_info has no index (or prompt_id): rlvr's quarantine "
                "counts deaths per prompt by it; write the row index into extra_info.index when "
                "making the parquet, or set rlvr.failure.quarantine=false"
            )
        self._prompt_of_uid[uid] = pid
        return Row(
            key,
            uid,
            pid,
            dict(extra.get("reward_extra_info") or {}),
            int(tag.get("min_global_steps") or global_steps - 1),
        )

    # ------------------------------------------------------------------ the failure-aware step
    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[Any, dict[str, Any]]:
        batch, metrics = super().sample(global_steps, partition_id, batch_size)
        if partition_id == "val" or not batch.keys:
            return batch, metrics
        data = tq.kv_batch_get(keys=batch.keys, partition_id=partition_id, select_fields=_FIELDS)
        rows = [
            self._row(key, data["extra_fields"][i], data["extra_info"][i], batch.tags[i], global_steps)
            for i, key in enumerate(batch.keys)
        ]
        uids = {r.uid for r in rows}
        first: dict[str, Sequence[Cause]] = {u: c for u, c in self._first.items() if u in uids and self._attempt.get(u)}
        d = decide_rows(self.fa, rows, global_steps, first_causes=first)
        replaced, self._replaced = self._replaced, []
        # this step's bookkeeping of these groups is done; evicted ones' (their uids gone) too
        known = (
            set().union(
                *(
                    k[partition_id]
                    for k in (self.pending_keys, self.running_keys, self.finished_keys, self.failure_keys)
                )
            )
            - uids
        )
        queued = set(self.redraw)
        self._attempt = {u: a for u, a in self._attempt.items() if u in known or u in queued}
        self._first = {u: c for u, c in self._first.items() if u in known or u in queued}
        self._checked &= known
        if d is None:
            return batch, metrics
        out = [i for i, ok in enumerate(d.admit.tolist()) if not ok]
        if out:  # out of the baseline (rlvr_grpo) and of every loss token and normaliser
            from verl.utils.tensordict_utils import list_of_dict_to_tensordict

            masks = list(data["response_mask"].unbind(0))
            zeroed = list_of_dict_to_tensordict([{"response_mask": torch.zeros_like(masks[i])} for i in out])
            tq.kv_batch_put(keys=[batch.keys[i] for i in out], partition_id=partition_id, fields=zeroed)
        metrics.update({k: v for k, v in d.metrics.items() if isinstance(v, int | float)})  # verl averages them
        metrics["failure/excluded_rows"] = float(len(out))
        # rows that were to be resampled, and the groups generated again for them
        metrics["failure/resampled"] = float(len(self.fa.to_resample([c for _, _, c, *_ in replaced])))
        metrics["failure/redrawn_groups"] = float(len({(u, a) for u, _, _, a, *_ in replaced}))
        self.flush()  # a step that never reached its advantage (none should): logged as decided
        # logged once verl's rollout correction has run (settle): rows it rejects become off_policy
        self._pending = (global_steps, d, data, replaced)
        return batch, metrics

    def settle(self, rejected_keys: set[str], tokens_masked: int, metrics: dict[str, Any]) -> None:
        """After verl's advantage step: the rows its rollout correction rejected (a mask it zeroed,
        ``keys``) get the cause ``off_policy``, out of the step's admitted rows, in the metrics verl
        logs and in the run folder; ``tokens_masked``: tokens it masked in rows it kept (counted,
        no cause). Then the step is logged."""
        if self._pending is None:
            return
        step, d, data, replaced = self._pending
        self._pending = None
        d = d.reject([r.key in rejected_keys for r in d.rows])
        if rejected_keys:
            metrics.update({k: v for k, v in d.metrics.items() if isinstance(v, int | float)})
            metrics["failure/excluded_rows"] = float((~d.admit).sum())
        metrics["offpolicy/rejected"] = len(rejected_keys) / max(len(d.rows), 1)
        metrics["offpolicy/tokens_masked"] = float(tokens_masked)
        self._log(step, d.rows, data, d, replaced)

    def flush(self) -> None:
        """Log the decided step that waits for :meth:`settle` (``close`` does too)."""
        if self._pending is not None:
            step, d, data, replaced = self._pending
            self._pending = None
            self._log(step, d.rows, data, d, replaced)

    def _log(self, step: int, rows: list[Row], data: Any, d: Any, replaced: list[Any]) -> None:
        if self.run_dir is None:
            return

        if self._logs is None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._logs = (
                MetricsLog(self.run_dir, step - 1 if step > 1 else None),
                RolloutLog(self.run_dir, step - 1 if step > 1 else None) if self.rlvr.log_rollouts else None,
            )
        metrics_log, rollout_log = self._logs
        metrics_log.log(step, {k: v for k, v in d.metrics.items() if not isinstance(v, dict)})
        if rollout_log is not None:
            golds = [(_data(rm) or {}).get("ground_truth") for rm in data["reward_model"]]
            sources = list(data["data_source"])
            records = d.records(golds, [_data(s) for s in sources])
            records += [
                rollout_record(v, c, gold=gold, task=source, replaced=True, attempt=attempt)
                for _, v, c, attempt, gold, source in replaced
            ]
            rollout_log.log(step, records)

    def close(self) -> None:
        self.flush()
        if self._logs is not None:
            for log in self._logs:
                if log is not None:
                    log.close()
            self._logs = None
