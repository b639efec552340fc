"""The GRPO loop: draw -> the failure step's decision -> clipped-ratio update.

The maths lives in pure functions (:mod:`rlvr.algo`), the failure step in :mod:`rlvr.diagnostics`;
the draw phase (sampling, scoring, redraws) is :mod:`.draws`, the training forward :mod:`.forward`.
This module wires them, steps the optimizer, logs, evaluates and checkpoints. Old log-probs are the
sampling log-probs recorded during rollout, so no forward pass is spent recomputing them.
"""

from __future__ import annotations

import copy
import math
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rlvr.algo.correction import Correction, CorrectionSettings, correction, mismatch, token_weights
from rlvr.algo.loss import Normalizer, policy_loss
from rlvr.config import TrainConfig, dump_config
from rlvr.data.tasks import Sample
from rlvr.decoding.constrain import forced_tokens
from rlvr.diagnostics.redraws import Redraws
from rlvr.engine.draws import Drawn, Draws, failure_step
from rlvr.engine.forward import Forward
from rlvr.engine.records import engine_metrics, eval_metrics, rollout_lines
from rlvr.episodes.env import shutdown
from rlvr.errors import ConfigError
from rlvr.models.device import lean_paths
from rlvr.rewards import Total
from rlvr.runs import MetricsLog, RolloutLog, checkpoint
from rlvr.runs.checkpoint import replace_folder, write_atomic
from rlvr.sampling import RolloutBatch, greedy_eval
from rlvr.sampling.rows import ScoredRows
from rlvr.setup import build

StepCallback = Callable[[int, dict[str, Any]], None]
__all__ = ["GRPOTrainer", "StepCallback", "lr_lambda"]


