"""``rlvr train --set engine=trl``: an rlvr config run on TRL's ``GRPOTrainer``, into rlvr's run folder.

The config's sections map onto TRL's ``GRPOConfig`` (:func:`grpo_args`; one generation batch of
``prompts_per_step x group_size`` rollouts per optimizer step, split over the processes), the
data onto a ``datasets.Dataset`` (synthetic tasks materialised for ``run.steps``), the rewards onto
one rlvr ``Total`` (its components still logged apart), and the ``failure`` and ``decoding``
sections onto :class:`FailureAwareGRPOTrainer`. Every process runs this same function (torchrun
starts them); the main one writes the run folder and the final model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from datasets import Dataset
from transformers import TrainerCallback, TrainerState
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import GRPOConfig

from rlvr.config import TrainConfig, dump_config
from rlvr.data.prompts import encode, render
from rlvr.data.stream import DataStream, default_data
from rlvr.decoding.truncation import Truncation
from rlvr.episodes import Faults
from rlvr.episodes.env import responds, shutdown
from rlvr.errors import ConfigError, RunError
from rlvr.integrations.trl.episodes import trl_environment
from rlvr.integrations.trl.runfolder import checkpoint_step, last_complete_checkpoint
from rlvr.integrations.trl.trainer import FailureAwareGRPOTrainer
from rlvr.runs.checkpoint import disk_refused
from rlvr.setup import build

logger = logging.getLogger(__name__)


def grpo_args(cfg: TrainConfig, *, use_cpu: bool) -> Any:
    """TRL's ``GRPOConfig`` for an rlvr config (``trl.args`` may add or override any field)."""

    r, a, o, run = cfg.rollout, cfg.algo, cfg.optim, cfg.run
    per_process = r.prompts_per_step * r.group_size // run.processes
    micro = a.micro_batch or per_process
    fields: dict[str, Any] = {
        "output_dir": run.out_dir,
        "max_steps": run.steps,
        "seed": run.seed,
        "data_seed": run.seed,
        "per_device_train_batch_size": micro,
        "gradient_accumulation_steps": per_process // micro,
        "num_generations": r.group_size,
        "max_completion_length": r.max_new_tokens,
        "temperature": r.temperature,
        "top_p": r.top_p,
        "learning_rate": o.lr,
        "weight_decay": o.weight_decay,
        "adam_beta1": o.betas[0],
        "adam_beta2": o.betas[1],
        "max_grad_norm": o.grad_clip,
        "lr_scheduler_type": o.schedule,
        "warmup_steps": o.warmup_steps,
        "beta": a.beta,
        "epsilon": a.epsilon,
        "epsilon_high": a.epsilon_high,
        "num_iterations": a.num_iterations,
        "loss_type": a.loss,
        "scale_rewards": a.scale_rewards,
        "multi_objective_aggregation": a.estimator,
        "save_strategy": "steps",
        "save_steps": run.save_every,
        "logging_steps": cfg.trl.logging_steps,
        "report_to": cfg.trl.report_to or "none",
        "use_cpu": use_cpu,
        "bf16": cfg.model.autocast == "bf16" and cfg.model.dtype == "float32",
        "gradient_checkpointing": cfg.model.gradient_checkpointing,
        "use_vllm": cfg.trl.use_vllm,
        "vllm_mode": cfg.trl.vllm_mode,
        "mask_truncated_completions": False,
        "log_completions": False,
        "remove_unused_columns": False,
        "disable_tqdm": True,
    }
    if cfg.env is not None:  # episodes: TRL's tool loop; its rounds are the calls before the last turn
        fields["max_tool_calling_iterations"] = max(cfg.env.max_turns - 1, 1)
        fields["max_completion_length"] = cfg.env.max_tokens or r.max_new_tokens
    if cfg.trl.steps_per_generation:
        fields["steps_per_generation"] = cfg.trl.steps_per_generation
    if use_cpu and run.processes > 1:
        fields["ddp_backend"] = "gloo"
    if a.epsilon_high is None:
        fields.pop("epsilon_high")
    if cfg.trl.use_vllm:
        fields.update(vllm_correction(cfg))
    fields.update(cfg.trl.args)
    return GRPOConfig(**fields)


