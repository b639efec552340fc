"""The GRPO loop: sample -> verify and score -> group advantages -> clipped-ratio update.

The maths lives in pure functions (:mod:`.advantages`, :mod:`.loss`), sampling in
:mod:`.rollout`, scoring in :mod:`rlvr.rewards`; this module only wires them, steps
the optimizer, logs, evaluates and checkpoints. Old log-probs are the sampling
log-probs recorded during rollout, so no forward pass is spent recomputing them.
"""

from __future__ import annotations

import copy
import itertools
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from rlvr.algo.correction import Correction, CorrectionSettings, correction, mismatch, token_weights
from rlvr.algo.loss import Normalizer, policy_loss, token_logprobs
from rlvr.config import TrainConfig, dump_config
from rlvr.data.prompts import encode
from rlvr.data.stream import DataStream
from rlvr.data.tasks import Sample
from rlvr.decoding.constrain import masked_hidden_logprobs
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.redraws import Redraws, env_counts
from rlvr.diagnostics.step import DrawAhead, FailureAware, RolloutView, informative, rollout_record
from rlvr.episodes.env import shutdown
from rlvr.episodes.episode import env_scored
from rlvr.errors import ConfigError
from rlvr.models.budget import auto_token_budget, rows_within
from rlvr.models.device import lean_paths
from rlvr.models.grouped_forward import completion_hidden, completion_logits
from rlvr.models.logprobs import chunked_logprobs, decoder_hidden, head_logits
from rlvr.rewards import Total
from rlvr.rewards.base import prompt_text
from rlvr.runs import MetricsLog, RolloutLog, checkpoint
from rlvr.runs.checkpoint import replace_folder, write_atomic
from rlvr.runtime import sampling_dtype
from rlvr.sampling import RolloutBatch, generate, greedy_eval
from rlvr.setup import build
from rlvr.types import RewardBreakdown

StepCallback = Callable[[int, dict[str, Any]], None]


def _eval_metrics(ev: dict[str, Any]) -> dict[str, float]:
    """A held-out evaluation as metrics: ``eval/accuracy``, ``eval/truncated``, ``eval/<status>``
    (and ``eval/tool_calls``, ``eval/tool_rate`` for episodes)."""
    return {
        "eval/accuracy": ev["accuracy"],
        "eval/truncated": ev["truncated"],
        **{f"eval/{k}": v for k, v in ev["statuses"].items()},
        **{f"eval/{k}": ev[k] for k in ("tool_calls", "tool_rate") if k in ev},
    }


@dataclass
class Drawn:
    """One step's rollouts as the sampler hands them to the learner: the prompts, the batch, each
    row's score breakdown and total, causes before and after the redraws, the originals the redraws
    replaced, whether the environment was down (None without one), dynamic sampling's extra rounds,
    the draw-ahead buffer's counts and the judge's metrics."""

    samples: list[Sample]
    batch: RolloutBatch
    breakdowns: list[Any]
    totals: torch.Tensor
    causes: list[Cause]
    first_causes: list[Cause]
    replaced: list[dict[str, Any]]
    down: bool | None
    extra_rounds: int
    buffer_stats: tuple[int, int]
    judge: dict[str, Any] = field(default_factory=dict)


def _served(batch: RolloutBatch) -> list[bool]:
    """Per row: did the environment answer one of its episode's calls (False for single-turn rows)."""
    return [ep is not None and ep.served() > 0 for ep in (batch.episodes or [None] * len(batch.texts))]


def _with_observation(prompt: Any, observation: str) -> Any:
    """The prompt with an environment's observation after the user's last message (or the text)."""
    if isinstance(prompt, str):
        return f"{prompt}\n\n{observation}"
    msgs = [dict(m) for m in prompt]
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=len(msgs) - 1)
    msgs[last]["content"] = f"{msgs[last]['content']}\n\n{observation}"
    return msgs


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


