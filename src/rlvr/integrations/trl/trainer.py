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
  old-log-prob or reference forward is spent on them, by the redraw loop every engine shares
  (:func:`rlvr.sampling.rows.redraw` over :class:`.rows.TRLRows`); every process joins every round,
  so sharded models (FSDP, ZeRO-3) stay in step;
* ``_generate`` (with tools): each row's tools under a guard, each row read back as an episode, the
  failed episodes redrawn whole by the same loop; ``_get_tool_suffix_ids``: a tool result is text;
  with ``conversation`` (an environment that answers the policy's turns), TRL's ``rollout_func``
  samples each episode in rlvr's loop (:mod:`.conversations`) and the failed ones are redrawn the same way;
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

The class only wires; what its overrides run lives in :mod:`.constrained` (the grammar),
:mod:`.tool_loop` (TRL's tool loop under guards), :mod:`.views` (each row as the failure step sees
it) and :mod:`.rows`. TRL's own logging (console, TensorBoard, W&B) keeps working; rlvr's metrics
join it under the names rlvr's engine uses, and the run folder (:mod:`.runfolder`) is the same as
rlvr's engine writes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from accelerate.utils import gather_object
from trl import GRPOConfig, GRPOTrainer

from rlvr.config import DecodingConfig, FailureConfig
from rlvr.decoding.constrain import forced_tokens
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.redraws import Redraws
from rlvr.diagnostics.step import Decision, FailureAware, RolloutView
from rlvr.episodes import tool_metrics
from rlvr.integrations.trl.constrained import (
    constrained_generate,
    cut,
    make_constrainer,
    masked_logps,
    stack_bits,
    vllm_structured_output,
)
from rlvr.integrations.trl.conversations import ConversationRollout, conversation_rollout, converse
from rlvr.integrations.trl.rows import GatheredRow, Processes, TRLRows, padded
from rlvr.integrations.trl.runfolder import STATE_FILE, RunFolder
from rlvr.integrations.trl.sampler import QuarantineRepeatSampler
from rlvr.integrations.trl.tool_loop import (
    check_episodes,
    episode_rows,
    eval_turns,
    fresh,
    guard_rows,
    put_back,
    read_episodes,
    tool_batch,
    tool_suffix_ids,
)
from rlvr.integrations.trl.views import (
    local_views,
    prompt_key,
    row_views,
    trl_scale,
    values_of,
    what_it_tells,
)
from rlvr.sampling.rows import Replaced, redraw

logger = logging.getLogger(__name__)


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
        conversation: instead of tools, an rlvr environment class that answers the policy's turns
            (``respond``): its episodes sampled in rlvr's loop through TRL's ``rollout_func`` (:mod:`.conversations`).
        max_turns: with ``conversation``: the policy's turns per episode (``turn_limit`` past them).
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
    # (a trainer built without __init__, as TRL's own dispatch tests build one, has none)
    conversation: ConversationRollout | None = None

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
        conversation: type | None = None,
        max_turns: int = 4,
        **kwargs: Any,
    ) -> None:
        self.failure = failure or FailureConfig()
        self.conversation = conversation_rollout(  # sampled in rlvr's loop, through TRL's rollout_func
            conversation, kwargs, constrain, max_turns, tool_timeout_s, max_result_chars, env_faults
        )
        self.truncation = truncation  # injected (tests, benchmarks): rlvr.decoding.truncation.Truncation
        self.tool_timeout_s, self.max_result_chars, self.env_faults = tool_timeout_s, max_result_chars, env_faults
        if kwargs.get("tools") or kwargs.get("environment_factory") is not None:
            kwargs["environment_factory"] = check_episodes(kwargs, constrain)
        args_ = kwargs.get("args") or (args[2] if len(args) > 2 else None)
        decoding = constrain if isinstance(constrain, DecodingConfig) else None
        if decoding is not None and decoding.constrain != "none" and args_ is not None and args_.use_vllm:
            vllm_structured_output(args_, decoding, tags)
        super().__init__(*args, **kwargs)
        self.max_iterations = int(self.max_tool_calling_iterations)
        self._after_call: list[int] | None = None
        think, answer = tags
        self.fa = FailureAware(
            self.failure,
            group_size=self.num_generations,
            scale_rewards=trl_scale(self.scale_rewards),
            advantage_clip=advantage_clip,
            think_tag=think or "think",
            answer_tag=answer,
            run_dir=None,
            objective=cast(Any, self.multi_objective_aggregation),
            weights=self.reward_weights.tolist(),
        )
        if self.conversation is not None:  # checked against TRL's settings; this run's causes of the environment's
            self.conversation.attach(self)
        self.run_dir = Path(cast(str, run_dir or self.args.output_dir))
        if self.accelerator.is_main_process:
            self.fa.run_dir = self.run_dir  # quarantine.jsonl: one writer
        self.constrainer = make_constrainer(self, constrain, tags) if not self.use_vllm else None
        # held-out evaluation decodes under the grammar only where decoding.in_eval says so (as on
        # rlvr's engine): unconstrained, it judges what the policy writes by itself
        self.eval_constrainer = self.constrainer if decoding is None or decoding.in_eval else None
        self.jump_forward = decoding.jump_forward if decoding is not None else True
        self.run_folder = RunFolder(self, eval_rows or [], eval_every, log_rollouts)
        self.add_callback(self.run_folder)
        episodic = self.tools or self.environment_factories or self.conversation
        self.telling = what_it_tells(self.train_dataset, self.reward_funcs, episodic)
        logger.info("FailureAwareGRPOTrainer: %s", self.telling)

    # ------------------------------------------------------------------ construction

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
            out["rlvr_bitmask"] = stack_bits(gen.bits, width, self.constrainer.words)
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
            self._pending_bits = stack_bits(
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
            ids, lp, bits = constrained_generate(self, prompt_ids)
        if self.truncation is not None and self.model.training and not self.tools:
            ids, lp, bits = cut(self, prompt_ids, num_generations, ids, lp, bits)
        return ids, lp, bits

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
            views = local_views(self, [gen.rows[i] for i in rows], ids)
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
        if self.conversation is not None and gen is not None and self.model.training:
            return converse(self, gen, prompts, lambda sub: super(FailureAwareGRPOTrainer, self)._generate(sub))
        if not self.tools or gen is None or not self.model.training:
            return super()._generate(prompts)

        step = self.state.global_step + 1
        rows = list(range(len(prompts)))
        first_envs = [self.environments[i] if self.environments else None for i in rows]
        guards = guard_rows(self, rows, first_envs, step, 0)
        self._sync_tool_dicts, self._async_tool_dicts = list(guards), [{} for _ in rows]  # where TRL looks
        out = list(super()._generate(prompts))
        eps = read_episodes(self, out, guards, prompts, rows, first_envs)

        def scored(sub: list[int], got: Sequence[Any], eps: list[Any], envs: list[Any]) -> TRLRows:
            return episode_rows(self, [gen.rows[i] for i in sub], got, eps, envs, step)

        def again(bad: list[int], attempt: int, width: int) -> TRLRows:
            sub = padded(bad, width)  # a process with fewer rows to redraw still joins TRL's gathers
            sub_prompts, envs = fresh(self, gen.rows, sub)
            guards_sub = guard_rows(self, sub, envs, step, attempt)
            with tool_batch(self, guards_sub, envs, sub):  # TRL's per-batch tool state, for these rows
                new = super(FailureAwareGRPOTrainer, self)._generate(sub_prompts)
            return scored(sub, new, read_episodes(self, list(new), guards_sub, sub_prompts, sub, envs), envs)

        drawn = self._redraw(gen, scored(rows, out, eps, first_envs), again)
        put_back(out, drawn)
        if self.environments is not None:
            self.environments[:] = cast(list[Any], drawn.columns[-1])
        gen.episodes = drawn.episodes
        return tuple(out)

    def _get_tool_suffix_ids(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        """TRL's tokens of the tool results, a result's text never read as special tokens
        (:func:`rlvr.integrations.trl.tool_loop.tool_suffix_ids`)."""
        return tool_suffix_ids(self, tool_messages)

    def eval_turns(self, chunk: list[Any]) -> tuple[Any, list[list[int]]]:
        """Held-out episodes for rlvr's greedy evaluation, rendered as TRL's tool loop renders them
        (:func:`rlvr.integrations.trl.tool_loop.eval_turns`)."""
        return eval_turns(self, chunk)

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
        n, rank = len(inputs), self.accelerator.process_index
        values = values_of(rewards_per_func[rank * n : (rank + 1) * n])  # TRL gathered them: this process's rows
        texts = self.processing_class.batch_decode(completion_ids_list, skip_special_tokens=True)
        eps = gen.episodes
        views = row_views(self, inputs, completion_ids_list, texts, completions, values, eps)
        gathered: list[GatheredRow] = gather_object(
            [
                GatheredRow(rank, v, gen.first_causes[i] if gen.first_causes else None, r, eps[i] if eps else None)
                for i, (v, r) in enumerate(zip(views, inputs))
            ]
        )
        gen.views = [g.view for g in gathered]
        gen.ranks = [g.rank for g in gathered]
        gen.rows_all = [g.row for g in gathered]
        gen.episodes_all = [g.episode for g in gathered] if eps is not None else None
        gen.first_all = [g.first_cause for g in gathered]
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
        return masked_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, bits)

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
