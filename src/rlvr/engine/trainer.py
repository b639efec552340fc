"""The GRPO loop: the draw phase draws a step, the learner learns from it; evaluated, logged, saved.

The draw phase (sampling, scoring, redraws) is :mod:`.draws`; the learner (the off-policy
correction, the failure step's decision, the update through the training forward) is
:mod:`.learner`; the maths lives in pure functions (:mod:`rlvr.algo`), the failure step in
:mod:`rlvr.diagnostics`. This module runs the steps, hands the sampler its weights (``off_policy.lag``
updates back, or the learner's own), evaluates, logs and checkpoints. Old log-probs are the sampling
log-probs recorded during rollout, so no forward pass is spent recomputing them.
"""

from __future__ import annotations

import copy
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rlvr.config import TrainConfig, dump_config
from rlvr.data.tasks import Sample
from rlvr.diagnostics.redraws import Redraws
from rlvr.engine.draws import Drawn, Draws, failure_step
from rlvr.engine.learner import Learned, Learner
from rlvr.engine.records import engine_metrics, eval_metrics, rollout_lines
from rlvr.episodes.env import shutdown
from rlvr.errors import ConfigError
from rlvr.models.device import lean_paths
from rlvr.rewards import Total
from rlvr.runs import MetricsLog, RolloutLog, checkpoint
from rlvr.runs.checkpoint import replace_folder, write_atomic
from rlvr.sampling import RolloutBatch, greedy_eval
from rlvr.sampling.rows import Replaced, ScoredRows
from rlvr.setup import build

StepCallback = Callable[[int, dict[str, Any]], None]
__all__ = ["GRPOTrainer", "StepCallback"]


