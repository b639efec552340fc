"""rlvr's engine's learner: a drawn step's rows corrected, decided and trained on.

:class:`Learner` is the learner's half of a step (:meth:`Learner.learn`): the off-policy correction
(rows sampled too far from the trainer rejected, and redrawn once when the loop gives a way to), the
failure step's decision (:meth:`rlvr.diagnostics.step.FailureAware.decide`: admission, advantages from
:mod:`rlvr.algo.advantages`' registry, clipping) and ``algo.num_iterations`` optimizer steps, each a
pass of micro-batches through :class:`Forward` and :func:`rlvr.algo.loss.policy_loss`. It holds the
optimizer, the schedule and the reference model; the draw phase (:mod:`.draws`) holds none of them.

:class:`Forward` is the training forward: the log-probs of the sampled tokens under the policy, in
micro-batches. Each token's log-prob is taken under the mask it was sampled with (a grammar's), at the
sampling temperature; from hidden states on tiles of the vocabulary (``algo.logprobs: chunked``, the
default on a GPU: never the ``[rows, tokens, vocab]`` logits) or from the completion positions'
logits. Whole groups go through the shared-prompt forward (each prompt computed once per group) when
they fit; micro-batches are ``algo.micro_batch`` rows, or as many as ``algo.token_budget`` allows.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from rlvr.algo.correction import Correction, CorrectionSettings, correction, mismatch, token_weights
from rlvr.algo.loss import Normalizer, policy_loss, token_logprobs
from rlvr.config import TrainConfig
from rlvr.decoding.constrain import forced_tokens, masked_hidden_logprobs, masked_logprobs
from rlvr.diagnostics.redraws import Redraws
from rlvr.diagnostics.step import Decision, FailureAware
from rlvr.engine.draws import Drawn
from rlvr.models.budget import auto_token_budget, rows_within
from rlvr.models.device import matmul_precision
from rlvr.models.fast_decode import supports
from rlvr.models.grouped_forward import completion_hidden, completion_logits
from rlvr.models.logprobs import chunked_logprobs, decoder_hidden, head_logits
from rlvr.sampling import RolloutBatch
from rlvr.sampling.rows import Replaced, ScoredRows

#: Redraws rows the off-policy correction rejected: ``(rows, redraws) -> (rows, replaced)``.
Redraw = Callable[[ScoredRows, Redraws], tuple[ScoredRows, list[Replaced]]]

#: One micro-batch: its rows, and each group's first row when it runs the shared-prompt forward.
Part = tuple[torch.Tensor, torch.Tensor | None]


class Forward:
    """The training forward of ``model`` (see the module docstring).

    Args:
        cfg: the run configuration (``algo``, ``rollout.temperature``, ``model.autocast``).
        model: the policy.
        device: where it runs.
        fast: rlvr's lean paths are on (the shared-prompt forward among them).
        optimizer: the policy's optimizer (``token_budget: auto`` counts its state once it has one).
    """

    def __init__(self, cfg: TrainConfig, model: Any, device: torch.device, fast: bool, optimizer: Any) -> None:
        self.cfg, self.model, self.device, self.fast, self.optimizer = cfg, model, device, fast, optimizer
        # log-probs on vocabulary tiles (never the [rows, tokens, vocab] logits): by default on a GPU
        self.chunked = cfg.algo.logprobs == "chunked" or (
            cfg.algo.logprobs == "auto" and device.type in ("cuda", "xpu")
        )

    def autocast(self) -> Any:
        """The precision of the policy's matrix products (``model.autocast``)."""
        return matmul_precision(self.model, self.cfg.model.autocast)

    def token_logprobs(self, logits: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None) -> torch.Tensor:
        """Log-probs of the sampled tokens; positions sampled under a constraint mask get it again."""
        temp = self.cfg.rollout.temperature
        return masked_logprobs(token_logprobs(logits, completion, temp), logits, completion, bits, temp)

    def hidden_logprobs(
        self, model: Any, hidden: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None
    ) -> torch.Tensor:
        """:meth:`token_logprobs` from hidden states, on tiles of the vocabulary (``algo.logprobs``)."""
        temp = self.cfg.rollout.temperature
        logp = chunked_logprobs(model, hidden, completion, temp)
        return masked_hidden_logprobs(logp, hidden, completion, bits, lambda h: head_logits(model, h), temp)

    def _plain(
        self, model: Any, ids: torch.Tensor, mask: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None
    ) -> torch.Tensor:
        tc = completion.shape[1]
        if self.chunked:
            return self.hidden_logprobs(model, decoder_hidden(model, ids, mask, tc), completion, bits)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=tc + 1).logits[:, :-1]
        return self.token_logprobs(logits, completion, bits)

    def parts(self, batch: RolloutBatch, live: torch.Tensor) -> list[Part]:
        """The micro-batches of one pass over the rows ``live`` (``[N]`` bool)."""
        g = batch.group_size
        grouped = self.fast and supports(self.model, lora=True)
        width = batch.prompt_ids.shape[1] + batch.completion_ids.shape[1]
        mb = self.cfg.algo.micro_batch or rows_within(self._budget(), width, live.numel(), g if grouped else None)
        if grouped and mb % g == 0:
            groups = live.view(-1, g).any(1).nonzero().squeeze(-1)
            chunks = [groups[i : i + mb // g] for i in range(0, len(groups), mb // g)]
            return [((c[:, None] * g + torch.arange(g, device=c.device)).reshape(-1), c * g) for c in chunks]
        rows = live.nonzero().squeeze(-1)
        return [(rows[i : i + mb], None) for i in range(0, len(rows), mb)]

    def _budget(self) -> int | None:
        """Tokens per micro-batch (``algo.token_budget``; ``auto`` measured once, at the first pass)."""
        tb = self.cfg.algo.token_budget
        return self._auto_budget if tb == "auto" else tb

    @cached_property
    def _auto_budget(self) -> int | None:
        bf16 = self.cfg.model.autocast == "bf16"
        return auto_token_budget(self.model, self.device, bf16, optimizer_ready=bool(self.optimizer.state))

    def rows(
        self, batch: RolloutBatch, sl: torch.Tensor, prompt_rows: torch.Tensor | None, model: Any = None
    ) -> torch.Tensor:
        """``[len(sl), Tc]`` log-probs of rows ``sl``'s sampled tokens under their sampling masks: the
        shared-prompt forward when ``prompt_rows`` names each group's first row, else the model's own
        (``model``: another one, the reference)."""
        comp = batch.completion_ids[sl]
        bits = batch.bitmask[sl] if batch.bitmask is not None else None
        if prompt_rows is not None and model is None:
            shared = (batch.prompt_ids[prompt_rows], batch.prompt_mask[prompt_rows], comp, batch.group_size)
            lengths = batch.completion_mask[sl].sum(1)
            if self.chunked:
                return self.hidden_logprobs(self.model, completion_hidden(self.model, *shared, lengths), comp, bits)
            return self.token_logprobs(completion_logits(self.model, *shared, lengths), comp, bits)
        ids = torch.cat([batch.prompt_ids[sl], comp], 1)
        mask = torch.cat([batch.prompt_mask[sl], batch.completion_mask[sl]], 1)
        return self._plain(model if model is not None else self.model, ids, mask, comp, bits)

    @torch.no_grad()
    def logprobs(self, batch: RolloutBatch) -> torch.Tensor:
        """``[N, Tc]`` the log-probs of every sampled token as the loss computes them, without
        gradient; 0 outside the completion mask."""
        out = torch.zeros(batch.completion_ids.shape, device=self.device)
        everything = torch.ones(batch.completion_ids.shape[0], dtype=torch.bool, device=self.device)
        was = self.model.training
        self.model.train()  # the loss's own mode (dropout as it trains)
        try:
            for sl, prompt_rows in self.parts(batch, everything):
                with self.autocast():
                    out[sl] = self.rows(batch, sl, prompt_rows).float()
        finally:
            self.model.train(was)
        return out * batch.completion_mask.to(out.device)


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


@dataclass
class Learned:
    """What a step's learning did: the rows it trained on (after the off-policy correction's
    rejections and redraws), the failure step's decision over them, the rows the correction's redraw
    replaced, the update's metrics (the correction's among them) and when the decision was taken."""

    rows: ScoredRows
    decision: Decision
    replaced: list[Replaced]
    metrics: dict[str, Any]
    t_decided: float


class Learner:
    """The learner of rlvr's engine (see the module docstring).

    Args:
        cfg: the run configuration.
        model: the policy it trains.
        device: where it runs.
        fast: rlvr's lean paths are on (the shared-prompt forward among them).
        fa: the failure step (shared with the draw phase in-process: the quarantine it keeps).
        max_tokens: the completion budget (Dr. GRPO's constant).
    """

    def __init__(
        self, cfg: TrainConfig, model: Any, device: torch.device, fast: bool, fa: FailureAware, max_tokens: int
    ) -> None:
        self.cfg, self.model, self.device, self.fa, self.max_tokens = cfg, model, device, fa, max_tokens
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
        self.corrections = CorrectionSettings.of(cfg.off_policy)
        self.fwd = Forward(cfg, model, device, fast, self.opt)

    def learn(self, drawn: Drawn, step: int, redraw: Redraw | None = None) -> Learned:
        """Step ``step``'s learning on ``drawn``: the off-policy correction, the failure step's
        decision, the update. ``redraw``: how rows the correction rejects are redrawn once (None: they
        are not, as in the asynchronous engine, whose sampler is another process)."""
        rows, replaced = drawn.rows, list(drawn.replaced)
        fused = self.fused_proximal()
        proximal, corr = (None, None) if fused is not None else self.off_policy(rows.batch)
        if corr is not None and bool(corr.rejected.any()) and self.cfg.failure.resample_tries and redraw:
            # rows the engine sampled too far from the trainer: redrawn once, like other engine faults
            rows = rows.rejected(corr.rejected.tolist(), self.fa, step)
            rows, more = redraw(rows, Redraws(tries=1, wait_out=False))
            replaced += more
            assert proximal is not None
            proximal, corr = self.off_policy(rows.batch, known=(proximal, sorted({r.row for r in more})))
        if corr is not None:
            rows = rows.rejected(corr.rejected.tolist(), self.fa, step)
        d = self.fa.decide(rows.views, step, first_causes=drawn.first_causes, down=drawn.down, causes=rows.causes)
        t_decided = time.perf_counter()
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
        return Learned(rows, d, replaced, upd, t_decided)

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
        norm = Normalizer.of(trained, max_len=self.max_tokens)
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