def env_judged(ep: Any, scored: RewardBreakdown | None) -> RewardBreakdown:
    """A row's breakdown once its environment has had its say: ``scored`` (the rewards'), with the
    environment's reward as its accuracy; or, for an episode the environment judged whole (its
    rubric's components: ``scored`` None, never computed), the environment's judgement alone."""
    if ep is None or ep.reward is None:
        assert scored is not None
        return scored
    return env_scored(scored if scored is not None else RewardBreakdown(None, {}, {}), ep)


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
        # log-probs on vocabulary tiles (never the [rows, tokens, vocab] logits): by default on a GPU
        self.chunked = cfg.algo.logprobs == "chunked" or (
            cfg.algo.logprobs == "auto" and self.device.type in ("cuda", "xpu")
        )
        self.rollout_dtype = sampling_dtype(cfg.rollout.dtype, self.device)
        self.data = DataStream(cfg, run.train_rows)
        self.eval_rows = run.eval_rows
        self.rewards = run.rewards
        self.judge = None
        if cfg.judge is not None:  # two-level verification: the judge sees only what rules cannot decide
            from rlvr.verify.judge.judged import from_config

            self.judge = from_config(cfg.judge, seed=cfg.run.seed, device=self.device)
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
        think, answer = run.tags
        # what decides each rollout's fate (causes, admission, advantages, quarantine): engine-neutral
        self.fa = FailureAware(
            cfg.failure,
            group_size=cfg.rollout.group_size,
            scale_rewards=cfg.algo.scale_rewards,
            advantage_clip=cfg.algo.advantage_clip,
            think_tag=think or "think",
            answer_tag=answer,
            run_dir=self.run_dir,
            objective=cfg.algo.estimator,
        )
        self.ahead = DrawAhead(cfg.failure.max_staleness)  # groups dynamic sampling drew beyond a step's need
        self._buffer_stats = (0, 0)
        self.corrections = CorrectionSettings.of(cfg.off_policy)
        # off_policy.lag: a sampler that holds the policy `lag` updates back (the weights of the last
        # lag + 1 versions are kept), as an asynchronous engine's buffer would hand rollouts over
        self.sampler, self._versions = model, deque[tuple[int, dict[str, torch.Tensor]]]()
        if cfg.off_policy.lag:
            self.sampler = copy.deepcopy(model)
            self._keep_version()
        self.constrainer = run.constrainer
        self._prompt_cache: dict[str, list[int]] = {}
        self.env_cls: type | None = run.env_cls
        self.quarantined_now: list[str] = []  # prompts the last step quarantined

    # ------------------------------------------------------------------ pieces

    def _autocast(self) -> Any:
        import contextlib

        if self.cfg.model.autocast == "bf16":
            return torch.autocast(next(self.model.parameters()).device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _keep_version(self) -> None:
        """Remember this version's weights for the lagged sampler (the last ``lag + 1`` are kept)."""
        # the weights that train (LoRA: the adapters); the frozen ones are the sampler's copy already
        trained = {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}
        self._versions.append((self.step, trained))
        while len(self._versions) > self.cfg.off_policy.lag + 1:
            self._versions.popleft()

    def _sampling_policy(self) -> tuple[Any, int]:
        """The model that samples this step and its version (``off_policy.lag`` updates back)."""
        if self.sampler is self.model:
            return self.model, self.step
        version, weights = self._versions[0]
        with torch.no_grad():
            for n, p in self.sampler.named_parameters():
                if n in weights:
                    p.copy_(weights[n])
        return self.sampler, version

    def _encode(self, s: Sample) -> list[int]:
        key = s.id or repr(s.prompt)
        if key not in self._prompt_cache:
            self._prompt_cache[key] = encode(self.tok, s.prompt)
        return self._prompt_cache[key]

    def rollout(
        self, samples: list[Sample], group_size: int | None = None, draw: tuple[int, int] = (1, 0)
    ) -> RolloutBatch:
        """Sample ``group_size`` (default G) completions per prompt with the current policy.

        ``draw = (kind, n)`` names the draw within the step so that every draw has its own seed and a
        resumed run repeats them exactly: ``(1, 0)`` the step's rollouts, ``(31, k)`` the k-th
        resampling round, ``(37, k)`` the k-th extra round of dynamic sampling.
        """
        r = self.cfg.rollout
        g = group_size or r.group_size
        base = self.cfg.run.seed * 1_000_003 + self.step
        gen = torch.Generator(device=self.device).manual_seed(base * draw[0] + draw[1])
        turns, prompts = None, [self._encode(s) for s in samples]
        max_new = r.max_new_tokens
        if self.env_cls is not None:
            turns, prompts = self._turns(samples, g, f"{self.step}:{draw[0]}.{draw[1]}", fault_free=False)
            max_new = self._episode_tokens()
        sampler, version = self._sampling_policy()
        with self._autocast():
            b = generate(
                sampler,
                self.tok,
                prompts,
                group_size=g,
                max_new_tokens=max_new,
                temperature=r.temperature,
                top_p=r.top_p,
                generator=gen,
                policy_version=version,
                fast=self.fast,
                constrain=self.constrainer,
                dtype=self.rollout_dtype,
                jump=self.cfg.decoding.jump_forward,
                turns=turns,
            )
        if r.truncation:  # injected (tests, benchmarks): cut as a smaller budget would have
            from rlvr.decoding.truncation import Truncation

            b = b.cut(Truncation(r.truncation, self.cfg.run.seed), self.tok)
        return b

    def _episode_tokens(self) -> int:
        assert self.cfg.env is not None
        return self.cfg.env.max_tokens or self.cfg.rollout.max_new_tokens

    def _turns(
        self, samples: list[Sample], group_size: int, draw: str, *, fault_free: bool
    ) -> tuple[Any, list[list[int]]]:
        """The episodes of one draw (a fresh environment per row, reset from its sample) and the
        prompts' tokens, each with its environment's observation."""
        from rlvr.episodes import Faults
        from rlvr.sampling import Turns

        env = self.cfg.env
        assert env is not None and self.env_cls is not None
        rows = [s for s in samples for _ in range(group_size)]
        rates = {str(k): v for k, v in env.faults.items()}
        faults = None if fault_free or not (rates or env.outages) else Faults(rates, env.fault_seed, tuple(env.outages))
        turns = Turns(
            self.tok,
            self.env_cls,
            [{"prompt": s.prompt, "gold": s.gold, "task": s.task, "id": s.id, **s.extra} for s in rows],
            [f"{s.id}:{draw}:{i % group_size}" for i, s in enumerate(rows)],
            [prompt_text(s.prompt) for s in rows],
            max_turns=env.max_turns,
            timeout_s=env.tool_timeout_s,
            max_result_chars=env.max_result_chars,
            faults=faults,
            env_faults=self.fa.env_faults,
            step=self.step + 1,
        )
        prompts = []
        for k, s in enumerate(samples):
            seen = {o for o in turns.observations[k * group_size : (k + 1) * group_size] if o}
            if len(seen) > 1:
                raise ConfigError(
                    f"env: reset gave {len(seen)} different observations for prompt {s.id!r}; the "
                    f"{group_size} episodes of a group share their prompt (make reset depend on "
                    "the row only)"
                )
            if not seen:
                prompts.append(self._encode(s))
                continue
            joined = _with_observation(s.prompt, seen.pop())
            for ep in turns.episodes[k * group_size : (k + 1) * group_size]:
                ep.prompt = prompt_text(joined)
            prompts.append(encode(self.tok, joined))
        return turns, prompts

    def score(self, samples: list[Sample], batch: RolloutBatch) -> tuple[list[Any], torch.Tensor]:
        """Every rollout's :class:`RewardBreakdown` and total (NaN where nothing applied)."""
        return self._score_rows([s for s in samples for _ in range(batch.group_size)], batch)

    def _score_rows(self, rows: list[Sample], batch: RolloutBatch) -> tuple[list[Any], torch.Tensor]:
        cols: dict[str, Any] = {
            "gold": [s.gold for s in rows],
            "task": [s.task for s in rows],
            "prompt": [s.prompt for s in rows],
            "completion_ids": [ids[m.bool()].tolist() for ids, m in zip(batch.completion_ids, batch.loss_mask)],
        }
        for key in {k for s in rows for k in s.extra}:
            cols[key] = [s.extra.get(key) for s in rows]
        episodes = batch.episodes if batch.episodes is not None else [None] * len(rows)
        rest = [i for i, ep in enumerate(episodes) if ep is None or ep.score is None]  # not judged whole
        cols = {k: [v[i] for i in rest] for k, v in cols.items()}
        texts = [batch.texts[i] for i in rest]
        if self.judge is not None and rest:
            questions = list(map(prompt_text, cols["prompt"]))
            cols["verdicts"] = self.judge.verify_many(texts, cols["gold"], questions, cols["task"])
        scored = iter(self.rewards.breakdown(texts, step=self.step, **cols) if rest else [])
        breakdowns = [env_judged(ep, next(scored) if ep is None or ep.score is None else None) for ep in episodes]
        totals = torch.tensor([b.total if b.total is not None else float("nan") for b in breakdowns])
        return breakdowns, totals

    def _views(
        self, samples: list[Sample], batch: RolloutBatch, breakdowns: list[Any], rejected: list[bool] | None = None
    ) -> list[RolloutView]:
        """The failure-aware step's view of each rollout (``rejected``: the off-policy correction's)."""
        return self._row_views([s for s in samples for _ in range(batch.group_size)], batch, breakdowns, rejected)

    def _row_views(
        self, rows: list[Sample], batch: RolloutBatch, breakdowns: list[Any], rejected: list[bool] | None = None
    ) -> list[RolloutView]:
        episodes = batch.episodes or [None] * len(rows)
        owned = self.fa.env_faults
        off = rejected or [False] * len(rows)
        return [
            RolloutView(
                s.id,
                b.verdict,
                b.total,
                b.components,
                fin,
                text,
                v,
                b.weights,
                episode=ep.cause(owned) if ep is not None else None,
                events=tuple(e.cause for e in ep.events) if ep is not None else (),
                off_policy=o,
            )
            for s, b, fin, text, v, ep, o in zip(
                rows, breakdowns, batch.finish, batch.texts, batch.versions, episodes, off
            )
        ]

    def _sample_groups(self) -> tuple[list[Sample], RolloutBatch, list[Any], torch.Tensor, int]:
        """Prompts for this step, their rollouts and scores. With ``failure.dynamic_sampling``, groups
        whose binary accuracy is the same for every rollout are replaced by freshly sampled groups,
        at most that many extra rounds (flat groups fill the batch if too few informative ones came);
        informative groups beyond the need are kept for later steps while fresh (:class:`DrawAhead`)."""
        p = self.cfg.rollout.prompts_per_step
        skip = self.fa.skip if self.fa.quarantine is not None else None
        samples = self.data.take(p, skip=lambda s_: skip(s_.id)) if skip else self.data.take(p)
        batch = self.rollout(samples)
        breakdowns, totals = self.score(samples, batch)
        rounds = 0
        self._buffer_stats = (0, 0)
        if not self.cfg.failure.dynamic_sampling:
            return samples, batch, breakdowns, totals, rounds
        g = batch.group_size
        fresh, dropped = self.ahead.take_fresh(self.step)
        self._buffer_stats = (len(fresh), dropped)
        pool = (samples, batch, breakdowns, totals)
        for s_, b_, bd_, t_ in fresh:  # groups drawn ahead on earlier steps come first
            pool = ([s_, *pool[0]], b_.concat(pool[1], self.tok.pad_token_id), bd_ + pool[2], torch.cat([t_, pool[3]]))

        def signal(pool: tuple[Any, ...]) -> list[bool]:  # read from the rows that stay in their group
            return informative(
                self._row_views([s_ for s_ in pool[0] for _ in range(g)], pool[1], pool[2]), g, self.fa.left_out()
            )

        while rounds < self.cfg.failure.dynamic_sampling and sum(signal(pool)) < p:
            rounds += 1
            more = self.data.take(p, skip=lambda s_: skip(s_.id)) if skip else self.data.take(p)
            more_batch = self.rollout(more, g, (37, rounds))
            more_bd, more_tot = self.score(more, more_batch)
            pool = (
                pool[0] + more,
                pool[1].concat(more_batch, self.tok.pad_token_id),
                pool[2] + more_bd,
                torch.cat([pool[3], more_tot]),
            )
        keep, later = DrawAhead.pick(signal(pool), p)
        for k in later:  # informative leftovers: kept for later steps
            rows = [k * g + j for j in range(g)]
            self.ahead.put(
                min(pool[1].versions[i] for i in rows),
                (pool[0][k], pool[1].select_groups([k]), [pool[2][i] for i in rows], pool[3][torch.tensor(rows)]),
            )
        rows = [k * g + j for k in keep for j in range(g)]
        return (
            [pool[0][k] for k in keep],
            pool[1].select_groups(keep),
            [pool[2][i] for i in rows],
            pool[3][torch.tensor(rows)],
            rounds,
        )

    def resample(
        self,
        samples: list[Sample],
        batch: RolloutBatch,
        breakdowns: list[Any],
        totals: torch.Tensor,
        causes: list[Cause],
        redraws: Redraws,
    ) -> tuple[RolloutBatch, list[Any], torch.Tensor, list[Cause], list[dict[str, Any]]]:
        """Redraw the rows :meth:`FailureAware.to_resample` names for the same prompts, as many
        rounds as ``redraws`` allows (``failure.resample_tries``, or ``failure.redraw_budget``; none
        once the environment is down); returns the originals for the log."""
        g = batch.group_size
        replaced: list[dict[str, Any]] = []
        breakdowns, causes = list(breakdowns), list(causes)
        for attempt in itertools.count(1):
            bad = redraws.plan(self.fa.to_resample(causes), attempt)
            if not bad:
                break
            rows = [samples[i // g] for i in bad]
            new = self.rollout(rows, 1, (31, attempt))
            new_bd, new_tot = self._score_rows(rows, new)
            new_causes = self.fa.causes(self._row_views(rows, new, new_bd), self.step + 1)
            redraws.observe(*env_counts(new_causes, _served(new), self.fa.left_out()), attempt)
            for j, i in enumerate(bad):
                replaced.append(
                    {
                        "row": i,
                        "attempt": attempt,
                        "completion": batch.texts[i],
                        "finish": batch.finish[i],
                        "cause": causes[i].value,
                        "breakdown": breakdowns[i],
                        "version": batch.versions[i],
                        "episode": batch.episodes[i] if batch.episodes is not None else None,
                    }
                )
                breakdowns[i], totals[i], causes[i] = new_bd[j], new_tot[j], new_causes[j]
            batch = batch.replace_rows(bad, new, self.tok.pad_token_id)
        return batch, breakdowns, totals, causes, replaced

    def _logprobs(
        self,
        model: Any,
        ids: torch.Tensor,
        mask: torch.Tensor,
        completion: torch.Tensor,
        bits: torch.Tensor | None = None,
    ) -> torch.Tensor:
        tc = completion.shape[1]
        if self.chunked:
            return self._hidden_logprobs(model, decoder_hidden(model, ids, mask, tc), completion, bits)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=tc + 1).logits[:, :-1]
        return self._token_logprobs(logits, completion, bits)

    def _hidden_logprobs(
        self, model: Any, hidden: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None
    ) -> torch.Tensor:
        """:meth:`_token_logprobs` from hidden states, on tiles of the vocabulary (``algo.logprobs``)."""
        temp = self.cfg.rollout.temperature
        logp = chunked_logprobs(model, hidden, completion, temp)
        return masked_hidden_logprobs(logp, hidden, completion, bits, lambda h: head_logits(model, h), temp)

    def _token_logprobs(
        self, logits: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None
    ) -> torch.Tensor:
        """Log-probs of the sampled tokens; positions sampled under a constraint mask get it again."""
        from rlvr.decoding.constrain import masked_logprobs

        temp = self.cfg.rollout.temperature
        return masked_logprobs(token_logprobs(logits, completion, temp), logits, completion, bits, temp)

    def max_completion_tokens(self) -> int:
        """The configured completion budget (``env.max_tokens`` for episodes): Dr. GRPO's constant."""
        return self._episode_tokens() if self.env_cls is not None else self.cfg.rollout.max_new_tokens

    def trained_tokens(self, batch: RolloutBatch, admit: torch.Tensor) -> torch.Tensor:
        """``[N, Tc]`` the tokens the loss reads: the policy's own sampled tokens (no tool result, no
        token the grammar forced, which has log-prob 0 and no gradient) of the admitted rows."""
        mask = batch.loss_mask * admit.to(batch.loss_mask.device)[:, None].long()
        if batch.bitmask is not None:
            from rlvr.decoding.constrain import forced_tokens

            mask = mask * (~forced_tokens(batch.bitmask)).long().to(mask.device)
        return mask

    def _parts(self, batch: RolloutBatch, live: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """The micro-batches of one pass: ``(rows, each group's first row or None)``; whole groups go
        through the shared-prompt forward (each prompt computed once per group) when they fit."""
        from rlvr.models.fast_decode import supports

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
        return auto_token_budget(self.model, self.device, bf16, optimizer_ready=bool(self.opt.state))

    def _forward(
        self, batch: RolloutBatch, sl: torch.Tensor, prompt_rows: torch.Tensor | None, model: Any = None
    ) -> torch.Tensor:
        """``[len(sl), Tc]`` log-probs of rows ``sl``'s sampled tokens under their sampling masks: the
        shared-prompt forward when ``prompt_rows`` names each group's first row, else the model's own."""
        comp = batch.completion_ids[sl]
        bits = batch.bitmask[sl] if batch.bitmask is not None else None
        if prompt_rows is not None and model is None:
            shared = (batch.prompt_ids[prompt_rows], batch.prompt_mask[prompt_rows], comp, batch.group_size)
            lengths = batch.completion_mask[sl].sum(1)
            if self.chunked:
                return self._hidden_logprobs(self.model, completion_hidden(self.model, *shared, lengths), comp, bits)
            return self._token_logprobs(completion_logits(self.model, *shared, lengths), comp, bits)
        ids = torch.cat([batch.prompt_ids[sl], comp], 1)
        mask = torch.cat([batch.prompt_mask[sl], batch.completion_mask[sl]], 1)
        return self._logprobs(model if model is not None else self.model, ids, mask, comp, bits)

    @torch.no_grad()
    def logprobs(self, batch: RolloutBatch) -> torch.Tensor:
        """``[N, Tc]`` the training forward's log-probs of every sampled token (under its sampling
        mask), as the loss computes them, without gradient; 0 outside the completion mask."""
        out = torch.zeros(batch.completion_ids.shape, device=self.device)
        everything = torch.ones(batch.completion_ids.shape[0], dtype=torch.bool, device=self.device)
        was = self.model.training
        self.model.train()  # the loss's own mode (dropout as it trains)
        try:
            for sl, prompt_rows in self._parts(batch, everything):
                with self._autocast():
                    out[sl] = self._forward(batch, sl, prompt_rows).float()
        finally:
            self.model.train(was)
        return out * batch.completion_mask.to(out.device)

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
        for sl, prompt_rows in self._parts(batch, live):
            ref = None
            with self._autocast():  # the reference runs in the policy's precision
                logp = self._forward(batch, sl, prompt_rows)
                if self.ref is not None:
                    with torch.no_grad():
                        ref = self._forward(batch, sl, None, self.ref)
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
        grad_norm = 0.0
        lr = self.sched.get_last_lr()[0]
        trained = self.trained_tokens(batch, admit)
        # the training forward before any update, on the rows it runs: the sampler/trainer gap
        probe = torch.full(batch.completion_ids.shape, float("nan"), device=self.device)
        steps = 0
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
        if self.env_cls is not None:
            return greedy_eval(
                self.model,
                self.tok,
                self.eval_rows,
                max_new_tokens=self._episode_tokens(),
                fast=self.fast,
                constrain=self.constrainer if self.cfg.decoding.in_eval else None,
                turns_for=lambda rows: self._turns(rows, 1, "eval", fault_free=True),
            )
        return greedy_eval(
            self.model,
            self.tok,
            self.eval_rows,
            max_new_tokens=self.cfg.rollout.max_new_tokens,
            fast=self.fast,
            constrain=self.constrainer if self.cfg.decoding.in_eval else None,
        )

    def train_step(self) -> dict[str, Any]:
        """One GRPO step: sample, score, let the failure-aware step decide, update; returns its metrics."""
        t0 = time.perf_counter()
        drawn = self.draw()
        return self.learn(drawn, t0, time.perf_counter())

    def draw(self) -> Drawn:
        """A step's rollouts, scored, with the redraws the failure step asks for (what a sampler does:
        rlvr's asynchronous engine runs this in its sampler process)."""
        if self.judge is not None:
            from rlvr.verify.judge.judged import JudgeStats

            self.judge.stats = JudgeStats()  # per-step judge metrics
        samples, batch, breakdowns, totals, extra_rounds = self._sample_groups()
        step = self.step + 1  # the step these rollouts train; the policy that sampled them is version self.step
        causes = self.fa.causes(self._views(samples, batch, breakdowns), step)
        first_causes = list(causes)  # quarantine judges what the model produced, before any resampling
        redraws = Redraws.of(self.cfg.failure, len(causes))
        redraws.observe(*env_counts(causes, _served(batch), self.fa.left_out()), 0)
        batch, breakdowns, totals, causes, replaced = self.resample(samples, batch, breakdowns, totals, causes, redraws)
        return Drawn(
            samples,
            batch,
            breakdowns,
            totals,
            causes,
            first_causes,
            replaced,
            redraws.down if self.env_cls is not None else None,
            extra_rounds,
            self._buffer_stats,
            self.judge.stats.metrics() if self.judge is not None else {},
        )

    def learn(self, drawn: Drawn, t0: float, t_gen: float, *, redraw_off_policy: bool = True) -> dict[str, Any]:
        """The learner's half of a step on ``drawn``: the off-policy correction, the failure step's
        decision, the update; returns the step's metrics. ``redraw_off_policy``: rows the correction
        rejects are redrawn once (in-process sampling only)."""
        samples, batch, breakdowns, totals, causes = (
            drawn.samples,
            drawn.batch,
            drawn.breakdowns,
            drawn.totals,
            drawn.causes,
        )
        replaced = list(drawn.replaced)
        step = self.step + 1
        fused = self.fused_proximal()
        proximal, corr = (None, None) if fused is not None else self.off_policy(batch)
        if corr is not None and bool(corr.rejected.any()) and self.cfg.failure.resample_tries and redraw_off_policy:
            # rows the engine sampled too far from the trainer: redrawn once, like other engine faults
            causes = [Cause.OFF_POLICY if r else c for c, r in zip(causes, corr.rejected.tolist())]
            once = Redraws(tries=1, wait_out=False)
            batch, breakdowns, totals, causes, more = self.resample(samples, batch, breakdowns, totals, causes, once)
            replaced += more
            assert proximal is not None
            proximal, corr = self.off_policy(batch, known=(proximal, sorted({int(r["row"]) for r in more})))
        views = self._views(samples, batch, breakdowns, corr.rejected.tolist() if corr is not None else None)
        d = self.fa.decide(views, step, first_causes=drawn.first_causes, down=drawn.down)
        t_score = time.perf_counter()
        upd = self.update(
            batch,
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
            self._rollout_log.log(step, self._records(samples, batch, views, d, replaced))
        self.step = step
        if self._versions:
            self._keep_version()  # the weights of version `step`, for the lagged sampler
        m = {**d.metrics, **drawn.judge, **self._engine_metrics(batch, upd, (t0, t_gen, t_score, t_end))}
        m["failure/resampled"] = float(len(replaced))
        m["failure/dynamic_rounds"] = float(drawn.extra_rounds)
        m["failure/buffer_used"], m["failure/stale_dropped"] = map(float, drawn.buffer_stats)
        self.quarantined_now = d.quarantined
        return m

    def _records(
        self,
        samples: list[Sample],
        batch: RolloutBatch,
        views: list[RolloutView],
        d: Any,
        replaced: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """``rollouts.jsonl`` lines: every rollout of the step, then the originals resampling replaced."""
        g = batch.group_size
        eps = batch.episodes or [None] * len(views)

        def ep_of(ep: Any) -> dict[str, Any]:  # an episode's turns and events, where the rollout is one
            return {"episode": ep.record()} if ep is not None else {}

        kept = [
            rollout_record(
                v,
                d.causes[i],
                samples[i // g],
                advantage=float(d.advantages[i]),
                admitted=bool(d.admit[i]),
                **ep_of(eps[i]),
            )
            for i, v in enumerate(views)
        ]
        gone = [
            rollout_record(
                RolloutView(
                    samples[o["row"] // g].id,
                    o["breakdown"].verdict,
                    o["breakdown"].total,
                    o["breakdown"].components,
                    o["finish"],
                    o["completion"],
                    o["version"],
                ),
                Cause(o["cause"]),
                samples[o["row"] // g],
                advantage=0.0,
                admitted=False,
                replaced=True,
                attempt=o["attempt"],
                **ep_of(o.get("episode")),
            )
            for o in replaced
        ]
        return kept + gone

    def _engine_metrics(
        self, batch: RolloutBatch, upd: dict[str, float], times: tuple[float, float, float, float]
    ) -> dict[str, Any]:
        """What only this engine knows: the decoding masks, lengths, the update, timings."""
        t0, t_gen, t_score, t_end = times
        m: dict[str, Any] = {}
        if batch.decode_stats is not None:
            m.update(batch.decode_stats.metrics())
        if batch.episodes is not None:
            from rlvr.episodes import tool_metrics

            m.update(tool_metrics([ep for ep in batch.episodes if ep is not None]))
        lengths = batch.loss_mask.sum(1).float()  # the policy's own tokens
        m["rollout/bf16"] = float(self.rollout_dtype is not None)  # what rollout.dtype (auto) chose
        m["completions/mean_length"] = float(lengths.mean())
        m["completions/p90_length"] = float(torch.quantile(lengths, 0.9))
        m["completions/truncated_frac"] = float(batch.truncated.float().mean())
        m.update(upd)
        m["tokens_per_s"] = float(lengths.sum()) / (t_end - t0)
        m["time/step_s"], m["time/generate_s"] = t_end - t0, t_gen - t0
        m["time/score_s"], m["time/update_s"] = t_score - t_gen, t_end - t_score
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
        self.ahead.items = [
            it if isinstance(it, tuple) and len(it) == 2 and isinstance(it[0], int) else (min(it[1].versions), it)
            for it in state.get("buffer") or []
        ]
        if self._versions:  # the lagged sampler's window restarts at the restored version
            self._versions.clear()
            self._keep_version()

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
            log.log(0, _eval_metrics(ev))
            if on_eval:
                on_eval(0, ev)
        t_start = time.perf_counter()
        try:
            while self.step < cfg.run.steps:
                metrics = self.train_step()
                if cfg.run.eval_every and self.step % cfg.run.eval_every == 0 and self.eval_rows:
                    ev = self.evaluate()
                    last_eval = (self.step, ev)
                    metrics.update(_eval_metrics(ev))
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
                    log.log(self.step, _eval_metrics(ev))
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
