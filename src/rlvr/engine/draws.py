"""rlvr's engine's draw phase: a step's prompts drawn, scored and redrawn, handed to the learner.

:class:`Draws` holds what sampling needs and nothing of the learner (no optimizer, no reference
model): the weights that sample (the learner's own model in-process; a copy in the asynchronous
sampler, or with ``off_policy.lag``), the prompt stream, the rewards and judge, the episodes'
environment, the answer grammar and the failure step that names the rows to redraw. A step's
draw is :meth:`Draws.draw`: the prompts (quarantined ones skipped), their groups sampled and
scored (:class:`rlvr.sampling.rows.ScoredRows`), dynamic sampling's extra rounds and draw-ahead
buffer, then the failed rows redrawn by the loop every engine shares (:func:`rlvr.sampling.rows.redraw`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from rlvr.config import TrainConfig
from rlvr.data.prompts import encode
from rlvr.data.stream import DataStream
from rlvr.data.tasks import Sample
from rlvr.decoding.truncation import Truncation
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.redraws import Redraws
from rlvr.diagnostics.step import DrawAhead, FailureAware, informative
from rlvr.episodes import Faults
from rlvr.episodes.episode import env_scored
from rlvr.errors import ConfigError
from rlvr.models.device import lean_paths, matmul_precision
from rlvr.rewards.base import prompt_text
from rlvr.runtime import sampling_dtype
from rlvr.sampling import RolloutBatch, Turns, generate
from rlvr.sampling.rows import Replaced, ScoredRows, redraw
from rlvr.setup import RunSetup
from rlvr.types import RewardBreakdown
from rlvr.verify.judge.judged import JudgeStats, from_config


@dataclass
class Drawn:
    """One step's rollouts as the draw phase hands them to the learner: the rows (scored, with their
    causes after the redraws), the causes before any redraw (quarantine judges what the model
    produced), the rows the redraws replaced, whether the environment was down (None without one),
    dynamic sampling's extra rounds, the draw-ahead buffer's ``(used, stale dropped)`` and the
    judge's metrics."""

    rows: ScoredRows
    first_causes: list[Cause]
    replaced: list[Replaced]
    down: bool | None
    extra_rounds: int
    buffer_stats: tuple[int, int]
    judge: dict[str, float | None] = field(default_factory=dict)


def failure_step(cfg: TrainConfig, tags: tuple[str | None, str], run_dir: Any = None) -> FailureAware:
    """The failure step rlvr's engine runs, as ``cfg`` sets it (``run_dir``: where it writes the
    quarantine; None in a process that only draws)."""
    think, answer = tags
    return FailureAware(
        cfg.failure,
        group_size=cfg.rollout.group_size,
        scale_rewards=cfg.algo.scale_rewards,
        advantage_clip=cfg.algo.advantage_clip,
        think_tag=think or "think",
        answer_tag=answer,
        run_dir=run_dir,
        objective=cfg.algo.estimator,
    )


def env_judged(ep: Any, scored: RewardBreakdown | None) -> RewardBreakdown:
    """A row's breakdown once its environment has had its say: ``scored`` (the rewards'), with the
    environment's reward as its accuracy; or, for an episode the environment judged whole (its
    rubric's components: ``scored`` None, never computed), the environment's judgement alone."""
    if ep is None or ep.reward is None:
        assert scored is not None
        return scored
    return env_scored(scored if scored is not None else RewardBreakdown(None, {}, {}), ep)


def _with_observation(prompt: Any, observation: str) -> Any:
    """The prompt with an environment's observation after the user's last message (or the text)."""
    if isinstance(prompt, str):
        return f"{prompt}\n\n{observation}"
    msgs = [dict(m) for m in prompt]
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=len(msgs) - 1)
    msgs[last]["content"] = f"{msgs[last]['content']}\n\n{observation}"
    return msgs