def lr_lambda(schedule: str, warmup: int, total: int) -> Callable[[int], float]:
    """The learning-rate multiplier at each optimizer step."""

    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        if schedule == "linear":
            return max(0.0, 1.0 - progress)
        if schedule == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
        return 1.0

    return f


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
        params = [p for p in model.parameters() if p.requires_grad]
        o = cfg.optim
        fused = all(p.dtype == torch.float32 for p in params)  # one kernel per step instead of a loop of ops
        self.opt = torch.optim.AdamW(params, lr=o.lr, betas=o.betas, weight_decay=o.weight_decay, fused=fused)
        # the schedule runs over optimizer steps: num_iterations of them per GRPO step
        total = cfg.run.steps * cfg.algo.num_iterations
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lr_lambda(o.schedule, o.warmup_steps, total))
        self.ref = None
        if cfg.algo.beta > 0:
            self.ref = copy.deepcopy(model).eval()
            for p in self.ref.parameters():
                p.requires_grad_(False)
        self.step = 0
        self.run_dir = Path(cfg.run.out_dir)
        self._rollout_log: RolloutLog | None = None
        # what decides each rollout's fate (causes, admission, advantages, quarantine): engine-neutral
        self.fa = failure_step(cfg, run.tags, self.run_dir)
        self.corrections = CorrectionSettings.of(cfg.off_policy)
        # off_policy.lag: a sampler that holds the policy `lag` updates back (the weights of the last
        # lag + 1 versions are kept), as an asynchronous engine's buffer would hand rollouts over
        self._versions = deque[tuple[int, dict[str, torch.Tensor]]]()
        self.draws = Draws(cfg, run, self.fa, policy=copy.deepcopy(model) if cfg.off_policy.lag else model)
        if cfg.off_policy.lag:
            self._keep_version()
        self.data, self.ahead, self.rollout_dtype = self.draws.data, self.draws.ahead, self.draws.dtype
        self.fwd = Forward(cfg, model, self.device, self.fast, self.opt)
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

    def trained_tokens(self, batch: RolloutBatch, admit: torch.Tensor) -> torch.Tensor:
        """``[N, Tc]`` the tokens the loss reads: the policy's own sampled tokens (no tool result, no
        token the grammar forced, which has log-prob 0 and no gradient) of the admitted rows."""
        mask = batch.loss_mask * admit.to(batch.loss_mask.device)[:, None].long()
        if batch.bitmask is not None:
            mask = mask * (~forced_tokens(batch.bitmask)).long().to(mask.device)
        return mask

    def logprobs(self, batch: RolloutBatch) -> torch.Tensor:
        """``[N, Tc]`` the training forward's log-probs of every sampled token (under its sampling
        mask), as the loss computes them, without gradient; 0 outside the completion mask."""
        return self.fwd.logprobs(batch)

    def backward(
        self,
        batch: RolloutBatch,
        advantages: torch.Tensor,
        admit: torch.Tensor,
        *,
        old: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
        probe: torch.Tensor | None = None,
        scale: float = 1.0,
        fused: CorrectionSettings | None = None,
    ) -> list[Any]:
        """One pass over the batch: forward, loss and backward of every micro-batch (gradients add up
        in ``.grad``; nothing is stepped). Every micro-batch divides by the same whole-batch
        :class:`Normalizer`, so the split and the order of the rows change nothing
        (``tests/invariant/``). ``old``: the ratio's old (proximal) log-probs (default: the sampler's,
        ``batch.logprobs``); ``weights``: ``[N, Tc]`` importance weights on each token's policy term;
        ``probe``: filled with the training forward's log-probs of the rows it runs (detached);
        ``scale``: multiplies the loss (``failure.thin_step_scale``: the step's admitted share);
        ``fused``: the proximal log-probs are this forward's own (detached) and the corrections'
        weights are computed from them here (see :meth:`fused_proximal`)."""
        a = self.cfg.algo
        advantages, admit = advantages.to(self.device), admit.to(self.device)
        old = batch.logprobs if old is None else old
        trained = self.trained_tokens(batch, admit)
        norm = Normalizer.of(trained, max_len=self.max_completion_tokens())
        # A row with advantage 0 contributes exactly 0 loss and 0 gradient when there is no KL term
        # (flat groups, excluded rows): it is left out of the passes (it still counts in the normaliser).
        live = (admit & (advantages != 0)) if a.beta == 0 else admit
        self.model.train()
        stats: list[Any] = []
        for sl, prompt_rows in self.fwd.parts(batch, live):
            ref = None
            with self.fwd.autocast():  # the reference runs in the policy's precision
                logp = self.fwd.rows(batch, sl, prompt_rows)
                if self.ref is not None:
                    with torch.no_grad():
                        ref = self.fwd.rows(batch, sl, None, self.ref)
            if probe is not None:
                probe[sl] = logp.detach().float()
            old_sl, w_sl = old[sl], weights[sl] if weights is not None else None
            if fused is not None:  # the model has not moved since the batch began: this is the proximal
                old_sl = logp.detach().to(old.dtype)
                w_sl = token_weights(batch.logprobs[sl].to(old_sl.device), old_sl, trained[sl], fused)
            loss, st = policy_loss(
                logp,
                old_sl,
                advantages[sl],
                trained[sl],
                norm,
                aggregation=a.loss,
                epsilon=a.epsilon,
                epsilon_high=a.epsilon_high,
                beta=a.beta,
                ref_logp=ref,
                is_weights=w_sl,
            )
            (loss * scale if scale != 1.0 else loss).backward()
            stats.append(st)
        return stats

    def update(
        self,
        batch: RolloutBatch,
        advantages: torch.Tensor,
        admit: torch.Tensor,
        *,
        old: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
        scale: float = 1.0,
        fused: CorrectionSettings | None = None,
    ) -> dict[str, Any]:
        """``num_iterations`` optimizer steps on one rollout batch (the learning-rate schedule moves
        once per optimizer step; a batch with nothing to learn from takes none and moves nothing).
        ``old`` and ``weights``: the proximal log-probs and importance weights of
        :meth:`off_policy` (default: the sampler's log-probs, no weights); ``fused``: the proximal
        log-probs are the first pass's own (:meth:`fused_proximal`), its correction metrics added."""
        a = self.cfg.algo
        if fused is not None and a.num_iterations != 1:
            raise ValueError("a fused proximal needs one optimizer step per batch (algo.num_iterations: 1)")
        stats: list[Any] = []
        grad_norm, steps, lr = 0.0, 0, self.sched.get_last_lr()[0]
        trained = self.trained_tokens(batch, admit)
        # the training forward before any update, on the rows it runs: the sampler/trainer gap
        probe = torch.full(batch.completion_ids.shape, float("nan"), device=self.device)
        for it in range(a.num_iterations):
            got = self.backward(
                batch,
                advantages,
                admit,
                old=old,
                weights=weights,
                probe=probe if it == 0 else None,
                scale=scale,
                fused=fused,
            )
            if not got:  # nothing to learn from this batch: no optimizer step, the schedule stays
                break
            stats += got
            params = [p for p in self.model.parameters() if p.requires_grad]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, self.cfg.optim.grad_clip))
            self.opt.step()
            self.sched.step()
            self.opt.zero_grad(set_to_none=True)
            steps += 1
        if not stats:
            return {
                "loss/policy": 0.0,
                "loss/clipfrac": 0.0,
                "loss/approx_kl": 0.0,
                "loss/kl": 0.0,
                "grad_norm": 0.0,
                "lr": lr,
                "train/rows": 0,
                "train/optimizer_steps": 0.0,
            }
        k = len(stats)
        rows = int((trained.sum(1) > 0).sum())
        ran = trained * ~torch.isnan(probe)  # trained tokens of the rows the passes ran
        seen = torch.nan_to_num(probe)
        gap = float(((seen - batch.logprobs).abs() * ran).sum()) / max(float(ran.sum()), 1.0)
        # the mismatch, and with a fused proximal its correction metrics (which include the mismatch),
        # over the rows the pass ran (the others have no gradient: advantage 0, no KL term)
        measured = (
            correction(batch.logprobs, seen, ran, fused).metrics
            if fused is not None
            else mismatch(batch.logprobs, seen, ran)
        )
        return measured | {
            "loss/policy": sum(s.policy for s in stats) / steps,
            "train/rows": rows,
            "train/tokens": float(trained.sum()),
            "train/optimizer_steps": float(steps),
            "rollout/logprob_gap": gap,
            "loss/clipfrac": sum(s.clipfrac for s in stats) / k,
            "loss/approx_kl": sum(s.approx_kl for s in stats) / k,
            "loss/kl": sum(s.kl for s in stats) / k,
            "grad_norm": grad_norm,
            "lr": lr,
        }

    def fused_proximal(self) -> CorrectionSettings | None:
        """The corrections to compute inside the training forward, when ``proximal: recompute`` needs no
        forward of its own: the proximal policy is the model before this batch's update, and with one
        optimizer step per batch (``algo.num_iterations: 1``) and no dropout that is exactly the model
        the training forward runs (AReaL's decoupled objective at one step per batch). Not when a
        setting rejects whole rows: those must be known before the group statistics. None otherwise.
        It saves the learner a forward (about half its step: the asynchronous engine's bottleneck)."""
        if self.cfg.off_policy.proximal != "recompute" or self.cfg.algo.num_iterations != 1:
            return None
        if self.corrections.rejects or any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in self.model.modules()):
            return None
        return self.corrections

    def off_policy(
        self, batch: RolloutBatch, known: tuple[torch.Tensor, list[int]] | None = None
    ) -> tuple[torch.Tensor | None, Correction | None]:
        """The proximal log-probs (``off_policy.proximal: recompute``: the training model's, one
        forward without gradient; ``bypass``: None, the sampler's stand) and the correction of the
        behaviour/proximal gap (:func:`rlvr.algo.correction.correction`, None when nothing is set).
        ``known``: the proximal log-probs of this batch before ``rows`` were redrawn; only those
        rows are run again (the model has not moved in between)."""
        if self.cfg.off_policy.proximal == "bypass":
            return None, None
        if known is None:
            proximal = self.logprobs(batch)
        else:
            before, rows = known
            proximal = torch.zeros(batch.completion_ids.shape, device=before.device)
            proximal[:, : before.shape[1]] = before  # a redraw only widens the batch
            if rows:
                proximal[rows] = self.logprobs(batch.select_rows(rows))
        everyone = torch.ones(batch.completion_ids.shape[0], dtype=torch.bool, device=self.device)
        corr = correction(batch.logprobs, proximal, self.trained_tokens(batch, everyone), self.corrections)
        return proximal, corr

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
        """One GRPO step: draw, let the failure-aware step decide, update; returns its metrics."""
        t0 = time.perf_counter()
        self._ready_to_draw()
        drawn = self.draws.draw()  # rlvr's asynchronous engine runs this in its sampler process
        return self.learn(drawn, t0, time.perf_counter())

    def learn(self, drawn: Drawn, t0: float, t_gen: float, *, redraw_off_policy: bool = True) -> dict[str, Any]:
        """The learner's half of a step on ``drawn``: the off-policy correction, the failure step's
        decision, the update; returns the step's metrics. ``redraw_off_policy``: rows the correction
        rejects are redrawn once (in-process sampling only)."""
        rows, replaced, step = drawn.rows, list(drawn.replaced), self.step + 1
        fused = self.fused_proximal()
        proximal, corr = (None, None) if fused is not None else self.off_policy(rows.batch)
        if corr is not None and bool(corr.rejected.any()) and self.cfg.failure.resample_tries and redraw_off_policy:
            # rows the engine sampled too far from the trainer: redrawn once, like other engine faults
            rows = rows.rejected(corr.rejected.tolist(), self.fa, step)
            self._ready_to_draw()
            rows, more = self.draws.redraw(rows, Redraws(tries=1, wait_out=False))
            replaced += more
            assert proximal is not None
            proximal, corr = self.off_policy(rows.batch, known=(proximal, sorted({r.row for r in more})))
        if corr is not None:
            rows = rows.rejected(corr.rejected.tolist(), self.fa, step)
        d = self.fa.decide(rows.views, step, first_causes=drawn.first_causes, down=drawn.down, causes=rows.causes)
        t_score = time.perf_counter()
        upd = self.update(
            rows.batch,
            d.advantages,
            d.admit,
            old=proximal,
            weights=corr.weights if corr is not None else None,
            scale=d.scale,
            fused=fused,
        )
        if corr is not None:  # over every row, not only those the passes ran
            upd.update(corr.metrics)
        t_end = time.perf_counter()
        if self._rollout_log is not None:
            self._rollout_log.log(step, rollout_lines(rows, d, replaced))
        self.step = step
        if self._versions:
            self._keep_version()  # the weights of version `step`, for the lagged sampler
        times = (t0, t_gen, t_score, t_end)
        m = {**d.metrics, **drawn.judge, **engine_metrics(rows.batch, upd, times, self.rollout_dtype is not None)}
        m["failure/resampled"] = float(len(replaced))
        m["failure/dynamic_rounds"] = float(drawn.extra_rounds)
        m["failure/buffer_used"], m["failure/stale_dropped"] = map(float, drawn.buffer_stats)
        self.quarantined_now = d.quarantined
        return m

    def state(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "scheduler": self.sched.state_dict(),
            "step": self.step,
            "position": self.data.position,
            "config": dump_config(self.cfg),
            "failure": self.fa.state_dict(),
            "buffer": self.ahead.items,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
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
