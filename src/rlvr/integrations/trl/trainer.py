"""``FailureAwareGRPOTrainer``: TRL's ``GRPOTrainer`` with rlvr's failure-aware step.

A TRL user drops it into their own script::

    trainer = FailureAwareGRPOTrainer(model=..., reward_funcs=[build_reward("accuracy"), ...],
                                      args=GRPOConfig(...), train_dataset=..., failure=FailureConfig(...))

It overrides the few methods TRL exposes, translating TRL's data into
:class:`rlvr.diagnostics.step.FailureAware`'s inputs and applying its decision:

* ``_generate_single_turn``: sampling under the answer grammar (``constrain``, masks kept: on TRL's
  transformers path through rlvr's sampling loop, lean decoder and jump-forward, when TRL's
  sampling settings are ones it has, else ``generate`` with rlvr's logits processor), then the
  rows the step names (invalid, and truncated by option) redrawn for the same prompt, before any
  old-log-prob or reference forward is spent on them; every process joins every round, so sharded
  models (FSDP, ZeRO-3) stay in step;
* ``_calculate_rewards``: TRL's rewards, then each row's cause from its verdict (rlvr's rewards pass
  theirs through; a row that a user reward scored ``None`` is ``invalid``), gathered from every
  process: the decision (cold start, admission, advantages, quarantine) is made on the whole
  batch, identically on every process, since a prompt's G completions may sit on different ones;
* ``_generate_and_score_completions``: TRL's advantages replaced by the decision's, excluded rows
  marked (their tokens leave the loss mask and ``num_items_in_batch``);
* ``_compute_loss``: excluded rows removed from the batch (the loss and every normaliser);
  ``_get_per_token_logps_and_entropies``: the sampling masks applied again before the softmax, so
  old and new log-probs are of the same masked distribution;
* ``_get_train_sampler``: quarantined prompts leave TRL's repeat layout;
* ``_save_checkpoint`` / ``_load_optimizer_and_scheduler``: the failure state travels with TRL's
  checkpoints.

TRL's own logging (console, TensorBoard, W&B) keeps working; rlvr's metrics join it under the names
rlvr's engine uses, and the run folder (:mod:`.runfolder`) is the same as rlvr's engine writes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import torch
from trl import GRPOConfig, GRPOTrainer

from rlvr.algo.advantages import Scale, scale_of
from rlvr.config import DecodingConfig, FailureConfig
from rlvr.decoding.constrain import forced_tokens
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.redraws import Redraws
from rlvr.diagnostics.step import Decision, FailureAware, RolloutView
from rlvr.errors import ConfigError
from rlvr.integrations.trl.rows import Processes, TRLRows, padded
from rlvr.integrations.trl.runfolder import STATE_FILE
from rlvr.integrations.trl.sampler import QuarantineRepeatSampler
from rlvr.rewards.base import GOLD_COLUMNS, Reward
from rlvr.sampling.redraw import Replaced, redraw
from rlvr.types import Status, Verdict

logger = logging.getLogger(__name__)
#: The per-row entries of TRL's ``_generate`` tuple a redraw replaces: prompt ids, completion ids, tool
#: mask, messages, log-probs, tool images.
_PER_ROW = (0, 1, 2, 3, 4, 7)
#: Columns that let rlvr's verifier judge a row (its gold, or a code task's tests, or constraints).
VERIFIABLE = (*GOLD_COLUMNS, "tests", "test_spec", "constraints")


@dataclass
class _Generation:
    """What one generation batch carries from sampling to the loss (this process's rows)."""

    rows: list[dict[str, Any]]
    bits: list[torch.Tensor | None] = field(default_factory=list)  # per row [T_i, W] sampling masks
    first_causes: list[Cause] | None = None
    replaced: list[Replaced] = field(default_factory=list)
    decision: Decision | None = None
    views: list[RolloutView] = field(default_factory=list)  # every process's rows, gathered
    ranks: list[int] = field(default_factory=list)
    rows_all: list[dict[str, Any]] = field(default_factory=list)
    episodes: list[Any] | None = None  # this process's rows' episodes (TRL's tool loop), None without tools
    episodes_all: list[Any] | None = None  # every process's, gathered
    redraws: Redraws | None = None  # this step's redraw rounds (every process agrees on the outage)
    first_all: list[Cause | None] = field(default_factory=list)  # every process's first causes, gathered


class FailureAwareGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` + rlvr's failure-aware step (see the module docstring).

    Args:
        failure: what is excluded, resampled, quarantined (rlvr's ``FailureConfig``).
        constrain: a ``DecodingConfig`` (or a ready ``Constrainer``) to sample under the answer
            grammar; on the vLLM path ``full`` becomes vLLM's structured output (a regex).
        advantage_clip: clamp advantages to ``[-clip, clip]``.
        run_dir: rlvr's run folder (metrics/rollouts/quarantine); default ``args.output_dir``.
        eval_rows: held-out rows (rlvr ``Sample``) for greedy accuracy every ``eval_every`` steps.
        eval_every: 0 (only before and after) or a step interval.
        log_rollouts: write every rollout to ``rollouts.jsonl``.
        tags: the format's ``(think, answer)`` tags (for alarms and the grammar).
        tool_timeout_s: with TRL's ``tools`` / ``environment_factory``: seconds a tool call may run
            (past it: ``env_timeout``; TRL has no limit on a sync tool).
        max_result_chars: a longer tool result is cut to it (and says so).
        env_faults: injected environment faults (:class:`rlvr.episodes.Faults`), for tests and
            benchmarks.
        *args: ``trl.GRPOTrainer``'s own.
        **kwargs: ``trl.GRPOTrainer``'s own.
    """

    # TRL's attributes as this subclass reads them (transformers types them for any Trainer: its
    # TrainingArguments, an optional model, any processor): annotations only, nothing is set here
    args: GRPOConfig
    model: Any
    processing_class: Any
    train_dataset: Any
    num_generations: int
    shuffle_dataset: bool
    max_completion_length: int
    pad_to_multiple_of: int | None
    # set before TRL's __init__ can call an overridden method (its rollout_func dispatch, say)
    _gen: _Generation | None = None
    _pending_bits: torch.Tensor | None = None

    def __init__(
        self,
        *args: Any,
        failure: FailureConfig | None = None,
        constrain: Any = None,
        advantage_clip: float | None = None,
        run_dir: str | Path | None = None,
        eval_rows: list[Any] | None = None,
        eval_every: int = 0,
        log_rollouts: bool = True,
        tags: tuple[str | None, str] = ("think", "answer"),
        tool_timeout_s: float = 10.0,
        max_result_chars: int = 2000,
        env_faults: Any = None,
        truncation: Any = None,
        **kwargs: Any,
    ) -> None:
        self.failure = failure or FailureConfig()
        self.truncation = truncation  # injected (tests, benchmarks): rlvr.decoding.truncation.Truncation
        self.tool_timeout_s, self.max_result_chars, self.env_faults = tool_timeout_s, max_result_chars, env_faults
        if kwargs.get("tools") or kwargs.get("environment_factory") is not None:
            kwargs["environment_factory"] = _check_episodes(kwargs, constrain)
        args_ = kwargs.get("args") or (args[2] if len(args) > 2 else None)
        decoding = constrain if isinstance(constrain, DecodingConfig) else None
        if decoding is not None and decoding.constrain != "none" and args_ is not None and args_.use_vllm:
            _vllm_structured_output(args_, decoding, tags)
        super().__init__(*args, **kwargs)
        self.max_iterations = int(self.max_tool_calling_iterations)
        self._after_call: list[int] | None = None
        think, answer = tags
        self.fa = FailureAware(
            self.failure,
            group_size=self.num_generations,
            scale_rewards=_scale(self.scale_rewards),
            advantage_clip=advantage_clip,
            think_tag=think or "think",
            answer_tag=answer,
            run_dir=None,
            objective=cast(Any, self.multi_objective_aggregation),
            weights=self.reward_weights.tolist(),
        )
        self.run_dir = Path(cast(str, run_dir or self.args.output_dir))
        if self.accelerator.is_main_process:
            self.fa.run_dir = self.run_dir  # quarantine.jsonl: one writer
        self.constrainer = self._make_constrainer(constrain, tags) if not self.use_vllm else None
        # held-out evaluation decodes under the grammar only where decoding.in_eval says so (as on
        # rlvr's engine): unconstrained, it judges what the policy writes by itself
        self.eval_constrainer = self.constrainer if decoding is None or decoding.in_eval else None
        self.jump_forward = decoding.jump_forward if decoding is not None else True
        from rlvr.integrations.trl.runfolder import RunFolder

        self.run_folder = RunFolder(self, eval_rows or [], eval_every, log_rollouts)
        self.add_callback(self.run_folder)
        self.telling = _what_it_tells(self.train_dataset, self.reward_funcs, self.tools or self.environment_factories)
        logger.info("FailureAwareGRPOTrainer: %s", self.telling)

    # ------------------------------------------------------------------ construction
    def _make_constrainer(self, constrain: Any, tags: tuple[str | None, str]) -> Any:
        if constrain is None or (isinstance(constrain, DecodingConfig) and constrain.constrain == "none"):
            return None
        if not isinstance(constrain, DecodingConfig):
            return constrain  # a ready Constrainer
        from rlvr.decoding.constrain import Constrainer

        d = constrain
        vocab = self.model.get_output_embeddings().weight.shape[0]
        return Constrainer(
            self.processing_class,
            vocab,
            mode=d.constrain,
            answer=d.answer,
            schema=d.json_schema,
            think_tag=tags[0],
            answer_tag=tags[1],
            reasoning_budget=d.reasoning_budget,
            answer_tokens=d.answer_tokens,
            max_chars=d.max_chars,
            backend=d.backend,
        )

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        data = dataset if dataset is not None else self.train_dataset

        def skip(i: int) -> bool:  # a prompt's key read only once something is quarantined
            q = self.fa.quarantine
            return bool(q is not None and q.entries) and self.fa.skip(prompt_key(data[i]))

        return QuarantineRepeatSampler(
            data,
            mini_repeat_count=self.num_generations,
            batch_size=cast(int, self.args.generation_batch_size) // self.num_generations,  # set by GRPOConfig
            repeat_count=self.num_iterations * cast(int, self.args.steps_per_generation),
            shuffle=self.shuffle_dataset,
            seed=self.args.seed,
            skip=skip,
        )

    # ------------------------------------------------------------------ sampling and resampling
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        self._gen = gen = _Generation(rows=list(inputs))
        try:
            out = super()._generate_and_score_completions(inputs)
        finally:
            self._pending_bits = None
        if gen.decision is None:  # TRL's vLLM sequence mask has spoken: its rows are off_policy
            ratio = out.get("importance_sampling_ratio")
            local = (
                (ratio.reshape(len(inputs), -1) == 0).all(1)
                if ratio is not None
                else torch.zeros(len(inputs), dtype=torch.bool, device=out["advantages"].device)
            )
            self._decide(gen, [bool(x) for x in self.accelerator.gather(local.long()).tolist()])
        d = gen.decision
        assert d is not None, "the decision is made in _calculate_rewards or right above"
        n = len(inputs)
        here = slice(self.accelerator.process_index * n, (self.accelerator.process_index + 1) * n)
        device = out["advantages"].device
        admit = d.admit[here].to(device)
        out["advantages"] = d.advantages[here].to(device=device, dtype=out["advantages"].dtype)
        out["rlvr_admit"] = admit
        width = out["completion_ids"].shape[1]
        if self.constrainer is not None:
            out["rlvr_bitmask"] = _stack_bits(gen.bits, width, self.constrainer.words)
            # a token the grammar forced has log-prob 0 and no gradient: out of the loss and its normalisers
            # (TRL's tool_mask: 1 for the tokens its loss reads; attention still sees every token)
            free = (~forced_tokens(out["rlvr_bitmask"])).to(device=device, dtype=out["completion_mask"].dtype)
            out["tool_mask"] = out["tool_mask"] * free if "tool_mask" in out else free
        mask = out["completion_mask"] if "tool_mask" not in out else out["completion_mask"] * out["tool_mask"]
        trained = mask * admit[:, None]
        # the normalisers, over every process's whole generation batch: trained tokens (dapo) and rows
        # (the row-mean losses), so a row weighs the same whichever micro-batch TRL's shuffle puts it in
        out["num_items_in_batch"] = self.accelerator.gather(trained.sum()).sum()
        out["rlvr_trained_rows"] = self.accelerator.gather((trained.sum(1) > 0).sum()).sum()
        out["rlvr_step_scale"] = torch.tensor(d.scale, device=device)  # failure.thin_step_scale
        self.run_folder.record_generation(self, gen, out)
        return out

    def _generate_single_turn(
        self,
        prompt_ids: list[list[int]],
        images: Any,
        multimodal_fields: Any,
        num_generations: int,
        has_tool_images: bool = False,
    ) -> tuple[Any, Any]:
        completion_ids, logprobs, bits = self._sample(
            prompt_ids, images, multimodal_fields, num_generations, has_tool_images
        )
        gen = self._gen
        if gen is None or not self.model.training or self.tools:  # episodes are redrawn whole, in _generate
            return completion_ids, logprobs
        completion_ids, logprobs, bits = self._resample(
            prompt_ids, completion_ids, logprobs, bits, images, multimodal_fields, has_tool_images
        )
        gen.bits = bits
        if self.constrainer is not None:  # the old-log-prob and reference forwards re-apply them
            self._pending_bits = _stack_bits(
                bits, max((len(c) for c in completion_ids), default=1), self.constrainer.words
            )
        return completion_ids, logprobs

    def _sample(
        self,
        prompt_ids: list[list[int]],
        images: Any,
        multimodal_fields: Any,
        num_generations: int,
        has_tool_images: bool,
    ) -> tuple[list[list[int]], Any, list[torch.Tensor | None]]:
        if self.constrainer is None or images is not None or multimodal_fields:
            ids, lp = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
            bits: list[torch.Tensor | None] = [None] * len(ids)
        else:
            ids, lp, bits = self._constrained_generate(prompt_ids)
        if self.truncation is not None and self.model.training and not self.tools:
            ids, lp, bits = self._cut(prompt_ids, num_generations, ids, lp, bits)
        return ids, lp, bits

    def _cut(
        self,
        prompt_ids: list[list[int]],
        num_generations: int,
        ids: list[list[int]],
        lp: Any,
        bits: list[torch.Tensor | None],
    ) -> tuple[list[list[int]], Any, list[torch.Tensor | None]]:
        """The injected truncation (``rollout.truncation``): the rows it hits cut as a smaller budget
        would have ended them (no eos: TRL and the failure step read them as truncated)."""
        prompts = prompt_ids if len(prompt_ids) == len(ids) else [p for p in prompt_ids for _ in range(num_generations)]
        eos = set(self.eos_token_ids)
        ids, bits = list(ids), list(bits)
        lp = list(lp) if lp is not None else None
        for i, (p, c) in enumerate(zip(prompts, ids)):
            keep = self.truncation.length(p, c, eos)
            if keep is None:
                continue
            ids[i] = list(c[:keep])
            if lp is not None:
                lp[i] = list(lp[i][:keep])
            if bits[i] is not None:
                bits[i] = cast(torch.Tensor, bits[i])[:keep]
        return ids, lp, bits

    def _lean_sampling(self) -> bool:
        """TRL's sampling settings are ones rlvr's own loop has (temperature, top-p; it stops on TRL's stop ids):
        constrained rows are then drawn there (lean decoder, forced tokens jumped) instead of through
        ``generate`` with a logits processor, one call per token."""
        tok = self._tokenizer
        return (
            not self.top_k
            and self.min_p is None
            and self.repetition_penalty == 1.0
            and not self.args.generation_kwargs
            and tok.pad_token_id is not None
            and self.temperature > 0
        )

    def _constrained_generate(
        self, prompt_ids: list[list[int]]
    ) -> tuple[list[list[int]], None, list[torch.Tensor | None]]:
        """Constrained sampling of TRL's rows; each row's masks are kept (one packed row per token).
        rlvr's sampling loop when :meth:`_lean_sampling`, else TRL's transformers ``generate`` with
        rlvr's grammar as a logits processor."""
        from transformers import LogitsProcessorList
        from trl.models import unwrap_model_for_generation
        from trl.trainer.utils import pad

        from rlvr.decoding.constrain import GrammarLogitsProcessor

        tok, device, multiple = self._tokenizer, self.accelerator.device, self.pad_to_multiple_of
        ckpt: Any = self.args.gradient_checkpointing_kwargs  # transformers also allows a JSON string here
        if self._lean_sampling():
            from rlvr.sampling import generate

            with (
                unwrap_model_for_generation(
                    self.model_wrapped,
                    self.accelerator,
                    gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                    generation_kwargs=self.generation_kwargs,
                    gradient_checkpointing_kwargs=ckpt,
                ) as unwrapped,
                torch.no_grad(),
                self._dist.summon_full_params(self.model_wrapped, recurse=False),
            ):
                # the global RNG, as generate() draws from: TRL's seeding makes it reproducible
                b = generate(
                    unwrapped,
                    tok,
                    [list(p) for p in prompt_ids],
                    group_size=1,
                    max_new_tokens=self.max_completion_length,
                    temperature=self.temperature,
                    top_p=self.top_p,
                    constrain=self.constrainer,
                    jump=self.jump_forward,
                    stop_ids=list(self.eos_token_ids),
                )
            lengths = b.completion_mask.sum(1).tolist()
            assert b.bitmask is not None
            return (
                [b.completion_ids[i, :n].tolist() for i, n in enumerate(lengths)],
                None,
                [b.bitmask[i, :n] for i, n in enumerate(lengths)],
            )
        prompts = [torch.tensor(p) for p in prompt_ids]
        ids = pad(prompts, padding_value=tok.pad_token_id, padding_side="left", pad_to_multiple_of=multiple)
        mask = pad(
            [torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left", pad_to_multiple_of=multiple
        )
        inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
        assert self.constrainer is not None  # constrained generation only runs with one
        proc = GrammarLogitsProcessor(self.constrainer, len(prompt_ids), self.max_completion_length)
        with (
            unwrap_model_for_generation(
                self.model_wrapped,
                self.accelerator,
                gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                generation_kwargs=self.generation_kwargs,
                gradient_checkpointing_kwargs=ckpt,
            ) as unwrapped,
            torch.no_grad(),
            self._dist.summon_full_params(self.model_wrapped, recurse=False),
        ):
            out = unwrapped.generate(
                **inputs, generation_config=self.generation_config, logits_processor=LogitsProcessorList([proc])
            )
        completion = out[:, inputs["input_ids"].shape[1] :].cpu()
        eos = torch.tensor(self.eos_token_ids)
        masks = torch.stack(proc.masks, 1) if proc.masks else torch.full((len(prompt_ids), 0, 1), -1, dtype=torch.int32)
        rows: list[list[int]] = []
        bits: list[torch.Tensor | None] = []
        for i in range(completion.shape[0]):
            c = completion[i]
            ends = torch.isin(c, eos).nonzero()
            n = int(ends[0]) + 1 if len(ends) else len(c)
            rows.append(c[:n].tolist())
            bits.append(masks[i, :n])
        return rows, None, bits

    def _resample(
        self,
        prompt_ids: list[list[int]],
        completion_ids: list[list[int]],
        logprobs: Any,
        bits: list[torch.Tensor | None],
        images: Any,
        multimodal_fields: Any,
        has_tool_images: bool,
    ) -> tuple[list[list[int]], Any, list[torch.Tensor | None]]:
        """Redraw the rows the failure-aware step names (the loop every engine shares), every process
        joining each round."""
        gen = self._gen
        assert gen is not None
        step = self.state.global_step + 1

        def scored(rows: list[int], ids: list[list[int]], lp: Any, b: list[torch.Tensor | None]) -> TRLRows:
            views = self._local_views([gen.rows[i] for i in rows], ids)
            return TRLRows(
                (list(ids), list(lp) if lp is not None else None, list(b)), views, self.fa.causes(views, step)
            )

        def again(bad: list[int], attempt: int, width: int) -> TRLRows:
            sub = padded(bad, width)  # a process with fewer rows to redraw still joins
            ids, lp, b = self._sample([prompt_ids[i] for i in sub], images, multimodal_fields, 1, has_tool_images)
            return scored(sub, ids, lp, b)

        rows = scored(list(range(len(completion_ids))), completion_ids, logprobs, bits)
        rows = self._redraw(gen, rows, again)
        ids, lp, b = rows.columns
        return cast(list[list[int]], ids), lp, cast(list[torch.Tensor | None], b)

    def _redraw(self, gen: _Generation, rows: TRLRows, again: Any) -> TRLRows:
        """``rows`` through the shared redraw loop; the first causes, the redraws' state and the rows
        they replaced kept in ``gen``."""
        gen.first_causes = list(rows.causes)  # quarantine judges the first attempt's causes
        gen.redraws = Redraws.of(self.failure, len(rows.views))
        rows, gen.replaced = redraw(rows, self.fa, gen.redraws, again, together=Processes(self.accelerator))
        return rows

    # ------------------------------------------------------------------ episodes (TRL's tool loop)
    def _generate(self, prompts: list[Any]) -> tuple[Any, ...]:
        """TRL's generation with tools, each row's tools under a guard; then every row's episode read
        back, and the episodes the step names (environment faults first) redrawn whole, with a fresh
        environment, every process joining every round."""
        gen = self._gen
        if not self.tools or gen is None or not self.model.training:
            return super()._generate(prompts)

        step = self.state.global_step + 1
        rows = list(range(len(prompts)))
        first_envs = [self.environments[i] if self.environments else None for i in rows]
        guards = self._guard_rows(rows, first_envs, step, 0)
        self._sync_tool_dicts, self._async_tool_dicts = list(guards), [{} for _ in rows]  # where TRL looks
        out = list(super()._generate(prompts))
        eps = self._read_episodes(out, guards, prompts, rows, first_envs)

        def scored(sub: list[int], got: Sequence[Any], eps: list[Any], envs: list[Any]) -> TRLRows:
            data = [gen.rows[i] for i in sub]
            values = self._call_rewards(data, got[3], got[1])
            views = self._views(data, got[1], [e.answer for e in eps], got[3], values, eps)
            columns = tuple(got[k] for k in _PER_ROW) + (envs,)
            return TRLRows(columns, views, self.fa.causes(views, step), eps)

        def again(bad: list[int], attempt: int, width: int) -> TRLRows:
            sub = padded(bad, width)  # a process with fewer rows to redraw still joins TRL's gathers
            sub_prompts, envs = self._fresh(gen.rows, sub)
            guards_sub = self._guard_rows(sub, envs, step, attempt)
            saved = (
                self._sync_tool_dicts,
                self._async_tool_dicts,
                self.environments,
                getattr(self, "_batch_environments", None),
                self.num_generations,
            )
            try:
                self._sync_tool_dicts = list(guards_sub)
                self._async_tool_dicts = [{} for _ in sub]
                if self.environments is not None:
                    self.environments = list(envs)
                    self._batch_environments = [saved[3][i] for i in sub]
                self.num_generations = 1  # each redrawn row is its own prompt (vLLM groups by it)
                new = super(FailureAwareGRPOTrainer, self)._generate(sub_prompts)
            finally:
                (self._sync_tool_dicts, self._async_tool_dicts, self.environments, batch_envs, self.num_generations) = (
                    saved
                )
                if batch_envs is not None:
                    self._batch_environments = batch_envs
            return scored(sub, new, self._read_episodes(list(new), guards_sub, sub_prompts, sub, envs), envs)

        drawn = self._redraw(gen, scored(rows, out, eps, first_envs), again)
        for k, column in zip(_PER_ROW, drawn.columns):
            out[k] = column
        if self.environments is not None:
            self.environments[:] = cast(list[Any], drawn.columns[-1])
        gen.episodes = drawn.episodes
        return tuple(out)

    def _guard_rows(self, rows: list[int], envs: list[Any], step: int, attempt: int) -> list[Any]:
        """Each row's tools (TRL's standalone ones and its environment's methods) under a fresh guard."""
        from rlvr.integrations.trl.episodes import GuardedTools, dead_reason, row_tools

        guards = []
        for j, i in enumerate(rows):
            env = envs[j]
            pid = prompt_key(self._gen.rows[i]) if self._gen is not None else str(i)
            guards.append(
                GuardedTools(
                    row_tools(self._standalone_tools, env),
                    key=f"{pid}:{step}:{i}:{attempt}",
                    timeout_s=self.tool_timeout_s,
                    max_result_chars=self.max_result_chars,
                    faults=self.env_faults,
                    loop=getattr(self, "async_loop", None),
                    dead=dead_reason(env) if env is not None else None,
                    step=step,
                )
            )
        return guards

    def _fresh(self, rows: list[dict[str, Any]], sub: list[int]) -> tuple[list[Any], list[Any]]:
        """Fresh environments for the rows ``sub`` (reset from their data rows, as TRL resets them) and
        their prompts with the new observations."""
        prompts, envs = [], []
        for i in sub:
            x = rows[i]
            prompt = x.get("prompt", [{"role": "user", "content": ""}])
            env = None
            if self.environment_factories is not None:
                name = self._batch_environments[i]
                env = cast(dict[Any, Any], self.environment_factories)[name]()
                kw = {k: v for k, v in x.items() if k != "environment"} if self._multi_environment else x
                obs = env.reset(**kw)
                last = prompt[-1] if isinstance(prompt, list) and prompt else {}
                if isinstance(obs, str) and obs and isinstance(last.get("content"), str):
                    prompt = prompt[:-1] + [{**last, "content": last["content"] + obs}]
            prompts.append(prompt)
            envs.append(env)
        return prompts, envs

    def _read_episodes(
        self, out: list[Any], guards: list[Any], prompts: list[Any], rows: list[int], envs: list[Any]
    ) -> list[Any]:
        """Each row's :class:`rlvr.episodes.Episode` from what TRL's loop returned (``out``: its
        ``_generate`` tuple) and the guards' outcomes; an rlvr environment (``envs``: each row's, the
        one its episode ran in) judges its own answer."""
        from rlvr.integrations.trl.episodes import episode_of
        from rlvr.rewards.base import prompt_text

        stop = {*self.eos_token_ids, self._tokenizer.pad_token_id}
        eps = []
        for j, g in enumerate(guards):
            ep = episode_of(
                out[3][j],
                out[1][j],
                out[2][j] if out[2] is not None else None,
                g.outcomes,
                prompt=prompt_text(prompts[j]),
                tokenizer=self._tokenizer,
                stop_ids=stop,
                max_iterations=self.max_iterations,
                dead=g.dead,
                env_faults=self.fa.env_faults,
            )
            judge = getattr(getattr(envs[j], "_rlvr_env", None), "reward", None)
            if callable(judge) and ep.fault(self.fa.env_faults) is None and self._gen is not None:
                ep.judge(judge, self._gen.rows[rows[j]], len(ep.turns))
            eps.append(ep)
        return eps

    def _get_tool_suffix_ids(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        """TRL's tokens of the tool results, except that a result's text never becomes special tokens:
        a tool that prints ``<eos>`` or ``<|im_end|>`` gives those characters as ordinary tokens (as
        rlvr's engine tokenizes tool results), not a stop or a turn boundary the policy never wrote.
        Results without a special token's text go through TRL unchanged."""
        tok = self._tokenizer
        specials = [s for s in getattr(tok, "all_special_tokens", []) if s]
        texts = [m.get("content") for m in tool_messages]
        if self._is_vlm or not any(isinstance(c, str) and any(s in c for s in specials) for c in texts):
            return cast(list[int], super()._get_tool_suffix_ids(tool_messages))
        marks = [f"\x00rlvr-result-{k}\x00" for k in range(len(tool_messages))]
        dummy = [
            {"role": "user", "content": "dummy"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}],
            },
        ]
        render = partial(
            tok.apply_chat_template,
            tokenize=False,
            chat_template=self.chat_template,
            **cast(dict[str, Any], self.chat_template_kwargs),
        )
        prefix = render(dummy, add_generation_prompt=False)
        full = render(dummy + [dict(m, content=mk) for m, mk in zip(tool_messages, marks)], add_generation_prompt=True)
        suffix = full[len(prefix) :] if full.startswith(prefix) else full
        ids: list[int] = []
        for k, mark in enumerate(marks):  # the template's own text as TRL tokenizes it, each result split
            head, _, suffix = suffix.partition(mark)
            ids += tok(head, add_special_tokens=False)["input_ids"]
            content = texts[k] if isinstance(texts[k], str) else json.dumps(texts[k])
            ids += tok(content, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        return ids + list(tok(suffix, add_special_tokens=False)["input_ids"])

    def eval_turns(self, chunk: list[Any]) -> tuple[Any, list[list[int]]]:
        """Held-out episodes for rlvr's greedy evaluation (``turns_for`` of
        :func:`rlvr.sampling.evaluate.greedy_eval`): each sample with a fresh environment and no injected
        fault, its turns rendered exactly as TRL's tool loop renders them (the chat template's text
        after a call, then TRL's tool suffix), so the policy is measured in the format it trains in."""
        from rlvr.integrations.trl.episodes import EvalEnvironment
        from rlvr.rewards.base import prompt_text
        from rlvr.sampling.turns import Turns

        tok = self._tokenizer
        rows = [{"prompt": s.prompt, "gold": s.gold, "task": s.task, "prompt_id": s.id, **s.extra} for s in chunk]
        if self._after_call is None:
            self._after_call = _after_call_ids(self.processing_class, self.chat_template)

        def render(result: str, name: str) -> list[int]:
            assert self._after_call is not None
            return self._after_call + list(
                self._get_tool_suffix_ids([{"role": "tool", "name": name or "tool", "content": result}])
            )

        turns = Turns(
            tok,
            lambda: EvalEnvironment(self),
            rows,
            [f"eval:{s.id}" for s in chunk],
            [prompt_text(s.prompt) for s in chunk],
            max_turns=min(self.max_iterations, 15) + 1,
            timeout_s=self.tool_timeout_s,
            max_result_chars=self.max_result_chars,
            env_faults=self.fa.env_faults,
            render_result=render,
        )
        prompts = []
        for s, obs in zip(chunk, turns.observations):
            msgs = (
                [dict(m) for m in s.prompt] if isinstance(s.prompt, list) else [{"role": "user", "content": s.prompt}]
            )
            if obs:  # joined as TRL joins an observation: appended to the last message
                msgs[-1]["content"] = f"{msgs[-1]['content']}{obs}"
            ids = self.processing_class.apply_chat_template(
                msgs,
                tools=self.tools or None,
                tokenize=True,
                add_generation_prompt=True,
                return_dict=True,
                chat_template=self.chat_template,
                **cast(dict[str, Any], self.chat_template_kwargs),
            )
            prompts.append(list(ids["input_ids"]))
        return turns, prompts

    def _local_views(self, rows: list[dict[str, Any]], completion_ids: list[list[int]]) -> list[RolloutView]:
        """Each row as the failure-aware step sees it, scored by this trainer's reward functions
        (called as TRL calls them; rlvr's rewards cache their verdicts, so TRL's own call after
        this verifies nothing again)."""
        texts = self.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        completions: list[Any] = texts
        if rows and isinstance(rows[0].get("prompt"), list):
            completions = [[{"role": "assistant", "content": t}] for t in texts]
        values = self._call_rewards(rows, completions, completion_ids)
        return self._views(rows, completion_ids, texts, completions, values)

    def _views(
        self,
        rows: list[dict[str, Any]],
        completion_ids: list[list[int]],
        texts: list[str],
        completions: list[Any],
        values: list[list[float | None]],
        episodes: list[Any] | None = None,
    ) -> list[RolloutView]:
        """Views from each reward function's values per row; verdicts and components from what rlvr's
        rewards kept of their last call (``.last``), rlvr's verifier for rows none of them verified.
        ``episodes``: the rows are episodes (their cause, events, answer and finish join the view)."""
        import dataclasses

        from rlvr.episodes.episode import env_scored

        verdicts, components, weights = self._kept(rows, completions, values)
        stop = {*self.eos_token_ids, self._tokenizer.pad_token_id}
        version = self.state.global_step
        owned = self.fa.env_faults
        out = []
        for i, r in enumerate(rows):
            finish = "length" if not completion_ids[i] or completion_ids[i][-1] not in stop else "eos"
            vals = values[i]
            present = [(w, v) for w, v in zip(self.reward_weights.tolist(), vals) if v is not None]
            total = sum(w * v for w, v in present) if present else None  # TRL's nansum of what applied
            view = RolloutView(
                prompt_key(r),
                verdicts[i],
                total,
                components[i],
                finish,
                texts[i],
                version,
                weights,
                unscored=not present,
                values=tuple(vals),
            )
            ep = episodes[i] if episodes is not None else None
            if ep is not None:
                view = dataclasses.replace(
                    view,
                    finish=ep.finish,
                    text=ep.answer,
                    episode=ep.cause(owned),
                    events=tuple(e.cause for e in ep.events),
                )
                if ep.reward is not None:
                    view = env_scored(view, ep)
            out.append(view)
        return out

    def _call_rewards(
        self, rows: list[dict[str, Any]], completions: list[Any], completion_ids: list[list[int]]
    ) -> list[list[float | None]]:
        """Every reward function's value for this process's rows (None where it declined), through
        TRL's own ``_calculate_rewards`` (reward models, async functions, environments, exactly as TRL
        calls them) with its logging hooks silenced: TRL's own call after this one logs. Every process
        calls it together (TRL gathers the values)."""
        prompts = [r.get("prompt") for r in rows]
        quiet = {"_log_completion_extra": lambda *a, **k: None, "_log_metric": lambda *a, **k: None}
        vars(self).update(quiet)  # shadow the two hooks on this instance for this one call
        try:
            got = GRPOTrainer._calculate_rewards(self, rows, prompts, completions, completion_ids)
        finally:
            for name in quiet:
                vars(self).pop(name, None)
        n, rank = len(rows), self.accelerator.process_index
        return _values(got[rank * n : (rank + 1) * n])

    def _kept(
        self, rows: list[dict[str, Any]], completions: list[Any], values: list[list[float | None]]
    ) -> tuple[list[Verdict | None], list[dict[str, Any]], dict[str, float]]:
        n = len(rows)
        verdicts: list[Verdict | None] = [None] * n
        components: list[dict[str, Any]] = [{} for _ in range(n)]
        weights: dict[str, float] = {}
        for k, (func, name) in enumerate(zip(self.reward_funcs, self.reward_func_names)):
            scored = func.last if isinstance(func, Reward) and len(func.last) == n else None
            for i in range(n):
                if scored is not None and scored[i].verdict is not None and verdicts[i] is None:
                    verdicts[i] = scored[i].verdict
                parts = scored[i].info.get("components") if scored is not None else None
                if parts:
                    components[i].update(parts)
                else:
                    components[i][name] = values[i][k]
            if scored and scored[0].info.get("weights"):
                weights = dict(scored[0].info["weights"])
        for i, r in enumerate(rows):  # no rlvr reward verified this row: rlvr's verifier does, given a gold
            if verdicts[i] is None and verifiable(r):
                verdicts[i] = _verify_row(r, completions[i])
        return verdicts, components, weights

    # ------------------------------------------------------------------ the decision
    def _calculate_rewards(
        self,
        inputs: list[dict[str, Any]],
        prompts: list[Any],
        completions: list[Any],
        completion_ids_list: list[list[int]],
    ) -> torch.Tensor:
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        gen = self._gen
        if gen is None or not self.model.training:
            return rewards_per_func
        from accelerate.utils import gather_object

        n, rank = len(inputs), self.accelerator.process_index
        values = _values(rewards_per_func[rank * n : (rank + 1) * n])  # TRL gathered them: this process's rows
        texts = self.processing_class.batch_decode(completion_ids_list, skip_special_tokens=True)
        eps = gen.episodes
        views = self._views(inputs, completion_ids_list, texts, completions, values, eps)
        gathered = gather_object(
            [
                (rank, v, gen.first_causes[i] if gen.first_causes else None, r, eps[i] if eps is not None else None)
                for i, (v, r) in enumerate(zip(views, inputs))
            ]
        )
        gen.views = [g[1] for g in gathered]
        gen.ranks = [g[0] for g in gathered]
        gen.rows_all = [g[3] for g in gathered]
        gen.episodes_all = [g[4] for g in gathered] if eps is not None else None
        gen.first_all = [g[2] for g in gathered]
        if not self._masks_rows():  # else after TRL's vLLM correction has masked its rows
            self._decide(gen)
        return rewards_per_func

    def _masks_rows(self) -> bool:
        """Whether TRL's vLLM correction rejects whole rows (``sequence_mask``): those become the
        ``off_policy`` cause, so the decision waits for TRL's importance ratio."""
        return bool(
            getattr(self, "use_vllm", False)
            and getattr(self, "vllm_importance_sampling_correction", False)
            and getattr(self, "vllm_importance_sampling_mode", "") == "sequence_mask"
        )

    def _decide(self, gen: _Generation, rejected: list[bool] | None = None) -> None:
        """The failure step's decision over every process's rows (``rejected``: rows TRL's vLLM
        sequence mask zeroed, cause ``off_policy``: out of their group's statistics too)."""
        import dataclasses

        if rejected is not None:
            gen.views = [dataclasses.replace(v, off_policy=r) for v, r in zip(gen.views, rejected)]
        first = [c for c in gen.first_all if c is not None]
        gen.decision = self.fa.decide(
            gen.views,
            self.state.global_step + 1,
            first_causes=first if len(first) == len(gen.first_all) else None,
            drop_uninformative=self.failure.dynamic_sampling > 0,
            down=(gen.redraws is not None and gen.redraws.down) if gen.episodes is not None else None,
        )
        if gen.episodes_all is not None:  # the same tool metrics as rlvr's engine logs
            from rlvr.episodes import tool_metrics

            gen.decision.metrics.update(tool_metrics(gen.episodes_all))
        if rejected is not None:
            gen.decision.metrics["offpolicy/rejected"] = sum(rejected) / max(len(rejected), 1)
        for k, v in gen.decision.metrics.items():  # TRL's own logging carries rlvr's metrics too
            if isinstance(v, int | float) and not isinstance(v, bool):
                self._metrics["train"][k].append(float(v))

    # ------------------------------------------------------------------ the loss
    #: TRL's loss types that average over rows (each micro-batch divides by its own row count).
    ROW_MEAN_LOSSES = ("grpo", "sapo", "dr_grpo", "luspo")

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """Excluded rows leave the loss mask (and so the token normalisers: ``num_items_in_batch`` was
        counted on trained tokens only). For the losses that average over rows, TRL divides each
        micro-batch by its own row count; the loss is rescaled so that every trained row of the
        generation batch weighs ``1 / trained rows`` (per optimizer step), wherever the shuffle put it:
        ``rows in this micro-batch x processes x steps_per_generation / trained rows``. Rows stay in
        the batch (TRL gathers per-row metrics across processes: shapes must agree)."""
        inputs = dict(inputs)
        admit = inputs.pop("rlvr_admit", None)
        rows = inputs.pop("rlvr_trained_rows", None)
        step_scale = inputs.pop("rlvr_step_scale", None)
        self._pending_bits = inputs.pop("rlvr_bitmask", None)
        scale = 1.0
        if admit is not None:
            inputs["completion_mask"] = inputs["completion_mask"] * admit[:, None].to(inputs["completion_mask"].dtype)
            if self.loss_type in self.ROW_MEAN_LOSSES and rows is not None:
                spg = cast(int, self.args.steps_per_generation)
                scale = admit.numel() * self.accelerator.num_processes * spg / max(int(rows), 1)
        if step_scale is not None:  # a thin step moves the weights by its admitted share
            scale *= float(step_scale)
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._pending_bits = None
        return loss * scale if scale != 1.0 else loss

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        **kw: Any,
    ) -> tuple[Any, Any, Any]:
        bits = self._pending_bits
        if (
            bits is None
            or bits.shape[0] != input_ids.shape[0]
            or any(v is not None for v in kw.values() if not isinstance(v, bool))
        ):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, **kw
            )
        return self._masked_logps(model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, bits)

    def _masked_logps(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None,
        compute_entropy: bool,
        bits: torch.Tensor,
    ) -> tuple[Any, Any, None]:
        """Per-token log-probs (and entropies) of the sampled tokens under their sampling masks."""
        from rlvr.algo.loss import token_logprobs
        from rlvr.decoding.constrain import unpack_bits

        bits = _fit_bits(bits, logits_to_keep).to(input_ids.device)
        batch_size = batch_size or input_ids.shape[0]
        logps, ents = [], []
        for s in range(0, input_ids.shape[0], batch_size):
            ids, am = input_ids[s : s + batch_size], attention_mask[s : s + batch_size]
            with self.accelerator.autocast():
                logits = model(input_ids=ids, attention_mask=am, logits_to_keep=logits_to_keep + 1).logits[:, :-1]
            logits = logits.float() / self.temperature
            b = bits[s : s + batch_size]
            masked = (b != -1).any(-1)
            if bool(masked.any()):
                allowed = unpack_bits(b, logits.shape[-1]) | ~masked[..., None]
                logits = logits.masked_fill(~allowed, float("-inf"))
            comp = ids[:, -logits_to_keep:]
            logps.append(token_logprobs(logits, comp, 1.0))
            if compute_entropy:
                lp = torch.log_softmax(logits, -1)
                ents.append(-(lp.exp() * lp.nan_to_num(neginf=0.0)).sum(-1))
        return torch.cat(logps), (torch.cat(ents) if compute_entropy else None), None

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)
        if self.accelerator.is_main_process:
            folder = Path(cast(str, self.args.output_dir)) / f"checkpoint-{self.state.global_step}"
            if folder.is_dir():  # written whole or not at all: its presence marks a finished save
                tmp = folder / (STATE_FILE + ".tmp")
                tmp.write_text(json.dumps(self.fa.state_dict()))
                os.replace(tmp, folder / STATE_FILE)

    def _load_optimizer_and_scheduler(self, checkpoint: Any) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint and (Path(checkpoint) / STATE_FILE).exists():
            step = int(Path(checkpoint).name.rsplit("-", 1)[-1])
            self.fa.load_state_dict(json.loads((Path(checkpoint) / STATE_FILE).read_text()), self.run_dir, step)


# ---------------------------------------------------------------------- helpers


def prompt_key(row: dict[str, Any]) -> str:
    """The prompt a row stands for (quarantine counts per prompt): its ``prompt_id`` column when the
    dataset has one, else a digest of its prompt (of the whole row when it has none: environment-owned
    data), so no column is added to the user's rows.

    Examples:
        >>> prompt_key({"prompt_id": 7, "prompt": "x"}), prompt_key({"prompt": "2+2"}) == prompt_key({"prompt": "2+2"})
        ('7', True)
    """
    if row.get("prompt_id") is not None:
        return str(row["prompt_id"])
    what = row.get("prompt", row)
    return hashlib.sha1(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


def verifiable(row: dict[str, Any]) -> bool:
    """Whether rlvr's verifier can judge this row (it has a gold answer, tests or constraints)."""
    return any(row.get(c) is not None for c in VERIFIABLE)


def _scale(scale_rewards: Any) -> Scale:
    """TRL's ``scale_rewards`` (``group``, ``batch``, ``none``, or the older booleans) as rlvr's."""
    return scale_of(scale_rewards if isinstance(scale_rewards, bool) else str(scale_rewards))


def _what_it_tells(dataset: Any, reward_funcs: Sequence[Any], episodes: Any) -> str:
    """What the failure step can tell apart on this trainer's data and rewards (logged once at start)."""
    columns = set(getattr(dataset, "column_names", None) or [])
    verifies = any(isinstance(f, Reward) and f.needs_verdict for f in reward_funcs)
    base = "truncated; invalid (a row no reward function could score)"
    if episodes:
        base += "; tool and environment faults (tool_error, env_timeout, env_crash) and the policy's own"
    if verifies or columns & set(VERIFIABLE):
        return f"verifying each completion (correct / wrong / no_answer / bad_gold), and {base}"
    return (
        f"no gold column and no rlvr reward: rows are scored by the reward functions alone (cause 'scored'); "
        f"it still tells {base}. Add a gold column ({' / '.join(GOLD_COLUMNS)}) to tell format deaths from "
        "verification deaths"
    )


def _check_episodes(kwargs: dict[str, Any], constrain: Any) -> Any:
    """TRL's ``tools`` / ``environment_factory`` checked before TRL builds anything (every tool can be
    described; one environment can be built; the chat template can render a tool call); returns the
    factory guarded (:func:`rlvr.integrations.trl.episodes.guard_factories`)."""

    from rlvr.integrations.trl.episodes import check_tools, guard_factories, trl_methods

    if (isinstance(constrain, DecodingConfig) and constrain.constrain != "none") or (
        constrain is not None and not isinstance(constrain, DecodingConfig)
    ):
        raise ConfigError(
            "decoding.constrain with tools: the answer grammar would have to admit tool calls, which "
            "it does not; constrain: none for episodes with tools"
        )
    check_tools(kwargs.get("tools") or [], "tools")
    factory = kwargs.get("environment_factory")
    factories = factory if isinstance(factory, dict) else ({None: factory} if factory is not None else {})
    for name, f in factories.items():
        where = f"environment_factory[{name!r}]" if name is not None else "environment_factory"
        try:
            env = f()
        except Exception as e:
            raise ConfigError(f"{where}: the environment cannot be built: {type(e).__name__}: {e}") from None
        if not callable(getattr(env, "reset", None)):
            raise ConfigError(f"{where}: {type(env).__name__} has no reset(**row) method")
        check_tools(trl_methods(env), where)
    tok = kwargs.get("processing_class")
    if tok is not None:
        from trl.chat_template_utils import supports_tool_calling

        if not supports_tool_calling(tok):
            raise ConfigError(
                "tools on TRL: the tokenizer's chat template cannot render a tool call and its result "
                "(TRL renders every turn through it); use a model whose template does (Qwen2.5/3, "
                "Llama 3.1, rlvr's tiny model), or set tokenizer.chat_template to one that does"
            )
    return guard_factories(factory)


def _after_call_ids(tok: Any, chat_template: str | None) -> list[int]:
    """The tokens the chat template writes after a tool call, to the end of the assistant's turn (what
    the policy emits before TRL appends the result: ``<eos>`` for the tiny model, ``<|im_end|>`` and
    a newline for Qwen)."""
    call = [{"type": "function", "function": {"name": "f", "arguments": {}}}]
    text = tok.apply_chat_template(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": call}],
        tokenize=False,
        chat_template=chat_template,
    )
    at = text.rfind("</tool_call>")
    tail = text[at + len("</tool_call>") :] if at >= 0 else ""
    return list(tok(tail, add_special_tokens=False)["input_ids"]) if tail else []


def _values(rewards_per_func: torch.Tensor) -> list[list[float | None]]:
    """TRL's ``[N, F]`` rewards (NaN: the function declined the row) as lists with None."""
    return [[None if v != v else float(v) for v in row] for row in rewards_per_func.tolist()]


def _verify_row(row: dict[str, Any], completion: Any) -> Verdict:
    from rlvr.rewards.base import completion_text
    from rlvr.rewards.verdicts import row_verdicts

    cols = {k: [v] for k, v in row.items() if k != "completion"}  # the prompt too: the question
    try:
        return row_verdicts([completion_text(completion)], cols)[0]
    except Exception as e:  # a row rlvr cannot read: invalid, said why, never a silent "wrong"
        return Verdict(Status.ERROR, reason=f"{type(e).__name__}: {e}"[:200])


def _stack_bits(bits: list[torch.Tensor | None], length: int, words: int) -> torch.Tensor:
    """Rows' masks ``[T_i, W]`` as one ``[N, length, W]`` tensor (-1: unmasked)."""
    out = torch.full((len(bits), max(length, 1), words), -1, dtype=torch.int32)
    for i, b in enumerate(bits):
        if b is not None and len(b):
            n = min(len(b), out.shape[1])
            out[i, :n] = b[:n]
    return out


def _fit_bits(bits: torch.Tensor, length: int) -> torch.Tensor:
    if bits.shape[1] >= length:
        return bits[:, :length]
    pad = torch.full((bits.shape[0], length - bits.shape[1], bits.shape[2]), -1, dtype=bits.dtype)
    return torch.cat([bits, pad], 1)


def _vllm_structured_output(args: Any, decoding: DecodingConfig, tags: tuple[str | None, str]) -> None:
    """On TRL's vLLM path the answer grammar goes to vLLM as structured output (a regex)."""
    if decoding.constrain != "full":
        raise ConfigError(
            f"decoding.constrain: {decoding.constrain} with vLLM: vLLM's structured output takes one "
            "pattern for the whole output, so only 'full' can be given to it; use full, or TRL's "
            "transformers generation (use_vllm: false) for the lazy answer trigger"
        )
    from rlvr.decoding.grammars import output_regex

    if args.vllm_structured_outputs_regex is None:
        args.vllm_structured_outputs_regex = output_regex(decoding.answer, think_tag=tags[0], answer_tag=tags[1])
