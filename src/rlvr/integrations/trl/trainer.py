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

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from trl import GRPOConfig, GRPOTrainer

from rlvr.config import DecodingConfig, FailureConfig
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import Decision, FailureAware, RolloutView
from rlvr.errors import ConfigError
from rlvr.integrations.trl.sampler import QuarantineRepeatSampler
from rlvr.rewards.base import GOLD_COLUMNS, Reward
from rlvr.types import Status, Verdict

STATE_FILE = "rlvr_failure.json"
_NO_LOG = {"log_extra": lambda *a, **k: None, "log_metric": lambda *a, **k: None}


@dataclass
class _Generation:
    """What one generation batch carries from sampling to the loss (this process's rows)."""

    rows: list[dict[str, Any]]
    bits: list[torch.Tensor | None] = field(default_factory=list)  # per row [T_i, W] sampling masks
    first_causes: list[Cause] | None = None
    replaced: list[dict[str, Any]] = field(default_factory=list)
    decision: Decision | None = None
    views: list[RolloutView] = field(default_factory=list)  # every process's rows, gathered
    ranks: list[int] = field(default_factory=list)
    rows_all: list[dict[str, Any]] = field(default_factory=list)


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

    def __init__(self, *args: Any, failure: FailureConfig | None = None, constrain: Any = None,
                 advantage_clip: float | None = None, run_dir: str | Path | None = None,
                 eval_rows: list[Any] | None = None, eval_every: int = 0, log_rollouts: bool = True,
                 tags: tuple[str | None, str] = ("think", "answer"), **kwargs: Any) -> None:
        self.failure = failure or FailureConfig()
        train = kwargs.get("train_dataset")
        if train is not None and hasattr(train, "column_names"):
            _check_columns(train.column_names)
            if "prompt_id" not in train.column_names:  # quarantine counts per prompt: give each one an id
                train = train.add_column("prompt_id", [str(i) for i in range(len(train))])
                kwargs["train_dataset"] = train
        args_ = kwargs.get("args") or (args[2] if len(args) > 2 else None)
        decoding = constrain if isinstance(constrain, DecodingConfig) else None
        if decoding is not None and decoding.constrain != "none" and args_ is not None and args_.use_vllm:
            _vllm_structured_output(args_, decoding, tags)
        super().__init__(*args, **kwargs)
        self._prompt_ids = list(self.train_dataset["prompt_id"]) if self.train_dataset is not None else []
        think, answer = tags
        self.fa = FailureAware(self.failure, group_size=self.num_generations,
                               scale_rewards=self.scale_rewards != "none", advantage_clip=advantage_clip,
                               think_tag=think or "think", answer_tag=answer, run_dir=None)
        self.run_dir = Path(cast(str, run_dir or self.args.output_dir))
        if self.accelerator.is_main_process:
            self.fa.run_dir = self.run_dir  # quarantine.jsonl: one writer
        self.constrainer = self._make_constrainer(constrain, tags) if not self.use_vllm else None
        self.jump_forward = decoding.jump_forward if decoding is not None else True
        self._gen: _Generation | None = None
        self._pending_bits: torch.Tensor | None = None
        from rlvr.integrations.trl.runfolder import RunFolder

        self.run_folder = RunFolder(self, eval_rows or [], eval_every, log_rollouts)
        self.add_callback(self.run_folder)

    # ------------------------------------------------------------------ construction
    def _make_constrainer(self, constrain: Any, tags: tuple[str | None, str]) -> Any:
        if constrain is None or (isinstance(constrain, DecodingConfig) and constrain.constrain == "none"):
            return None
        if not isinstance(constrain, DecodingConfig):
            return constrain  # a ready Constrainer
        from rlvr.decoding.constrain import Constrainer

        d = constrain
        vocab = self.model.get_output_embeddings().weight.shape[0]
        return Constrainer(self.processing_class, vocab, mode=d.constrain, answer=d.answer, schema=d.json_schema,
                           think_tag=tags[0], answer_tag=tags[1], reasoning_budget=d.reasoning_budget,
                           answer_tokens=d.answer_tokens, max_chars=d.max_chars, engine=d.engine)

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        ids = self._prompt_ids if dataset is None else list(dataset["prompt_id"])
        return QuarantineRepeatSampler(
            dataset if dataset is not None else self.train_dataset, mini_repeat_count=self.num_generations,
            batch_size=cast(int, self.args.generation_batch_size) // self.num_generations,  # set by GRPOConfig
            repeat_count=self.num_iterations * cast(int, self.args.steps_per_generation), shuffle=self.shuffle_dataset,
            seed=self.args.seed, skip=lambda i: self.fa.skip(ids[i]))

    # ------------------------------------------------------------------ sampling and resampling
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        self._gen = gen = _Generation(rows=list(inputs))
        try:
            out = super()._generate_and_score_completions(inputs)
        finally:
            self._pending_bits = None
        d = gen.decision
        assert d is not None, "the decision is made in _calculate_rewards"
        n = len(inputs)
        here = slice(self.accelerator.process_index * n, (self.accelerator.process_index + 1) * n)
        device = out["advantages"].device
        admit = d.admit[here].to(device)
        out["advantages"] = d.advantages[here].to(device=device, dtype=out["advantages"].dtype)
        out["rlvr_admit"] = admit
        mask = out["completion_mask"] if "tool_mask" not in out else out["completion_mask"] * out["tool_mask"]
        kept_tokens = (mask * admit[:, None]).sum()
        out["num_items_in_batch"] = self.accelerator.gather(kept_tokens).sum()  # the normaliser: admitted only
        if self.constrainer is not None:
            out["rlvr_bitmask"] = _stack_bits(gen.bits, out["completion_ids"].shape[1], self.constrainer.words)
        self.run_folder.record_generation(self, gen, out)
        return out

    def _generate_single_turn(self, prompt_ids: list[list[int]], images: Any, multimodal_fields: Any,
                              num_generations: int, has_tool_images: bool = False) -> tuple[Any, Any]:
        completion_ids, logprobs, bits = self._sample(prompt_ids, images, multimodal_fields, num_generations,
                                                      has_tool_images)
        gen = self._gen
        if gen is None or not self.model.training:
            return completion_ids, logprobs
        completion_ids, logprobs, bits = self._resample(prompt_ids, completion_ids, logprobs, bits, images,
                                                        multimodal_fields, has_tool_images)
        gen.bits = bits
        if self.constrainer is not None:  # the old-log-prob and reference forwards re-apply them
            self._pending_bits = _stack_bits(bits, max((len(c) for c in completion_ids), default=1),
                                             self.constrainer.words)
        return completion_ids, logprobs

    def _sample(self, prompt_ids: list[list[int]], images: Any, multimodal_fields: Any, num_generations: int,
                has_tool_images: bool) -> tuple[list[list[int]], Any, list[torch.Tensor | None]]:
        if self.constrainer is None or images is not None or multimodal_fields:
            ids, lp = super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                    has_tool_images)
            return ids, lp, [None] * len(ids)
        return self._constrained_generate(prompt_ids)

    def _lean_sampling(self) -> bool:
        """TRL's sampling settings are ones rlvr's own loop has (temperature, top-p, one eos token):
        constrained rows are then drawn there (lean decoder, forced tokens jumped) instead of through
        ``generate`` with a logits processor, one call per token."""
        tok = self._tokenizer
        return (not self.top_k and self.min_p is None and self.repetition_penalty == 1.0
                and not self.args.generation_kwargs and list(self.eos_token_ids) == [tok.eos_token_id]
                and tok.pad_token_id is not None and self.temperature > 0)

    def _constrained_generate(self, prompt_ids: list[list[int]]
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
            from rlvr.grpo.rollout import generate

            with (unwrap_model_for_generation(self.model_wrapped, self.accelerator,
                                              gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                                              generation_kwargs=self.generation_kwargs,
                                              gradient_checkpointing_kwargs=ckpt)
                  as unwrapped, torch.no_grad(), self._dist.summon_full_params(self.model_wrapped, recurse=False)):
                # the global RNG, as generate() draws from: TRL's seeding makes it reproducible
                b = generate(unwrapped, tok, [list(p) for p in prompt_ids], group_size=1,
                             max_new_tokens=self.max_completion_length, temperature=self.temperature,
                             top_p=self.top_p, constrain=self.constrainer, jump=self.jump_forward)
            lengths = b.completion_mask.sum(1).tolist()
            assert b.bitmask is not None
            return ([b.completion_ids[i, :n].tolist() for i, n in enumerate(lengths)], None,
                    [b.bitmask[i, :n] for i, n in enumerate(lengths)])
        prompts = [torch.tensor(p) for p in prompt_ids]
        ids = pad(prompts, padding_value=tok.pad_token_id, padding_side="left", pad_to_multiple_of=multiple)
        mask = pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left",
                   pad_to_multiple_of=multiple)
        inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
        assert self.constrainer is not None  # constrained generation only runs with one
        proc = GrammarLogitsProcessor(self.constrainer, len(prompt_ids), self.max_completion_length)
        with (unwrap_model_for_generation(self.model_wrapped, self.accelerator,
                                          gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                                          generation_kwargs=self.generation_kwargs,
                                          gradient_checkpointing_kwargs=ckpt)
              as unwrapped, torch.no_grad(), self._dist.summon_full_params(self.model_wrapped, recurse=False)):
            out = unwrapped.generate(**inputs, generation_config=self.generation_config,
                                     logits_processor=LogitsProcessorList([proc]))
        completion = out[:, inputs["input_ids"].shape[1]:].cpu()
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

    def _resample(self, prompt_ids: list[list[int]], completion_ids: list[list[int]], logprobs: Any,
                  bits: list[torch.Tensor | None], images: Any, multimodal_fields: Any,
                  has_tool_images: bool) -> tuple[list[list[int]], Any, list[torch.Tensor | None]]:
        """Redraw the rows the failure-aware step names, every process joining each round."""
        gen = self._gen
        assert gen is not None
        step = self.state.global_step + 1
        completion_ids, bits = list(completion_ids), list(bits)
        logprobs = list(logprobs) if logprobs is not None else None
        for attempt in range(1, self.failure.resample_tries + 2):
            views = self._local_views(gen.rows, completion_ids)
            causes = self.fa.causes(views, step)
            if gen.first_causes is None:
                gen.first_causes = list(causes)
            if attempt > self.failure.resample_tries:
                break
            bad = self.fa.to_resample(causes)
            count = torch.tensor([len(bad)], device=self.accelerator.device)
            if int(self.accelerator.gather(count).max()) == 0:
                break
            sub = [prompt_ids[i] for i in bad] or prompt_ids[:1]  # a process with nothing to redraw still joins
            new_ids, new_lp, new_bits = self._sample(sub, images, multimodal_fields, 1, has_tool_images)
            for j, i in enumerate(bad):
                gen.replaced.append({"row": i, "attempt": attempt, "view": views[i], "cause": causes[i]})
                completion_ids[i], bits[i] = new_ids[j], new_bits[j]
                if logprobs is not None and new_lp is not None:
                    logprobs[i] = new_lp[j]
        return completion_ids, logprobs, bits

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

    def _views(self, rows: list[dict[str, Any]], completion_ids: list[list[int]], texts: list[str],
               completions: list[Any], values: list[list[float | None]]) -> list[RolloutView]:
        """Views from each reward function's values per row; verdicts and components from what rlvr's
        rewards kept of their last call (``.last``), rlvr's verifier for rows none of them verified."""
        verdicts, components, weights = self._kept(rows, completions, values)
        stop = {*self.eos_token_ids, self._tokenizer.pad_token_id}
        version = self.state.global_step
        out = []
        for i, r in enumerate(rows):
            finish = "length" if not completion_ids[i] or completion_ids[i][-1] not in stop else "eos"
            vals = values[i]
            present = [(w, v) for w, v in zip(self.reward_weights.tolist(), vals) if v is not None]
            total = sum(w * v for w, v in present) if present else None
            unscored = any(v is None and not isinstance(f, Reward) for f, v in zip(self.reward_funcs, vals))
            out.append(RolloutView(str(r.get("prompt_id", i)), verdicts[i], total, components[i], finish, texts[i],
                                   version, weights, unscored))
        return out

    def _call_rewards(self, rows: list[dict[str, Any]], completions: list[Any],
                      completion_ids: list[list[int]]) -> list[list[float | None]]:
        """Every reward function's value per row (None where it declined), called as TRL calls them."""
        keys = [k for k in rows[0] if k not in ("prompt", "completion", "completion_ids")] if rows else []
        kwargs = {k: [r.get(k) for r in rows] for k in keys}
        prompts = [r.get("prompt") for r in rows]
        values: list[list[float | None]] = [[] for _ in rows]
        for func in self.reward_funcs:
            if isinstance(func, torch.nn.Module):  # a reward model scores every row
                col: list[Any] = [0.0] * len(rows)
            else:
                col = cast(Callable[..., list[Any]], func)(prompts=prompts, completions=completions,
                                                          completion_ids=completion_ids,
                           trainer_state=self.state, **_NO_LOG, **kwargs)
            for i, v in enumerate(col):
                values[i].append(None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
        return values

    def _kept(self, rows: list[dict[str, Any]], completions: list[Any], values: list[list[float | None]]
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
        for i, r in enumerate(rows):  # no rlvr reward verified this row: rlvr's verifier does
            if verdicts[i] is None:
                verdicts[i] = _verify_row(r, completions[i])
        return verdicts, components, weights

    # ------------------------------------------------------------------ the decision
    def _calculate_rewards(self, inputs: list[dict[str, Any]], prompts: list[Any], completions: list[Any],
                           completion_ids_list: list[list[int]]) -> torch.Tensor:
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        gen = self._gen
        if gen is None or not self.model.training:
            return rewards_per_func
        from accelerate.utils import gather_object

        n, rank = len(inputs), self.accelerator.process_index
        mine = rewards_per_func[rank * n : (rank + 1) * n].tolist()  # TRL gathered them: this process's rows
        values = [[None if math.isnan(v) else v for v in row] for row in mine]
        texts = self.processing_class.batch_decode(completion_ids_list, skip_special_tokens=True)
        views = self._views(inputs, completion_ids_list, texts, completions, values)
        gathered = gather_object([(rank, v, gen.first_causes[i] if gen.first_causes else None, r)
                                  for i, (v, r) in enumerate(zip(views, inputs))])
        gen.views = [g[1] for g in gathered]
        gen.ranks = [g[0] for g in gathered]
        gen.rows_all = [g[3] for g in gathered]
        first = [g[2] for g in gathered]
        gen.decision = self.fa.decide(gen.views, self.state.global_step + 1,
                                      first_causes=first if all(c is not None for c in first) else None,
                                      drop_uninformative=self.failure.dynamic_sampling > 0)
        for k, v in gen.decision.metrics.items():  # TRL's own logging carries rlvr's metrics too
            if isinstance(v, int | float) and not isinstance(v, bool):
                self._metrics["train"][k].append(float(v))
        return rewards_per_func

    # ------------------------------------------------------------------ the loss
    #: TRL's loss types that average over rows: excluded rows must leave the denominator too.
    ROW_MEAN_LOSSES = ("grpo", "sapo", "dr_grpo", "luspo")

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """Excluded rows leave the loss mask (so the token normalisers: ``num_items_in_batch`` was
        counted on admitted rows) and, for losses that average over rows, the row count. Rows stay
        in the batch (TRL gathers per-row metrics across processes: shapes must agree)."""
        inputs = dict(inputs)
        admit = inputs.pop("rlvr_admit", None)
        self._pending_bits = inputs.pop("rlvr_bitmask", None)
        scale = 1.0
        if admit is not None and not bool(admit.all()):
            inputs["completion_mask"] = inputs["completion_mask"] * admit[:, None].to(inputs["completion_mask"].dtype)
            if self.loss_type in self.ROW_MEAN_LOSSES:
                scale = admit.numel() / max(int(admit.sum()), 1)
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._pending_bits = None
        return loss * scale if scale != 1.0 else loss

    def _get_per_token_logps_and_entropies(self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                                           logits_to_keep: int, batch_size: int | None = None,
                                           compute_entropy: bool = False, **kw: Any) -> tuple[Any, Any, Any]:
        bits = self._pending_bits
        if bits is None or bits.shape[0] != input_ids.shape[0] or any(v is not None for v in kw.values()
                                                                       if not isinstance(v, bool)):
            return super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep,
                                                              batch_size, compute_entropy, **kw)
        return self._masked_logps(model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, bits)

    def _masked_logps(self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                      batch_size: int | None, compute_entropy: bool, bits: torch.Tensor) -> tuple[Any, Any, None]:
        """Per-token log-probs (and entropies) of the sampled tokens under their sampling masks."""
        from rlvr.decoding.constrain import unpack_bits
        from rlvr.grpo.loss import token_logprobs

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
            if folder.is_dir():
                (folder / STATE_FILE).write_text(json.dumps(self.fa.state_dict()))

    def _load_optimizer_and_scheduler(self, checkpoint: Any) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint and (Path(checkpoint) / STATE_FILE).exists():
            step = int(Path(checkpoint).name.rsplit("-", 1)[-1])
            self.fa.load_state_dict(json.loads((Path(checkpoint) / STATE_FILE).read_text()), self.run_dir, step)


# ---------------------------------------------------------------------- helpers


def _check_columns(columns: list[str]) -> None:
    if "prompt" not in columns:
        raise ConfigError(f"the training dataset needs a 'prompt' column; it has {sorted(columns)}")
    if not any(c in columns for c in (*GOLD_COLUMNS, "tests", "test_spec", "constraints")):
        raise ConfigError(f"FailureAwareGRPOTrainer tells format deaths from verification deaths by verifying each "
                          f"completion: the dataset needs a gold column ({' / '.join(GOLD_COLUMNS)}); it has "
                          f"{sorted(columns)}")


def _verify_row(row: dict[str, Any], completion: Any) -> Verdict:
    from rlvr.rewards.base import completion_text
    from rlvr.rewards.verdicts import row_verdicts

    cols = {k: [v] for k, v in row.items() if k not in ("prompt", "completion")}
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
        raise ConfigError(f"decoding.constrain: {decoding.constrain} with vLLM: vLLM's structured output takes one "
                          "pattern for the whole output, so only 'full' can be given to it; use full, or TRL's "
                          "transformers generation (use_vllm: false) for the lazy answer trigger")
    from rlvr.decoding.grammars import output_regex

    if args.vllm_structured_outputs_regex is None:
        args.vllm_structured_outputs_regex = output_regex(decoding.answer, think_tag=tags[0], answer_tag=tags[1])
