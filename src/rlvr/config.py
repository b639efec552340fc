"""The training run's configuration: one typed, validated tree (YAML plus ``--set`` overrides).

Every choice is a ``Literal``; errors name the field and the fix. ``load_config``
is the only entry point the CLI uses.
"""

from __future__ import annotations

import difflib
import importlib
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rlvr.errors import ConfigError


class _Strict(BaseModel):
    # a field's docstring is its description: the config reference (docs) is generated from them
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


#: Where each registry a config names lives (``name -> (module, attribute)``): imported when a config
#: is checked, by name, since they sit above this module (the loss registry needs torch).
_REGISTRIES = {
    "loss": ("rlvr.algo.loss", "AGGREGATIONS"),
    "task": ("rlvr.data.tasks", "TASKS"),
    "tool": ("rlvr.episodes.tools", "TOOLS"),
    "reward": ("rlvr.rewards.base", "REWARDS"),
}


def registered(kind: str, name: str) -> str:
    """``name`` if the registry of ``kind`` has it, else a ``ValueError`` listing what it has (the
    config loader names the field): whatever is registered is selectable, nothing else is."""

    module, attr = _REGISTRIES[kind]
    registry = getattr(importlib.import_module(module), attr)
    registry.check(name)
    return name


class LoraConfig(_Strict):
    """Low-rank adapters (peft) instead of full fine-tuning."""

    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.0, ge=0, lt=1)
    target_modules: list[str] = ["q_proj", "k_proj", "v_proj", "o_proj"]