def vllm_correction(cfg: TrainConfig) -> dict[str, Any]:
    """TRL's own names for rlvr's ``off_policy`` settings, with vLLM sampling (the config refused the
    settings TRL has no name for): ``token_cap`` -> ``token_truncate``, ``product: truncate | mask``
    -> ``sequence_truncate | sequence_mask``, each with its cap as ``vllm_importance_sampling_clip_max``;
    nothing set keeps TRL's own default (``sequence_mask`` at 3.0: TRL corrects by default).

    Examples:
        >>> from rlvr.config import load_config
        >>> vllm_correction(load_config(None, ["engine=trl", "trl.use_vllm=true", "off_policy.token_cap=2"]))
        {'vllm_importance_sampling_correction': True, 'vllm_importance_sampling_mode': 'token_truncate', \
'vllm_importance_sampling_clip_max': 2.0}
    """
    op = cfg.off_policy
    if op.token_cap is not None:
        mode, cap = "token_truncate", op.token_cap
    elif op.product != "none":
        mode, cap = f"sequence_{op.product}", op.product_cap
    else:
        return {}
    return {
        "vllm_importance_sampling_correction": True,
        "vllm_importance_sampling_mode": mode,
        "vllm_importance_sampling_clip_max": cap,
    }


def trl_dataset(
    cfg: TrainConfig, tokenizer: Any, data: tuple[list[Any] | None, list[Any]] | None = None
) -> tuple[Any, list[Any]]:
    """The training rows as a ``datasets.Dataset`` (chat prompts kept as messages when the tokenizer
    has a template, else rendered as rlvr renders them) and the held-out rows. ``data``: ``(training
    rows or None for a synthetic stream, held-out rows)`` as the set-up built them (default: the config's)."""

    rows, held = data if data is not None else default_data(cfg)
    if rows is None:  # a synthetic stream: the rows the run will use, in its order
        stream = DataStream(cfg, None)
        rows = stream.take(cfg.run.steps * cfg.rollout.prompts_per_step * 2)
    chat = bool(getattr(tokenizer, "chat_template", None)) and not _template_drops_bos(tokenizer)
    keys = sorted({k for s in rows for k in s.extra})
    return Dataset.from_list(
        [
            {
                "prompt": s.prompt if chat or isinstance(s.prompt, str) else render(tokenizer, s.prompt),
                "gold": s.gold,
                "task": s.task,
                "prompt_id": s.id or str(i),
                **{k: s.extra.get(k) for k in keys},
            }
            for i, s in enumerate(rows)
        ]
    ), held


def _template_drops_bos(tokenizer: Any) -> bool:
    """Whether the chat template leaves out the <bos> the tokenizer adds to text. TRL tokenizes chat
    prompts through the template alone, rlvr's engine (:func:`rlvr.data.prompts.encode`) adds the
    <bos>: a model trained on one would see prompts it never saw on the other (the tiny models saved
    before their template wrote <bos> are such). Those prompts go to TRL rendered as text, which TRL
    tokenizes with the tokenizer's specials, as rlvr does."""

    probe = [{"role": "user", "content": "1+1"}]
    ids = tokenizer.apply_chat_template(probe, tokenize=True, add_generation_prompt=True, return_dict=True)
    return list(ids["input_ids"]) != encode(tokenizer, probe)


def _finish_trained(trainer: Any, ckpt: str) -> None:
    """A run killed after its last step's checkpoint: only the end of training is left. transformers'
    loop would train one step more (it checks ``max_steps`` only after a step), so the checkpoint's
    weights and state are loaded and the end of training runs as it would have (the final
    evaluation, the logs closed)."""

    trainer._load_from_checkpoint(ckpt)
    trainer.state = TrainerState.load_from_json(str(Path(ckpt) / "trainer_state.json"))
    trainer.run_folder.on_train_end(trainer.args, trainer.state, trainer.control)


