"""One set-up of a run from its config, for every engine.

rlvr's own engine (:class:`rlvr.engine.trainer.GRPOTrainer`) and the TRL engine
(:func:`rlvr.integrations.trl.from_config.train_trl`) build what a config names here, the same way:
the device and precision checked before any model loads, the model and tokenizer, the training
and held-out rows, the rewards and the format's tags, the answer grammar, the environment class.
What only one engine has (rlvr's optimizer and reference model, TRL's ``GRPOConfig``) stays there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rlvr.algo.advantages import ESTIMATORS
from rlvr.config import TrainConfig
from rlvr.data import verifiers_env
from rlvr.data.prompts import check_context
from rlvr.data.stream import default_data
from rlvr.data.tasks import Sample
from rlvr.decoding.constrain import from_config as constrainer_for
from rlvr.episodes import check_environment, environment_class
from rlvr.episodes.env import responds
from rlvr.errors import ConfigError
from rlvr.models.device import resolve_device
from rlvr.models.load import load_model
from rlvr.rewards import Total
from rlvr.runtime import check_cpu_precision, setup_torch


@dataclass
class RunSetup:
    """What a config names, built.

    Attributes:
        device: where the policy runs (``run.device``).
        model, tokenizer: the policy (on ``device`` for rlvr's engine; TRL places its own).
        train_rows: the training rows (None: the config's synthetic task, streamed).
        eval_rows: the held-out rows.
        rewards: the weighted total of the configured rewards (components kept apart).
        tags: the format reward's ``(think, answer)`` tags.
        constrainer: the answer grammar (``decoding``), None without one.
        env_cls: the episodes' environment class (``env``), None for single-turn rollouts.
    """

    device: Any
    model: Any
    tokenizer: Any
    train_rows: list[Sample] | None
    eval_rows: list[Sample]
    rewards: Total
    tags: tuple[str | None, str]
    constrainer: Any
    env_cls: type | None


def check_device(cfg: TrainConfig, engine: Literal["rlvr", "trl"] = "rlvr") -> Any:
    """The device ``run.device`` names, and the precisions the config asks for checked on it: a
    CPU that would emulate bfloat16 is refused here, with its timings, before any model loads."""
    device = resolve_device(cfg.run.device)
    if device.type == "cpu":
        asked: dict[str, str] = {"model.dtype": cfg.model.dtype, "model.autocast": cfg.model.autocast}
        if engine == "rlvr":  # TRL samples with its own generation, in the model's precision
            asked["rollout.dtype"] = cfg.rollout.dtype
        check_cpu_precision(asked)
    return device


def check_verifiers_rows(cfg: TrainConfig) -> None:
    """A ``verifiers`` environment with tools, or one that answers the policy's turns, named only in
    ``data.path`` would be scored as one turn: refused, saying the line to write instead."""
    path = cfg.data.path or ""
    if not path.startswith(verifiers_env.SCHEME) or cfg.env is not None:
        return
    kind = None
    if verifiers_env.has_tools(path):
        kind = "with tools"
    elif verifiers_env.converses(path):
        kind = "that answers the policy's turns"
    if kind is not None:
        raise ConfigError(
            f"data.path {path!r} is a verifiers environment {kind}: its episodes need it; "
            f"set env.environment: {path} instead (its rows come with it)"
        )


def build(
    cfg: TrainConfig,
    *,
    engine: Literal["rlvr", "trl"] = "rlvr",
    model: Any = None,
    tokenizer: Any = None,
    train_rows: list[Sample] | None = None,
    eval_rows: list[Sample] | None = None,
    rewards: Total | None = None,
) -> RunSetup:
    """Everything a run of ``cfg`` needs before its engine's own pieces (any of them given is kept).

    On TRL the model stays where it loads (accelerate places it) and TRL sets up gradient
    checkpointing from its own arguments.
    """
    setup_torch(cfg.run.threads, cfg.run.seed)
    ESTIMATORS.get(cfg.algo.estimator)  # an unknown estimator: refused before anything loads
    device = check_device(cfg, engine)
    if train_rows is None and eval_rows is None:  # read (and refused) before a model loads
        train_rows, eval_rows = default_data(cfg)
    check_verifiers_rows(cfg)
    if model is None:
        mcfg = cfg.model if engine == "rlvr" else cfg.model.model_copy(update={"gradient_checkpointing": False})
        model, tokenizer = load_model(mcfg, cfg.run.seed, device if engine == "rlvr" else None)
    elif engine == "rlvr":
        model = model.to(device)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    context = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    check_context([*(train_rows or ()), *(eval_rows or ())], tokenizer, context, cfg.rollout.max_new_tokens)
    rewards = rewards or Total.from_config(cfg.rewards)
    fmt = rewards.rewards.get("format")
    tags = (getattr(fmt, "think_tag", None), getattr(fmt, "answer_tag", "answer"))
    # built here on every engine: where the grammar forces the format, the format reward's weight goes to 0
    constrainer = constrainer_for(cfg.decoding, tokenizer, model.get_output_embeddings().weight.shape[0], rewards)
    env_cls = None
    if cfg.env is not None:  # episodes with tools: the environment is built and described once, up front
        env_cls = environment_class(cfg.env.tools, cfg.env.environment, cfg.env.server, cfg.env.tool_timeout_s)
        check_environment(env_cls)
        if constrainer is not None and responds(env_cls):
            raise ConfigError(
                f"decoding.constrain with env.environment {cfg.env.environment!r}: the environment answers "
                "the policy's turns (respond), so any turn may be the last and none is the answer's to "
                "constrain; decoding.constrain: none"
            )
    return RunSetup(device, model, tokenizer, train_rows, eval_rows or [], rewards, tags, constrainer, env_cls)