class ModelConfig(_Strict):
    """Which model: ``tiny`` (built from a config), a named model, or a local folder."""

    name: str = "tiny"
    """``tiny``, ``smollm2-135m``, or a path to a folder ``from_pretrained`` can read."""
    arch: Literal["qwen2", "llama"] = "qwen2"
    """The tiny model's architecture (``name: tiny``)."""
    hidden: int = Field(128, ge=8)
    """The tiny model's width."""
    layers: int = Field(2, ge=1)
    """The tiny model's layers."""
    heads: int = Field(4, ge=1)
    """The tiny model's attention heads."""
    lora: LoraConfig | None = None
    """Train low-rank adapters (peft) instead of every weight; null: full fine-tuning."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """The weights' dtype. ``bfloat16`` (with ``lora``) halves the frozen base's memory; the adapters
    (the trained part, and so AdamW's state) stay float32. Full fine-tuning in bfloat16 is refused:
    AdamW's small updates round away in bfloat16 weights; use ``autocast: bf16`` there."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (less memory, ~30% more compute per update)."""
    fast_decode: bool | None = None
    """rlvr's lean KV-cache decoder and grouped forward (where the architecture allows them);
    ``null``: on CPU only (on a GPU the model's own forward with SDPA is the better default)."""
    autocast: Literal["none", "bf16"] = "none"
    """Run matrix products in bfloat16 (rollouts and the training forward/backward); weights,
    optimizer state, log-probs and the loss stay float32. "none" by default (exact float32)."""

    @model_validator(mode="after")
    def _sound_dtype(self) -> ModelConfig:
        if self.dtype == "bfloat16" and self.lora is None:
            raise ValueError(
                "model.dtype bfloat16 trains every weight in bfloat16, where AdamW's small updates "
                "round away: set model.lora (adapters stay float32 over a bfloat16 base), or keep "
                "float32 weights with model.autocast=bf16 (bfloat16 matmuls)"
            )
        return self


class DataConfig(_Strict):
    """Training and held-out rows."""

    task: str | None = "addition"
    """A synthetic task (``addition``, ``arithmetic``, ``countdown`` or one registered in
    :data:`rlvr.data.tasks.TASKS`); ignored when ``path`` is set."""
    task_options: dict[str, Any] = {}
    """Options of the synthetic task (``max_operand`` for addition, ``digits`` for arithmetic...)."""
    path: str | None = None
    """A JSONL file or ``datasets`` folder (GSM8K, MATH, MATH-500, SVAMP, MAWPS layouts)."""
    split: str = "train"
    """The split of ``path`` to train on (a dataset folder with splits)."""
    eval_path: str | None = None
    """A held-out file of its own; null: the first ``eval_size`` rows of ``path`` are held out."""
    eval_split: str = "test"
    """The split of ``eval_path`` to evaluate on."""
    eval_size: int = Field(200, ge=1)
    """Held-out rows for greedy accuracy (``eval/accuracy``)."""
    system_prompt: str | None = None
    """A system message before every prompt (chat templates)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, v: str | None) -> str | None:
        return registered("task", v) if v is not None else None

    @model_validator(mode="after")
    def _has_source(self) -> DataConfig:
        if self.task is None and self.path is None:
            raise ValueError("set data.task (addition, arithmetic, countdown) or data.path (a JSONL file or folder)")
        return self


class RolloutConfig(_Strict):
    """Sampling."""

    prompts_per_step: int = Field(8, ge=1)
    """Prompts sampled each step, each ``group_size`` times."""
    group_size: int = Field(8, ge=2, description="completions per prompt (G)")
    max_new_tokens: int = Field(32, ge=1)
    """Tokens per completion; one that reaches it ends ``truncated``."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature."""
    top_p: float = Field(1.0, gt=0, le=1)
    """Nucleus sampling: the smallest set of tokens whose probability reaches ``top_p``."""
    truncation: float = Field(0.0, ge=0, le=1)
    """Injected truncation, for tests and benchmarks: this share of sampled completions (drawn from
    ``run.seed``, the prompt and the completion) is cut at a random point before its end, as a
    smaller token budget would have cut it (``truncated``); held-out evaluation is never cut. Off by
    default; single-turn only (episodes have ``env.max_tokens``)."""
    mode: Literal["sync", "async"] = "sync"
    """``sync``: sample, then learn, one after the other (one process). ``async``: a sampler process
    draws the next steps while the learner trains (rlvr's engine; see ``rlvr.engine.async_engine``),
    at most ``max_lag`` steps ahead."""
    max_lag: int = Field(1, ge=1)
    """``mode: async``: steps the sampler may run ahead of the learner (the queue between them);
    rows more than ``failure.max_staleness`` versions old are ``stale``."""
    sampler_timeout_s: float = Field(600.0, gt=0)
    """``mode: async``: a sampler that sends nothing for this long is an error in the learner."""
    dtype: Literal["model", "bfloat16", "auto"] = "model"
    """The precision rollouts are sampled in. ``bfloat16``: the lean decoder keeps a bfloat16 copy of
    the weights (matrix products ~4x faster on CPUs with AVX512-BF16 / AMX, and on GPUs); the update
    still runs in the model's precision, the sampler's log-probs acting as the behaviour policy of
    the importance ratio (``rollout/logprob_gap`` logs how far apart the two are); refused on a CPU
    that would emulate it. ``auto``: bfloat16 where the device multiplies it natively, else the
    model's (the choice is logged as ``rollout/bf16``). Engine rlvr only (``auto`` on TRL: its own
    generation, in the model's precision)."""
    cuda_graphs: bool = False
    """The lean decoder's one-token step with a static cache, recorded once per batch size as a CUDA
    graph and replayed (:mod:`rlvr.models.graphed`; rows that end are dropped by power-of-two
    buckets): the same samples as the default step for a fixed seed, one launch a token instead of
    hundreds. On a device without CUDA the step replays eagerly (slower there: it attends over the
    whole cache), said once. Off by default until ``make bench-gpu`` has measured it on a GPU.
    Engine rlvr (both modes) only."""


class AlgoConfig(_Strict):
    """The GRPO objective."""

    loss: str = "dapo"
    """How the per-token loss becomes one number (what each divides by: :mod:`rlvr.algo.loss`):
    ``grpo`` (each sequence's mean, then the mean over trained sequences), ``dr_grpo`` (the sum over
    trained sequences x the configured maximum completion length, a constant), ``dapo`` (the sum over
    every trained token of the batch), or any aggregation registered in ``rlvr.algo.loss.AGGREGATIONS``.
    Excluded rows, tool results and grammar-forced tokens count in none of them."""
    scale_rewards: Literal["group", "batch", "none"] = "group"
    """Divide advantages by the group's std (``group``, GRPO), by the std of the whole batch's admitted
    rewards (``batch``, as TRL's ``scale_rewards="batch"``), or not at all (``none``: Dr. GRPO).
    ``true`` / ``false`` are read as ``group`` / ``none``."""
    epsilon: float = Field(0.2, gt=0, lt=1)
    """The importance ratio is clipped to ``[1 - epsilon, 1 + epsilon_high]``."""
    epsilon_high: float | None = Field(None, gt=0)
    """Upper clip (clip-higher); None: same as epsilon."""
    beta: float = Field(0.0, ge=0)
    """KL (k3) weight to a frozen reference; 0 keeps no reference model."""
    num_iterations: int = Field(1, ge=1)
    """Optimizer passes over each batch of rollouts (GRPO's mu); above 1 the ratio departs from 1."""
    micro_batch: int | None = Field(None, ge=1)
    """Sequences per forward/backward (gradient accumulation); None: sized by ``token_budget``."""
    token_budget: int | Literal["auto"] | None = "auto"
    """Without ``micro_batch``: tokens per forward/backward of the update (rows x (prompt + completion
    width)), verl's dynamic batch size; ``auto``: from the GPU's free memory (:mod:`rlvr.models.budget`),
    the whole batch on a CPU; null: the whole batch. rlvr's engine (on TRL set ``micro_batch``)."""
    logprobs: Literal["auto", "chunked", "full"] = "auto"
    """How the update turns hidden states into the sampled tokens' log-probs. ``chunked``: on tiles of
    the vocabulary, never the ``[rows, tokens, vocab]`` logits (TRL's ``ChunkedLogProbFunction``:
    Triton on CUDA, torch elsewhere; :mod:`rlvr.models.logprobs`); ``full``: from the whole logits
    (faster for a small vocabulary, memory ~ rows x tokens x vocab x 4 bytes, several copies);
    ``auto``: chunked on a GPU, full on CPU. The same log-probs and gradients up to float rounding."""
    estimator: str = "sum_then_normalize"
    """The advantage estimator (``rlvr.algo.advantages.ESTIMATORS``): ``sum_then_normalize`` (GRPO),
    ``rloo`` (each total minus the mean of its group's others), ``normalize_then_sum`` (GDPO: TRL's
    ``multi_objective_aggregation``, engine trl), or a name added with ``register_estimator``."""
    advantage_clip: float | None = Field(None, gt=0)
    """Clamp advantages to ``[-clip, clip]``; null: no clamp."""

    @field_validator("loss")
    @classmethod
    def _known_loss(cls, v: str) -> str:
        return registered("loss", v)

    @field_validator("scale_rewards", mode="before")
    @classmethod
    def _scale_as_bool(cls, v: Any) -> Any:
        return ("group" if v else "none") if isinstance(v, bool) else v


class OffPolicyConfig(_Strict):
    """Rollouts the trainer did not sample (:mod:`rlvr.algo.correction`): the sampler's log-probs
    are the *behaviour* policy's; the clipped ratio's old log-probs are the *proximal* policy's.
    verl's and TRL's names for each setting are in ``docs/guides/off-policy.md``."""

    proximal: Literal["bypass", "recompute"] = "bypass"
    """``bypass``: the sampler's log-probs are the ratio's old log-probs (nothing corrected, verl's
    bypass mode); ``recompute``: the training model recomputes them before the update (one forward,
    no gradient), and the corrections below weigh the behaviour/proximal gap."""
    token_cap: float | None = Field(None, gt=0)
    """Truncated token importance weight ``min(proximal / behaviour, cap)`` on each token's loss
    (TIS; verl ``rollout_is: token`` + ``rollout_is_threshold``; TRL ``token_truncate``)."""
    geometric_band: tuple[float, float] | None = None
    """Reject a row whose ``exp(mean log(proximal / behaviour))`` leaves ``[low, high]`` (cause
    ``off_policy``; verl ``rollout_rs: seq_mean_k1`` with a band such as ``0.999_1.001``)."""
    token_veto: float | None = Field(None, gt=0, lt=1)
    """Reject a row with any token whose ratio is below this (an outlier the sampler found likely
    and the trainer does not)."""
    product: Literal["none", "truncate", "mask"] = "none"
    """The product-form sequence weight ``prod(proximal / behaviour)``, truncated at ``product_cap``
    (TRL ``sequence_truncate``) or a mask above it (TRL ``sequence_mask``): on long completions it
    drifts far from 1 and the mask rejects nearly everything; prefer ``geometric_band``."""
    product_cap: float = Field(3.0, gt=1)
    """The product weight's cap (TRL ``vllm_importance_sampling_clip_max``)."""
    lag: int = Field(0, ge=0)
    """Injected staleness, for benchmarks and tests: rollouts are sampled by the policy ``lag``
    updates back (as an asynchronous engine's buffer would hold them); 0: the current policy."""

    @field_validator("geometric_band")
    @classmethod
    def _band(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not 0 < v[0] < 1 < v[1]:
            raise ValueError(f"geometric_band must be (low, high) with 0 < low < 1 < high, got {list(v)}")
        return v

    @property
    def corrects(self) -> bool:
        """Whether any correction is set (each needs the recomputed proximal log-probs)."""
        return (
            self.token_cap is not None
            or self.geometric_band is not None
            or self.token_veto is not None
            or self.product != "none"
        )


class FailureConfig(_Strict):
    """Failure-aware training: which rollouts enter the group statistics and the loss."""

    exclude_truncated: bool = False
    """Leave rollouts that hit the length limit out (invalid and stale ones always are)."""
    cold_start: bool = False
    """Leave format deaths (no_answer) out until the running format-death rate falls below
    ``cold_start_threshold`` over ``cold_start_window`` steps; then count them. Off in plain GRPO."""
    cold_start_threshold: float = Field(0.05, ge=0, le=1)
    """The format-death rate below which the cold start ends."""
    cold_start_window: int = Field(10, ge=1)
    """Steps over which that rate is averaged."""
    drop_flat_groups: bool = False
    """Leave zero-variance groups out of the loss normaliser (they carry no signal)."""
    resample_tries: int = Field(2, ge=0)
    """Rounds of resampling replacements for invalid (and, with exclude_truncated, truncated)
    rollouts of the same prompts; the originals are kept in rollouts.jsonl as replaced."""
    redraw_budget: float | None = Field(None, gt=0)
    """Extra episodes a step may spend on redraws, as a multiple of its rollouts (P x G): rounds go
    on while a row is to be redrawn and the budget lasts (at most 64 rounds), instead of
    ``resample_tries`` rounds. At an environment fault rate ``f`` a full step costs ``1 / (1 - f)``
    times its rollouts: 10 at 0.9. None: ``resample_tries`` rounds."""
    min_group_rows: int = Field(1, ge=1)
    """A group with fewer admitted rows than this after its redraws leaves the step (its rows out of
    the loss, counted in ``failure/thin_groups``): two rows make an advantage of +-0.71 from one
    coin flip."""
    thin_step_scale: bool = False
    """Scale the step's loss by its admitted share (admitted rows / P x G): a step built from a
    tenth of its rows moves the weights a tenth as far, instead of as far as a full one."""
    wait_out_outages: bool = True
    """When the first draw and the first redraw round of a step are all environment faults (the
    environment is down), stop redrawing and take no optimizer step (``env/down``; the learning
    rate schedule does not move): training waits the outage out instead of learning from it."""
    dynamic_sampling: int = Field(0, ge=0)
    """Up to this many extra rounds of prompt groups per step, to replace groups whose binary
    accuracy does not vary (all right or all wrong: no signal); 0 keeps every group (DAPO-style
    dynamic sampling when > 0)."""
    max_staleness: int = Field(1, ge=0)
    """Informative groups that dynamic sampling drew beyond a step's need are kept for the next
    steps while their policy version is at most this many steps old; older ones are dropped
    (counted) and never reach the loss."""
    quarantine: bool = True
    """Take prompts whose groups keep dying out of training (see diagnostics/quarantine.py)."""
    quarantine_consecutive: int = Field(3, ge=1)
    """Dead groups in a row that quarantine a prompt."""
    quarantine_total: int = Field(5, ge=1)
    """Dead groups over the run that quarantine a prompt."""
    quarantine_causes: list[
        Literal["invalid", "bad_gold", "truncated", "no_answer", "wrong", "tool_error", "env_timeout", "env_crash"]
    ] = ["invalid", "bad_gold", "tool_error", "env_timeout", "env_crash"]
    """A group dies when every rollout has one of these causes (the environment's faults count, so a
    prompt whose episodes keep dying of the environment is quarantined; a gold that cannot be parsed
    stays broken, so its prompt is too)."""
    env_faults: list[
        Literal[
            "tool_error",
            "env_timeout",
            "env_crash",
            "malformed_tool_call",
            "unknown_tool",
            "bad_arguments",
            "turn_limit",
            "context_overflow",
        ]
    ] = ["tool_error", "env_timeout", "env_crash"]
    """Which episode causes are the environment's fault: such an episode leaves its group's mean and
    std and the loss, and is redrawn whole with a fresh environment (up to ``resample_tries``); the
    other episode causes are the policy's and keep their reward."""
    verifier_failures: Literal["exclude", "score"] = "exclude"
    """``exclude``: a row whose verifier failed (``timeout``, ``error``, ``uncertain``: a judge or
    sandbox outage) is ``invalid``: out of the baseline and the loss, redrawn. ``score``: it keeps
    the reward its rewards gave it (``accuracy``'s ``undecided``, set 0 to score it as TRL's default
    rewards do) and stays in both, and no ``invalid`` row is redrawn; a ``bad_gold`` row likewise
    keeps the reward its rewards gave it (``accuracy``'s ``bad_gold``): plain GRPO, for comparison."""
    env_fault_handling: Literal["exclude", "mask_loss", "score_zero"] = "exclude"
    """``exclude``: an environment-fault episode leaves its group's mean and std and the loss and
    is redrawn. The other two are kept for ablations, neither redraws: ``mask_loss``: it leaves only
    the loss and stays in the baseline with a reward of 0 (masking the loss alone, NeMo-RL #4061);
    ``score_zero``: it stays in both with a reward of 0 (a failed episode scores 0, as in TRL and
    verl). To let the episode go on with the error as the tool's result and score it as usual,
    make nothing the environment's: ``env_faults: []``."""
    policy_penalties: dict[
        Literal["malformed_tool_call", "unknown_tool", "bad_arguments", "turn_limit", "context_overflow"], float
    ] = {}
    """Subtracted from an episode's reward once per event of that cause (the policy's own faults)."""


class OptimConfig(_Strict):
    """AdamW and its schedule."""

    lr: float = Field(1e-4, gt=0)
    """AdamW's learning rate."""
    weight_decay: float = Field(0.0, ge=0)
    """AdamW's decoupled weight decay."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW's moment coefficients."""
    grad_clip: float = Field(1.0, gt=0)
    """The gradient norm is clipped to this before each optimizer step."""
    schedule: Literal["constant", "linear", "cosine"] = "constant"
    """The learning rate over the run, after the warm-up."""
    warmup_steps: int = Field(0, ge=0)
    """Optimizer steps of linear warm-up from 0."""


class ConventionsConfig(_Strict):
    """The maths verifier's reading conventions (:class:`rlvr.verify.math.conventions.Conventions`,
    whose docstring says what each one reads): the defaults are a careful competition grader's."""

    ratio_as_fraction: bool = True
    """``3:2`` and ``\\frac{3}{2}`` are one answer; off: a ratio equals only a ratio."""
    integration_constant: Literal["optional", "required"] = "optional"
    """An antiderivative is right with or without its constant; ``required``: it must carry one when the gold does."""
    base_digits: bool = True
    """Against a gold in a base (``52_8``), bare digits are read in that base."""
    remainder_as_residue: bool = True
    """A number in ``[0, m)`` equals the residue class it represents."""
    degrees_as_radians: bool = False
    """An angle in degrees equals the same angle in radians; off: the other unit is wrong."""


class RewardsConfig(_Strict):
    """Named rewards with weights (numbers or ``[[step, weight], ...]`` schedules) and options."""

    weights: dict[str, float | list[list[float]]] = {"accuracy": 1.0, "format": 0.2}
    """Reward name -> weight, or ``[[step, weight], ...]`` for a weight that changes by stage; the total is their
    weighted sum, each component logged apart."""
    options: dict[str, dict[str, Any]] = {"format": {"think_tag": None}}
    """Reward name -> its keyword options (``accuracy: {strict: true}``...)."""

    @field_validator("weights")
    @classmethod
    def _known_rewards(cls, v: dict[str, Any]) -> dict[str, Any]:
        for name in v:
            registered("reward", name)
        return v

    outage: float = Field(0.0, ge=0, le=1)
    """Injected verifier outages, for tests and benchmarks: this share of rows (seeded by the
    completion and its gold) gets a ``timeout`` or ``error`` verdict instead of its own (off by default)."""
    bad_gold: float = Field(0.0, ge=0, le=1)
    """Injected bad golds, for tests and benchmarks: this share of gold answers (seeded by the gold
    and ``outage_seed``, so the same ones for the whole run) is treated as unparsable: every rollout
    of their prompts is ``bad_gold`` (off by default)."""
    outage_seed: int = 0
    """Seeds the injected outages and bad golds."""
    conventions: ConventionsConfig = ConventionsConfig()
    """The maths verifier's reading conventions where a form is one; unset, a careful competition
    grader's. Set for every verdict of the process when the rewards are built."""

    def active_options(self) -> dict[str, dict[str, Any]]:
        """Options to build the rewards with: the default options only for rewards that are weighted
        (options given explicitly are all kept, so a misspelt reward name is still reported)."""
        if "options" in self.model_fields_set:
            return dict(self.options)
        return {k: v for k, v in self.options.items() if k in self.weights}


class RunConfig(_Strict):
    """Length, seeds, outputs."""

    steps: int = Field(100, ge=1)
    """GRPO steps (one optimizer pass over a step's rollouts each, times ``algo.num_iterations``)."""
    seed: int = 0
    """Seeds the model's initialisation, the data order and sampling."""
    out_dir: str = "runs/grpo"
    """The run folder (metrics, rollouts, quarantine, checkpoints)."""
    save_every: int = Field(50, ge=1)
    """A checkpoint every this many steps (and at the end)."""
    eval_every: int = Field(25, ge=0)
    """Held-out greedy accuracy every N steps (0: only before and after)."""
    threads: int = Field(1, ge=1)
    """torch threads (one: two ran 4-40x slower on a shared 2-core machine)."""
    max_minutes: float | None = Field(None, gt=0)
    """Stop after this many minutes of training (a checkpoint is written)."""
    tensorboard: bool = False
    """Also write TensorBoard logs into the run folder."""
    wandb: bool = False
    """Also log to Weights & Biases."""
    log_rollouts: bool = True
    """Write every rollout (completion, cause, verdict, components, advantage) to rollouts.jsonl."""
    processes: int = Field(1, ge=1)
    """Processes to train with (``engine: trl``; torchrun starts them: gloo on CPU, one per GPU)."""
    device: str = Field("auto", pattern=r"^(auto|cpu|mps|cuda(:\d+)?)$")
    """``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``: the policy,
    the reference model, rollouts, the update, evaluation and a local judge."""


class DecodingConfig(_Strict):
    """Constrained decoding of the answer segment (xgrammar masks in the trainer's own sampling loop)."""

    constrain: Literal["none", "answer", "full"] = "none"
    """``answer``: free reasoning, the answer grammar from the model's own ``<answer>`` on (and no
    ending before an answer); with an ``env`` section, tool calls are free and an episode's final
    answer segment is constrained (rlvr's engine). ``full``: the whole output shape from the first
    token (single-turn only)."""
    answer: Literal["math", "integer", "json", "text"] = "math"
    """The answer's grammar: ``math`` (numbers and a LaTeX subset), ``integer``, ``json``, ``text``."""
    backend: Literal["auto", "xgrammar", "llguidance"] = "auto"
    """The grammar backend: xgrammar when installed (``auto``), llguidance as the fallback."""
    json_schema: dict[str, Any] | None = None
    """JSON Schema of ``json`` answers."""
    reasoning_budget: int | None = Field(None, ge=1)
    """Reasoning tokens after which ``</think>`` and ``<answer>`` are forced."""
    answer_tokens: int = Field(4, ge=1)
    """Tokens kept for the answer's content before the length limit."""
    max_chars: int = Field(200, ge=1)
    """Length limit of ``text`` answers."""
    in_eval: bool = True
    """Decode held-out evaluations under the same constraint."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "engine" in data:
            raise ValueError(
                "decoding.engine is now decoding.backend (the grammar backend: auto, xgrammar, "
                "llguidance); `engine` names the trainer (rlvr or trl)"
            )
        return data

    jump_forward: bool = True
    """Take the tokens a mask forces (one allowed token) without a forward each, fed with the token
    before them: the same samples, fewer forwards. Off: each forced token is decoded as a step, and
    the mask statistics cover it."""


class TrlConfig(_Strict):
    """``engine: trl``: what TRL's ``GRPOTrainer`` does that rlvr's engine does not."""

    use_vllm: bool = False
    """Generate with vLLM (needs a GPU and vLLM); ``decoding.constrain: full`` then becomes vLLM's
    structured output."""
    vllm_mode: Literal["colocate", "server"] = "colocate"
    """vLLM in the training processes (``colocate``) or a separate ``trl vllm-serve`` (``server``)."""
    steps_per_generation: int | None = Field(None, ge=1)
    """Optimizer steps each generation batch is split into (TRL's own default: the accumulation)."""
    logging_steps: int = Field(1, ge=1)
    """TRL logs every this many steps."""
    report_to: list[str] = []
    """TRL's loggers (``tensorboard``, ``wandb``...); rlvr's run folder is written either way."""
    args: dict[str, Any] = {}
    """Any other ``GRPOConfig`` field, passed as is (e.g. ``{deepspeed: ds.json}``, ``{fsdp: full_shard}``)."""


class JudgeConfig(_Strict):
    """The LLM judge of the two-level verifier (rules first; the judge only for what rules cannot decide)."""

    backend: Literal["http", "local"] = "http"
    """``http``: an OpenAI-compatible chat endpoint; ``local``: a transformers model (``model``)."""
    base_url: str | None = None
    """e.g. ``http://localhost:8000/v1``; default ``$RLVR_JUDGE_BASE_URL``."""
    model: str | None = None
    """The served model name (http) or a model name/folder (local); default ``$RLVR_JUDGE_MODEL``."""
    api_key_env: str = "RLVR_JUDGE_API_KEY"
    """The environment variable holding the key (never the key itself in a config file)."""
    open_tasks: list[str] = []
    """Tasks always sent to the judge (no rule verifier is trusted for them)."""
    timeout: float = Field(10.0, gt=0)
    """Seconds per judge call attempt."""
    retries: int = Field(2, ge=0)
    """Retries of a judge call that failed or timed out."""
    concurrency: int = Field(4, ge=1)
    """Judge requests in flight at once."""
    audit_rate: float = Field(0.0, ge=0, le=1)
    """Share of rule-decided rows also judged, to measure agreement (``judge/audit_agreement``)."""


class EnvConfig(_Strict):
    """Episodes with tools: an environment reset from each row, tools the policy calls over turns."""

    tools: list[str] = []
    """Built-in tools (``calculator``, ``python``, or one registered in ``rlvr.episodes.tools.TOOLS``)
    offered by a tool-only environment."""

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, v: list[str]) -> list[str]:
        return [registered("tool", name) for name in v]

    environment: str | None = None
    """The environment, instead of ``tools``: a class ``module:Class`` (reset, tools, optional
    ``respond`` and ``reward``); ``verifiers:<module or file.py>[?argument=value&...]``, a
    ``verifiers`` tool environment or ``MultiTurnEnv`` (its dataset the rows, its tools or its
    ``env_response`` the other party, its rubric the reward); ``openenv:<url>``, an OpenEnv server
    on this machine, or ``openenv`` with ``server``. See the guide "Bring your environment"."""
    server: str | None = None
    """A command that serves the OpenEnv environment (``{port}``: the port rlvr picks); rlvr starts it
    before the run, waits for its ``/health`` and stops it at the end (``environment: openenv``)."""
    max_turns: int = Field(4, ge=1)
    """Assistant turns per episode; an episode with no final answer by then (or, with an environment
    that answers every turn, one it has not ended) ends in ``turn_limit``."""
    max_tokens: int | None = Field(None, ge=2)
    """Tokens of the whole episode after the prompt: the policy's turns and the tool results
    appended to them (default ``rollout.max_new_tokens``). A tool result that leaves no room to
    answer ends the episode as ``context_overflow``; a final turn cut by it is ``truncated``."""
    tool_timeout_s: float = Field(10.0, gt=0)
    """Seconds a tool call may run; past it the call is ``env_timeout``."""
    max_result_chars: int = Field(2000, ge=1)
    """A tool result longer than this is cut (and says so)."""
    faults: dict[Literal["tool_error", "env_timeout", "env_crash"], float] = {}
    """Injected environment faults per kind, for tests and benchmarks (seeded; off by default)."""
    fault_seed: int = 0
    """Seeds the injected faults (the same episode, the same faults)."""
    outages: list[tuple[int, int]] = []
    """Injected outages, for tests and benchmarks: ``[start, end)`` step ranges during which every
    tool call fails (``env_crash``: the tool server is down), on top of ``faults``."""

    @model_validator(mode="after")
    def _one_environment(self) -> EnvConfig:
        if not self.tools and self.environment is None:
            raise ValueError("env: give tools (calculator, python) or environment (module:Class)")
        if self.tools and self.environment is not None:
            raise ValueError("env: give tools or environment, not both (an environment offers its own tools)")
        if (self.environment or "").partition("?")[0] == "openenv" and self.server is None:
            raise ValueError("env.environment: openenv needs env.server (a command) or a URL (openenv:http://...)")
        if self.server is not None and not (self.environment or "").startswith("openenv"):
            raise ValueError("env.server starts an OpenEnv environment: set env.environment: openenv")
        if any(not 0 <= r <= 1 for r in self.faults.values()) or sum(self.faults.values()) > 1:
            raise ValueError(f"env.faults: rates in [0, 1] summing to at most 1, got {self.faults}")
        if any(not 0 <= a < b for a, b in self.outages):
            raise ValueError(f"env.outages: [start, end) step ranges with 0 <= start < end, got {self.outages}")
        return self


#: ``off_policy`` of an asynchronous run that sets none: the proximal log-probs the learner's (with one
#: optimizer step a batch, its training forward's own: no extra forward) and each token's behaviour
#: weight truncated at 2, nothing rejected.
ASYNC_OFF_POLICY = {"proximal": "recompute", "token_cap": 2.0}


class TrainConfig(_Strict):
    """Everything ``rlvr train`` needs."""

    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    rollout: RolloutConfig = RolloutConfig()
    algo: AlgoConfig = AlgoConfig()
    failure: FailureConfig = FailureConfig()
    optim: OptimConfig = OptimConfig()
    rewards: RewardsConfig = RewardsConfig()
    run: RunConfig = RunConfig()
    decoding: DecodingConfig = DecodingConfig()
    judge: JudgeConfig | None = None
    """Set to add an LLM judge for the rows rules cannot decide (their ``uncertain`` rows are invalid)."""
    engine: Literal["rlvr", "trl"] = "rlvr"
    """``rlvr``: rlvr's own single-process loop; ``trl``: TRL's ``GRPOTrainer`` with rlvr's
    failure-aware step (accelerate, DeepSpeed / FSDP, vLLM, many processes)."""
    trl: TrlConfig = TrlConfig()
    off_policy: OffPolicyConfig = OffPolicyConfig()
    """Behaviour vs proximal log-probs, and what corrects the gap. With ``rollout.mode: async`` and no
    ``off_policy`` section at all, :data:`ASYNC_OFF_POLICY` (the lag is corrected by default)."""
    env: EnvConfig | None = None
    """Episodes with tools (see ``rlvr.episodes``)."""

    @model_validator(mode="before")
    @classmethod
    def _async_corrects(cls, data: Any) -> Any:
        # an asynchronous run's rows are a version old: within the lag they are corrected (AReaL's
        # decoupled objective, measured best in benchmarks/async_engine.py), unless the user says how
        if isinstance(data, dict) and "off_policy" not in data:
            rollout = data.get("rollout")
            mode = rollout.get("mode") if isinstance(rollout, dict) else getattr(rollout, "mode", None)
            if mode == "async":
                data = {**data, "off_policy": dict(ASYNC_OFF_POLICY)}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        if self.env is not None:
            if self.engine == "trl" and self.trl.use_vllm:
                raise ValueError(
                    "env on engine trl with trl.use_vllm: rlvr's episodes on TRL are tested on TRL's "
                    "transformers generation only; set trl.use_vllm: false"
                )
            if self.decoding.constrain == "full":
                raise ValueError(
                    "env with decoding.constrain: full: the grammar would have to admit tool calls from "
                    "the first token; decoding.constrain: answer constrains an episode's final answer "
                    "segment and leaves tool calls free"
                )
            if self.decoding.constrain != "none" and self.engine == "trl":
                raise ValueError(
                    "env with decoding.constrain on engine trl: constrained episodes run on rlvr's engine "
                    "(engine: rlvr); on TRL set decoding.constrain: none"
                )
            if self.rollout.truncation:
                raise ValueError(
                    "env with rollout.truncation: episodes are not cut (their budget is env.max_tokens); "
                    "set rollout.truncation: 0"
                )
        if self.failure.min_group_rows > self.rollout.group_size:
            raise ValueError(
                f"failure.min_group_rows {self.failure.min_group_rows} > rollout.group_size "
                f"{self.rollout.group_size}: every group would leave the step"
            )
        n = self.rollout.prompts_per_step * self.rollout.group_size
        mb = self.algo.micro_batch
        if mb is not None and n % mb:
            raise ValueError(
                f"algo.micro_batch {mb} must divide the {n} rollouts per step "
                f"(rollout.prompts_per_step x rollout.group_size)"
            )
        tb = self.algo.token_budget
        if isinstance(tb, int) and tb < 1:
            raise ValueError(f"algo.token_budget {tb} must be at least 1 token (or auto, or null)")
        if self.algo.epsilon_high is not None and self.algo.epsilon_high < self.algo.epsilon:
            raise ValueError("algo.epsilon_high must be >= algo.epsilon (it widens the upper clip)")
        op = self.off_policy
        if op.corrects and op.proximal == "bypass" and self.engine == "rlvr":
            raise ValueError(
                "off_policy corrections weigh the sampler's log-probs against the trainer's, which bypass "
                "never computes: set off_policy.proximal: recompute, or drop token_cap / geometric_band / "
                "token_veto / product"
            )
        if op.lag > self.failure.max_staleness:
            raise ValueError(
                f"off_policy.lag {op.lag} > failure.max_staleness {self.failure.max_staleness}: every rollout "
                "would be stale; raise failure.max_staleness to at least the lag"
            )
        if self.rollout.mode == "async" and op.lag:
            raise ValueError("off_policy.lag with rollout.mode async: the sampler's lag is real there; drop lag")
        est = self.algo.estimator
        if self.engine == "rlvr" and est == "normalize_then_sum":
            raise ValueError(
                "algo.estimator normalize_then_sum normalises each reward function apart (TRL's "
                "multi_objective_aggregation): engine=trl; on rlvr's engine use sum_then_normalize or rloo"
            )
        if self.engine == "trl" and est not in ("sum_then_normalize", "normalize_then_sum"):
            raise ValueError(
                f"algo.estimator {est}: TRL's GRPOTrainer takes sum_then_normalize or normalize_then_sum "
                "(its multi_objective_aggregation); set engine=rlvr for other estimators"
            )
        if self.engine == "rlvr":
            if self.run.processes > 1:
                raise ValueError(
                    f"run.processes {self.run.processes} needs engine: trl (rlvr's own loop is one "
                    "process); set engine=trl, or run.processes=1"
                )
            return self
        if self.rollout.cuda_graphs or self.rollout.mode == "async":  # rlvr's own sampler's settings
            what = "rollout.cuda_graphs (the decoder)" if self.rollout.cuda_graphs else "rollout.mode async"
            raise ValueError(f"{what} is rlvr's own engine; on TRL use its AsyncGRPOTrainer, or engine: rlvr")
        if isinstance(tb, int):
            raise ValueError(
                "algo.token_budget sizes rlvr's own micro-batches; TRL's are rows "
                "(per_device_train_batch_size): set algo.micro_batch, or engine=rlvr"
            )
        procs = self.run.processes
        if n % procs:
            raise ValueError(
                f"engine trl: the {n} rollouts per step (rollout.prompts_per_step x rollout.group_size) "
                f"do not split over run.processes {procs}: make prompts_per_step x group_size a "
                f"multiple of {procs}"
            )
        if mb is not None and (n // procs) % mb:
            raise ValueError(
                f"engine trl: algo.micro_batch {mb} must divide the {n // procs} rollouts each of the "
                f"{procs} processes trains on"
            )
        if self.rollout.dtype == "bfloat16":
            raise ValueError(
                "rollout.dtype bfloat16 is rlvr's own decoder (engine: rlvr); on TRL sample with vLLM "
                "(trl.use_vllm) or set rollout.dtype=model"
            )
        if self.rollout.truncation and self.trl.use_vllm:
            raise ValueError(
                "rollout.truncation on engine trl cuts TRL's transformers generation; with trl.use_vllm set it to 0"
            )
        if op.lag:
            raise ValueError("off_policy.lag (injected staleness) is rlvr's own engine; set it to 0 on TRL")
        if op.corrects or op.proximal == "recompute":
            if not self.trl.use_vllm:
                raise ValueError(
                    "off_policy on engine trl without trl.use_vllm: TRL samples with the model it trains, so "
                    "nothing is off-policy; drop the off_policy section (or set trl.use_vllm: true)"
                )
            if op.geometric_band is not None or op.token_veto is not None:
                raise ValueError(
                    "off_policy.geometric_band / token_veto on engine trl: TRL's vLLM correction offers "
                    "token_truncate, sequence_truncate and sequence_mask only (off_policy.token_cap, "
                    "product: truncate | mask); the geometric mask runs on engine rlvr"
                )
            if op.token_cap is not None and op.product != "none":
                raise ValueError("off_policy on engine trl: TRL applies one correction, token_cap or product")
        if self.judge is not None:
            raise ValueError(
                "judge: the LLM judge runs with engine: rlvr only; drop the judge section or use engine=rlvr"
            )
        if self.trl.use_vllm and self.decoding.constrain == "answer":
            raise ValueError(
                "decoding.constrain answer with trl.use_vllm: vLLM's structured output takes one pattern "
                "for the whole output; use decoding.constrain=full, or trl.use_vllm=false"
            )
        return self


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    if any(not k for k in keys):
        raise ConfigError(f"--set {dotted}: an empty key between dots")
    for k in keys[:-1]:
        if node.get(k) is None:  # absent, or null in the file ("lora:" with nothing under it)
            node[k] = {}
        node = node[k]
        if not isinstance(node, dict):
            raise ConfigError(f"--set {dotted}: {k!r} is not a section")
    node[keys[-1]] = value


def explain(e: ValidationError, root: type[BaseModel] | None = None) -> str:
    """One line naming every field at fault, what it got and what it takes; an unknown field gets
    the nearest known name of its section (``root``: the model validated, default :class:`TrainConfig`)."""
    root = root or TrainConfig
    parts = []
    for err in e.errors():
        where = ".".join(str(x) for x in err["loc"]) or "config"
        msg = err["msg"].removeprefix("Value error, ")
        shown = err["input"]
        got = ""
        if err["type"] != "missing" and not isinstance(shown, dict | list):
            got = f" (got {_short(shown)})"
        if err["type"] == "extra_forbidden":
            msg = "unknown field" + _suggestion(root, err["loc"])
        parts.append(f"{where}: {msg}{got}")
    return "invalid config: " + "; ".join(parts)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _suggestion(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """``"; did you mean 'x'?"`` for the unknown last key of ``loc``, from its section's fields."""

    model: Any = root
    for key in loc[:-1]:
        if isinstance(key, int):  # an item of a list: its model is the list's
            continue
        field = model.model_fields.get(key)
        if field is None:
            return "; check the spelling (rlvr train --help lists the sections)"
        sub = [a for a in (field.annotation, *typing.get_args(field.annotation)) if isinstance(a, type)]
        model = next((a for a in sub if issubclass(a, BaseModel)), None)
        if model is None:
            return ""
    known = list(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; {'.'.join(map(str, loc[:-1])) or 'the top level'} has: {', '.join(known)}"


def read_yaml(path: str | Path, what: str, top: str) -> dict[str, Any]:
    """A YAML file's top-level mapping (empty file: ``{}``).

    Raises:
        ConfigError: no such file, not valid YAML, or a top level that is not a mapping (of ``top``).
    """
    try:
        loaded = yaml.safe_load(Path(path).read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: a folder, not a {what}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the {what} ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}{_yaml_where(e)}: not valid YAML ({_yaml_problem(e)})") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of {top}")
    return loaded or {}


def _yaml_where(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    return f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""


def _yaml_problem(e: yaml.YAMLError) -> str:
    return " ".join(str(getattr(e, "problem", None) or e).split())


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML config (or the defaults) and apply ``key.sub=value`` overrides.

    Raises:
        ConfigError: unreadable YAML, an unknown field, or an invalid value; the
            message names the field and what is expected.
    """
    tree = read_yaml(path, "config file", "sections (model, data, ...)") if path is not None else {}
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected key.sub=value (e.g. optim.lr=1e-4)")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as e:
            raise ConfigError(f"--set {item!r}: the value is not valid YAML ({_yaml_problem(e)})") from None
        _set(tree, key.strip(), value)
    try:
        return TrainConfig.model_validate(tree)
    except ValidationError as e:
        raise ConfigError(explain(e)) from None


def dump_config(cfg: TrainConfig) -> str:
    """The config as YAML (saved next to every checkpoint)."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