class Draws:
    """The draw phase of rlvr's engine (see the module docstring).

    Args:
        cfg: the run configuration.
        run: the run's pieces (:func:`rlvr.setup.build`).
        fa: the failure step (shared with the learner in-process: the quarantine it keeps).
        policy: the weights that sample (default: ``run.model``).
    """

    def __init__(self, cfg: TrainConfig, run: RunSetup, fa: FailureAware, *, policy: Any = None) -> None:
        self.cfg, self.tok, self.device, self.fa = cfg, run.tokenizer, run.device, fa
        self.policy = policy if policy is not None else run.model
        self.version = 0  # the policy version that samples (the updates made to its weights)
        self.step = 0  # the learner steps done: the next draw trains step + 1 (and seeds the draws)
        self.data = DataStream(cfg, run.train_rows)
        self.rewards, self.constrainer, self.env_cls = run.rewards, run.constrainer, run.env_cls
        self.judge = from_config(cfg.judge, seed=cfg.run.seed, device=self.device) if cfg.judge is not None else None
        self.fast = lean_paths(cfg.model.fast_decode, self.device)  # rlvr's lean paths: on CPU by default
        self.dtype = sampling_dtype(cfg.rollout.dtype, self.device)
        self.ahead = DrawAhead(cfg.failure.max_staleness)  # groups dynamic sampling drew beyond a step's need
        self._prompt_cache: dict[str, list[int]] = {}

    @property
    def pad_id(self) -> int:
        return int(self.tok.pad_token_id)

    # ------------------------------------------------------------------ sampling
    def encode(self, s: Sample) -> list[int]:
        """A sample's prompt tokens (cached by its id)."""
        key = s.id or repr(s.prompt)
        if key not in self._prompt_cache:
            self._prompt_cache[key] = encode(self.tok, s.prompt)
        return self._prompt_cache[key]

    def autocast(self) -> Any:
        """The precision the policy's matrix products run in (``model.autocast``)."""
        return matmul_precision(self.policy, self.cfg.model.autocast)

    def rollout(
        self, samples: list[Sample], group_size: int | None = None, draw: tuple[int, int] = (1, 0)
    ) -> RolloutBatch:
        """Sample ``group_size`` (default G) completions per prompt with the sampling weights.

        ``draw = (kind, n)`` names the draw within the step so that every draw has its own seed and a
        resumed run repeats them exactly: ``(1, 0)`` the step's rollouts, ``(31, k)`` the k-th
        redraw round, ``(37, k)`` the k-th extra round of dynamic sampling.
        """
        r = self.cfg.rollout
        g = group_size or r.group_size
        base = self.cfg.run.seed * 1_000_003 + self.step
        gen = torch.Generator(device=self.device).manual_seed(base * draw[0] + draw[1])
        turns, prompts = None, [self.encode(s) for s in samples]
        max_new = r.max_new_tokens
        if self.env_cls is not None:
            turns, prompts = self.turns(samples, g, f"{self.step}:{draw[0]}.{draw[1]}", fault_free=False)
            max_new = self.episode_tokens()
        with self.autocast():
            b = generate(
                self.policy,
                self.tok,
                prompts,
                group_size=g,
                max_new_tokens=max_new,
                temperature=r.temperature,
                top_p=r.top_p,
                generator=gen,
                policy_version=self.version,
                fast=self.fast,
                constrain=self.constrainer,
                dtype=self.dtype,
                jump=self.cfg.decoding.jump_forward,
                turns=turns,
                cuda_graphs=r.cuda_graphs,
            )
        if r.truncation:  # injected (tests, benchmarks): cut as a smaller budget would have
            b = b.cut(Truncation(r.truncation, self.cfg.run.seed), self.tok)
        return b

    def episode_tokens(self) -> int:
        """An episode's token budget over all its turns (``env.max_tokens``)."""
        assert self.cfg.env is not None
        return self.cfg.env.max_tokens or self.cfg.rollout.max_new_tokens

    def turns(
        self, samples: list[Sample], group_size: int, draw: str, *, fault_free: bool
    ) -> tuple[Turns, list[list[int]]]:
        """The episodes of one draw (a fresh environment per row, reset from its sample) and the
        prompts' tokens, each with its environment's observation."""
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
                prompts.append(self.encode(s))
                continue
            joined = _with_observation(s.prompt, seen.pop())
            for ep in turns.episodes[k * group_size : (k + 1) * group_size]:
                ep.prompt = prompt_text(joined)
            prompts.append(encode(self.tok, joined))
        return turns, prompts

    # ------------------------------------------------------------------ drawn and scored
    def groups(
        self, samples: list[Sample], group_size: int | None = None, draw: tuple[int, int] = (1, 0)
    ) -> ScoredRows:
        """The groups of ``samples`` drawn and scored: every row's :class:`RewardBreakdown` (an episode
        its environment judged whole is not scored by the rewards), its view and its cause."""
        batch = self.rollout(samples, group_size, draw)
        rows = [s for s in samples for _ in range(batch.group_size)]
        cols: dict[str, list[Any]] = {
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
        return ScoredRows.of(rows, batch, breakdowns, self.fa, self.step + 1, self.pad_id)

    # ------------------------------------------------------------------ a step's draw
    def _prompts(self) -> list[Sample]:
        p = self.cfg.rollout.prompts_per_step
        if self.fa.quarantine is None:
            return self.data.take(p)
        return self.data.take(p, skip=lambda s: self.fa.skip(s.id))

    def again(self, samples: list[Sample]) -> Callable[[list[int], int, int], ScoredRows]:
        """How :func:`~rlvr.sampling.rows.redraw` draws replacements for rows answering ``samples``:
        one fresh rollout per named row, for its prompt, with the redraw round's own seed."""
        return lambda bad, attempt, _width: self.groups([samples[i] for i in bad], 1, (31, attempt))

    def redraw(self, rows: ScoredRows, redraws: Redraws) -> tuple[ScoredRows, list[Replaced]]:
        """The rows the failure step names redrawn for their prompts, as ``redraws`` allows."""
        return redraw(rows, self.fa, redraws, self.again(rows.samples))

    def draw(self) -> Drawn:
        """A step's rollouts, scored, with the redraws the failure step asks for.

        With ``failure.dynamic_sampling``, groups whose binary accuracy is the same for every rollout
        are replaced by freshly sampled groups, at most that many extra rounds (flat groups fill the
        step if too few informative ones came); informative groups beyond the need are kept for later
        steps while fresh (:class:`DrawAhead`)."""
        if self.judge is not None:
            self.judge.stats = JudgeStats()  # per-step judge metrics
        p, step, f = self.cfg.rollout.prompts_per_step, self.step + 1, self.cfg.failure
        rows, rounds, buffered = self.groups(self._prompts()), 0, (0, 0)
        if f.dynamic_sampling:
            g, out = rows.group_size, self.fa.left_out()
            fresh, dropped = self.ahead.take_fresh(self.step)
            for earlier in fresh:  # groups drawn ahead on earlier steps come first (the newest first)
                rows = earlier.recaused(self.fa, step).concat(rows)
            while rounds < f.dynamic_sampling and sum(informative(rows.views, g, out)) < p:
                rounds += 1
                rows = rows.concat(self.groups(self._prompts(), g, (37, rounds)))
            keep, later = DrawAhead.pick(informative(rows.views, g, out), p)
            for k in later:  # informative leftovers: kept for later steps
                group = rows.select_groups([k])
                self.ahead.put(min(group.batch.versions), group)
            rows, buffered = rows.select_groups(keep), (len(fresh), dropped)
        first = list(rows.causes)  # quarantine judges what the model produced, before any redraw
        redraws = Redraws.of(f, len(rows))
        rows, replaced = redraw(rows, self.fa, redraws, self.again(rows.samples))  # the loop every engine shares
        return Drawn(
            rows,
            first,
            replaced,
            redraws.down if self.env_cls is not None else None,
            rounds,
            buffered,
            self.judge.stats.metrics() if self.judge is not None else {},
        )