class GRPOTrainer:
    """Train ``model`` with GRPO as ``cfg`` says.

    Args:
        cfg: the run configuration.
        model, tokenizer: override the model the config names.
        train_rows: training rows (None: the config's task stream or file).
        eval_rows: held-out rows for greedy accuracy.
        rewards: a ready :class:`Total` (default: built from ``cfg.rewards``).
    """

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        model: Any = None,
        tokenizer: Any = None,
        train_rows: list[Sample] | None = None,
        eval_rows: list[Sample] | None = None,
        rewards: Total | None = None,
    ) -> None:
        self.cfg = cfg
        run = build(
            cfg, model=model, tokenizer=tokenizer, train_rows=train_rows, eval_rows=eval_rows, rewards=rewards
        )  # device and precision refused here, before any model loads
        self.device, self.model, self.tok, model = run.device, run.model, run.tokenizer, run.model
        self.fast = lean_paths(cfg.model.fast_decode, self.device)  # rlvr's lean paths: on CPU by default
        self.eval_rows = run.eval_rows
        self.rewards, self.constrainer, self.env_cls = run.rewards, run.constrainer, run.env_cls
        self.step = 0
        self.run_dir = Path(cfg.run.out_dir)
        self._rollout_log: RolloutLog | None = None
        # what decides each rollout's fate (causes, admission, advantages, quarantine): engine-neutral
        self.fa = failure_step(cfg, run.tags, self.run_dir)
        # off_policy.lag: a sampler that holds the policy `lag` updates back (the weights of the last
        # lag + 1 versions are kept), as an asynchronous engine's buffer would hand rollouts over
        self._versions = deque[tuple[int, dict[str, torch.Tensor]]]()
        self.draws = Draws(cfg, run, self.fa, policy=copy.deepcopy(model) if cfg.off_policy.lag else model)
        if cfg.off_policy.lag:
            self._keep_version()
        self.data, self.ahead, self.rollout_dtype = self.draws.data, self.draws.ahead, self.draws.dtype
        self.learner = Learner(cfg, model, self.device, self.fast, self.fa, self.max_completion_tokens())
        self.quarantined_now: list[str] = []  # prompts the last step quarantined

    # ------------------------------------------------------------------ pieces

    def _keep_version(self) -> None:
        """Remember this version's weights for the lagged sampler (the last ``lag + 1`` are kept)."""
        # the weights that train (LoRA: the adapters); the frozen ones are the sampler's copy already
        trained = {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}
        self._versions.append((self.step, trained))
        while len(self._versions) > self.cfg.off_policy.lag + 1:
            self._versions.popleft()

    def _ready_to_draw(self) -> None:
        """Hand the draw phase this step and its sampling weights (``off_policy.lag`` updates back)."""
        self.draws.step = self.step
        if self.draws.policy is self.model:
            self.draws.version = self.step
            return
        version, weights = self._versions[0]
        with torch.no_grad():
            for n, p in self.draws.policy.named_parameters():
                if n in weights:
                    p.copy_(weights[n])
        self.draws.version = version

    def rollout(self, samples: list[Sample], group_size: int | None = None) -> RolloutBatch:
        """``group_size`` (default G) completions per prompt from the policy as it samples now."""
        self._ready_to_draw()
        return self.draws.rollout(samples, group_size)

    def max_completion_tokens(self) -> int:
        """The configured completion budget (``env.max_tokens`` for episodes): Dr. GRPO's constant."""
        return self.draws.episode_tokens() if self.env_cls is not None else self.cfg.rollout.max_new_tokens

    # ------------------------------------------------------------------ the loop
    def evaluate(self) -> dict[str, Any]:
        """Greedy held-out accuracy; episodes run in a fault-free environment (what the policy can do,
        not what the faults let through)."""
        episodes = self.env_cls is not None
        return greedy_eval(
            self.model,
            self.tok,
            self.eval_rows,
            max_new_tokens=self.max_completion_tokens(),
            fast=self.fast,
            constrain=self.constrainer if self.cfg.decoding.in_eval else None,
            turns_for=(lambda rows: self.draws.turns(rows, 1, "eval", fault_free=True)) if episodes else None,
        )

    def train_step(self) -> dict[str, Any]:
        """One GRPO step: the draw phase draws, the learner learns (the off-policy correction, the
        failure step's decision, the update); returns its metrics."""
        t0 = time.perf_counter()
        self._ready_to_draw()
        drawn = self.draws.draw()  # rlvr's asynchronous engine runs this in its sampler process
        t_gen = time.perf_counter()
        return self.stepped(drawn, self.learner.learn(drawn, self.step + 1, self._redraw), t0, t_gen)

    def _redraw(self, rows: ScoredRows, redraws: Redraws) -> tuple[ScoredRows, list[Replaced]]:
        """The rows the off-policy correction rejected, redrawn with the weights that sample now."""
        self._ready_to_draw()
        return self.draws.redraw(rows, redraws)

    def stepped(self, drawn: Drawn, learned: Learned, t0: float, t_gen: float) -> dict[str, Any]:
        """A step learned: its rollouts logged, the step counted (and its weights kept for a lagged
        sampler); returns the step's metrics."""
        rows, d, step = learned.rows, learned.decision, self.step + 1
        if self._rollout_log is not None:
            self._rollout_log.log(step, rollout_lines(rows, d, learned.replaced))
        self.step = step
        if self._versions:
            self._keep_version()  # the weights of version `step`, for the lagged sampler
        times = (t0, t_gen, learned.t_decided, time.perf_counter())
        bf16_rollouts = self.rollout_dtype is not None
        m = {**d.metrics, **drawn.judge, **engine_metrics(rows.batch, learned.metrics, times, bf16_rollouts)}
        m["failure/resampled"] = float(len(learned.replaced))
        m["failure/dynamic_rounds"] = float(drawn.extra_rounds)
        m["failure/buffer_used"], m["failure/stale_dropped"] = map(float, drawn.buffer_stats)
        self.quarantined_now = d.quarantined
        return m

    def state(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.learner.opt.state_dict(),
            "scheduler": self.learner.sched.state_dict(),
            "step": self.step,
            "position": self.data.position,
            "config": dump_config(self.cfg),
            "failure": self.fa.state_dict(),
            "buffer": self.ahead.items,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.learner.opt.load_state_dict(state["optimizer"])
        self.learner.sched.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        self.data.skip_to(int(state["position"]))
        failure = state.get("failure") or {
            "cold_start": state.get("cold_start"),  # checkpoints before the step
            "quarantine": state.get("quarantine"),
        }  # component kept them apart
        self.fa.load_state_dict(failure, self.run_dir, self.step)  # the quarantined set from its file
        self.ahead.items = [self._buffered(it) for it in state.get("buffer") or []]
        if self._versions:  # the lagged sampler's window restarts at the restored version
            self._versions.clear()
            self._keep_version()

    def _buffered(self, item: Any) -> tuple[int, ScoredRows]:
        """A draw-ahead group from a checkpoint: ``(version, rows)``; an older rlvr's
        ``(sample, batch, breakdowns, totals)`` group read into rows."""
        version, group = (
            item if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int) else (None, item)
        )
        if not isinstance(group, ScoredRows):
            sample, batch, breakdowns = group[0], group[1], group[2]
            group = ScoredRows.of(
                [sample] * batch.group_size, batch, breakdowns, self.fa, self.step + 1, self.draws.pad_id
            )
        return (min(group.batch.versions) if version is None else version), group

    def train(
        self, *, resume: bool = False, on_step: StepCallback | None = None, on_eval: StepCallback | None = None
    ) -> dict[str, Any]:
        """Run to ``cfg.run.steps`` (continuing the latest checkpoint when ``resume``).

        Returns the held-out accuracy before (when starting fresh) and after.
        """
        cfg = self.cfg
        ckpt = checkpoint.latest(self.run_dir) if resume else None
        if resume and ckpt is None:
            raise ConfigError(f"--resume: {self.run_dir} has no checkpoint to continue")
        if ckpt is not None:  # read before anything is written: a checkpoint it cannot continue changes nothing
            state = checkpoint.load(ckpt, map_location=self.device)
            try:
                self.restore(state)
            except (KeyError, RuntimeError, ValueError, TypeError, IndexError) as e:
                why = f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
                raise ConfigError(
                    f"--resume: {ckpt} does not fit this run (another version of rlvr, or another config?): {why}"
                ) from None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.run_dir / "config.yaml", dump_config(cfg))  # a resumed run's, never half-written
        if ckpt is None and (self.run_dir / "quarantine.jsonl").exists():  # a fresh run starts with nobody quarantined
            (self.run_dir / "quarantine.jsonl").unlink()
        resume_step = self.step if ckpt is not None else None
        log = MetricsLog(self.run_dir, resume_step, cfg.run.tensorboard, cfg.run.wandb, cfg.model_dump(mode="json"))
        self._rollout_log = RolloutLog(self.run_dir, resume_step) if cfg.run.log_rollouts else None
        result: dict[str, Any] = {"resumed_from": self.step if ckpt is not None else None}
        last_eval: tuple[int, dict[str, Any]] | None = None  # (step, result) of the latest evaluation
        if ckpt is None and self.eval_rows:
            result["before"] = ev = self.evaluate()
            last_eval = (0, ev)
            log.log(0, eval_metrics(ev))
            if on_eval:
                on_eval(0, ev)
        t_start = time.perf_counter()
        try:
            while self.step < cfg.run.steps:
                metrics = self.train_step()
                if cfg.run.eval_every and self.step % cfg.run.eval_every == 0 and self.eval_rows:
                    ev = self.evaluate()
                    last_eval = (self.step, ev)
                    metrics.update(eval_metrics(ev))
                    if on_eval:
                        on_eval(self.step, ev)
                log.log(self.step, metrics)
                if on_step:
                    on_step(self.step, metrics)
                minutes = cfg.run.max_minutes
                out_of_time = bool(minutes) and time.perf_counter() - t_start > 60 * (minutes or 0)
                if self.step % cfg.run.save_every == 0 or self.step == cfg.run.steps or out_of_time:
                    checkpoint.save(self.run_dir, self.step, self.state())
                if out_of_time:
                    break
            if self.eval_rows:
                if last_eval is not None and last_eval[0] == self.step:
                    result["after"] = last_eval[1]
                else:  # the final accuracy, logged like the periodic ones
                    result["after"] = ev = self.evaluate()
                    log.log(self.step, eval_metrics(ev))
        finally:
            log.close()
            shutdown(self.env_cls)  # an OpenEnv server rlvr started ends with the run
            if self._rollout_log is not None:
                self._rollout_log.close()
                self._rollout_log = None
        self.save_model(self.run_dir / "model")
        result["steps"] = self.step
        return result

    def save_model(self, path: Path) -> None:
        """A ``from_pretrained`` folder of the current weights and tokenizer (written aside, then
        renamed into place: a failed save leaves the folder that was there)."""

        def write(folder: Path) -> None:
            self.model.save_pretrained(folder)
            if self.tok is not None:
                self.tok.save_pretrained(folder)

        replace_folder(path, write)