def train_trl(
    cfg: TrainConfig, *, resume: bool = False, on_log: Callable[[int, dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Train ``cfg`` on TRL (see the module docstring); returns the held-out accuracy before/after."""

    out = Path(cfg.run.out_dir)
    ckpt = None
    if resume and out.is_dir():
        found, cut = last_complete_checkpoint(out)
        for c in cut:
            logger.warning("--resume: %s was cut off while saving; it is passed over", c)
        ckpt = str(found) if found is not None else None
    if resume and ckpt is None:
        raise ConfigError(f"--resume: {out} has no complete TRL checkpoint (checkpoint-N) to continue")
    run = build(cfg, engine="trl")  # the same set-up as rlvr's engine; TRL places the model itself
    device, model, tok, total = run.device, run.model, run.tokenizer, run.rewards
    dataset, held = trl_dataset(cfg, tok, (run.train_rows, run.eval_rows))
    args = grpo_args(cfg, use_cpu=device.type == "cpu")
    callbacks = []
    if on_log is not None:
        report = on_log

        class Progress(TrainerCallback):
            def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                report(state.global_step, dict(kwargs.get("logs") or {}))

        callbacks.append(Progress())
    episodes: dict[str, Any] = {}
    if cfg.env is not None and run.env_cls is not None:  # rlvr's environment on TRL's tool loop, under rlvr's guards
        env = cfg.env
        rates = {str(k): v for k, v in env.faults.items()}
        episodes = {
            "tool_timeout_s": env.tool_timeout_s,
            "max_result_chars": env.max_result_chars,
            "env_faults": Faults(rates, env.fault_seed, tuple(env.outages)) if rates or env.outages else None,
        }
        if responds(run.env_cls):  # it answers the policy's turns: episodes through TRL's rollout_func
            episodes.update(conversation=run.env_cls, max_turns=env.max_turns)
        else:
            episodes["environment_factory"] = trl_environment(run.env_cls)
    trainer = FailureAwareGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[total],
        args=args,
        train_dataset=dataset,
        callbacks=callbacks,
        failure=cfg.failure,
        constrain=cfg.decoding,
        advantage_clip=cfg.algo.advantage_clip,
        run_dir=out,
        eval_rows=held,
        eval_every=cfg.run.eval_every,
        log_rollouts=cfg.run.log_rollouts,
        tags=run.tags,
        truncation=Truncation(cfg.rollout.truncation, cfg.run.seed) if cfg.rollout.truncation else None,
        **episodes,
    )

    for cb in (PrinterCallback, ProgressCallback):  # rlvr's CLI shows its own progress; the run folder has the rest
        trainer.remove_callback(cb)
    if trainer.accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.yaml").write_text(dump_config(cfg))
    resume_step = checkpoint_step(ckpt) if ckpt else None
    trainer.run_folder.resume_step = resume_step
    try:
        if ckpt is not None and resume_step is not None and resume_step >= cfg.run.steps:
            _finish_trained(trainer, ckpt)
        else:
            trainer.train(resume_from_checkpoint=ckpt)
    except (OSError, RuntimeError) as e:
        if not disk_refused(e):
            raise
        found, _ = last_complete_checkpoint(out)
        kept = f"{found} is intact: `rlvr train --resume {out}` continues from it" if found else "no earlier checkpoint"
        why = getattr(e, "strerror", None) or " ".join(str(e).split())[:200]
        raise RunError(f"the TRL run in {out} could not write ({why}); {kept}") from None
    finally:
        shutdown(run.env_cls)  # an OpenEnv server rlvr started ends with the run
    trainer.save_model(str(out / "model"))
    if trainer.accelerator.is_main_process:
        tok.save_pretrained(out / "model")
    result = dict(trainer.run_folder.result)
    result["steps"] = trainer.state.global_step
    result["resumed_from"] = checkpoint_step(ckpt) if ckpt else None
    return result
