"""The ``rlvr:`` section of a verl config, and the start-up checks of a verl config that uses rlvr.

A verl run turns rlvr's pieces on with verl's own keys (see :mod:`rlvr.integrations.verl`); what
rlvr itself needs (which rewards with which weights, the failure policy, the run folder) sits in one
top-level section, added on verl's command line with ``+rlvr.<key>=...`` or in the YAML::

    rlvr:
      rewards: {weights: {accuracy: 1.0, format: 0.2}, options: {format: {think_tag: think}}}
      failure: {exclude_truncated: true, quarantine: true, cold_start: true}
      advantage_clip: 3.0
      run_dir: runs/verl-gsm8k

It is the same pydantic schema as rlvr's own config sections, so a misspelt key or a bad value is
refused naming ``rlvr.<key>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError

from rlvr.config import FailureConfig, RewardsConfig, _Strict
from rlvr.errors import ConfigError

#: What the reward manager writes into every row's ``reward_extra_info`` (same keys on every row;
#: ``episode``: the JSON of what ``rlvr_tool_agent`` recorded of a multi-turn episode, "" for a
#: single-turn row; ``episode_cause``: its own cause, "" when the answer decides; ``env_reward`` /
#: ``env_components``: the judgement of an environment that judges its episodes, None / "" otherwise).
EXTRA_KEYS = (
    "acc",
    "total",
    "status",
    "cause",
    "admit",
    "finish",
    "pred",
    "reason",
    "completion",
    "episode",
    "episode_cause",
    "tool_calls",
    "env_reward",
    "env_components",
)


class VerlEnvSettings(_Strict):
    """What ``rlvr_tool_agent`` adds to verl's multi-turn rollouts (``rlvr.env``)."""

    tool_timeout_s: float = Field(10.0, gt=0)
    """Seconds a tool call may run; past it the call is ``env_timeout`` (verl has no limit of its own)."""
    retries: int = Field(2, ge=0)
    """A call that meets an environment fault is tried again with a fresh tool instance this many
    times inside the episode; still failing, the episode ends as ``fault`` (redrawn by group)."""
    faults: dict[Literal["tool_error", "env_timeout", "env_crash"], float] = Field(default_factory=dict)
    """Injected environment faults per kind, for tests and benchmarks (seeded; off by default)."""
    fault_seed: int = 0
    conversation: str | None = None
    """An environment that answers the policy's turns (``respond``: a ``verifiers`` ``MultiTurnEnv``,
    ``verifiers:<module>``, or ``module:Class``): ``rlvr_tool_agent`` hands it each turn that makes
    no call and goes on with its reply, until it ends the episode. Each row carries the data row the
    episode's environment is reset from (``extra_info.tools_kwargs.rlvr_conversation``:
    ``examples/verl/prepare.py --env`` writes it)."""


class VerlSettings(_Strict):
    """rlvr's section of a verl config."""

    rewards: RewardsConfig = RewardsConfig()
    failure: FailureConfig = FailureConfig()
    advantage_clip: float | None = Field(None, gt=0)
    """Clamp advantages to ``[-clip, clip]`` (``rlvr_grpo``)."""
    scale_rewards: bool = True
    """Divide advantages by the group std (False: Dr. GRPO)."""
    run_dir: str | None = None
    """rlvr's run folder (rollouts / metrics / quarantine); default ``trainer.default_local_dir``."""
    log_rollouts: bool = True
    completion_chars: int = Field(2000, ge=0)
    """How much of each completion travels in ``reward_extra_info`` (for the alarms and rollouts.jsonl)."""
    env: VerlEnvSettings = VerlEnvSettings()
    """Episodes with tools through ``rlvr_tool_agent``."""


def _plain(node: Any) -> Any:
    """An OmegaConf node (or anything) as plain Python containers."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(node, DictConfig | ListConfig):
            return OmegaConf.to_container(node, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf comes with verl
        pass
    return node


def _get(config: Any, dotted: str, default: Any = None) -> Any:
    node = config
    for key in dotted.split("."):
        if node is None:
            return default
        node = node.get(key) if isinstance(node, Mapping) or hasattr(node, "get") else getattr(node, key, None)
    return default if node is None else node


def settings_of(config: Any) -> VerlSettings:
    """The ``rlvr`` section of a verl config (defaults when absent).

    Raises:
        ConfigError: a key or value of the section is wrong (named as ``rlvr.<key>``).
    """
    raw = _plain(_get(config, "rlvr")) or {}
    try:
        return VerlSettings.model_validate(raw)
    except ValidationError as e:
        lines = [f"rlvr.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()]
        raise ConfigError("the verl config's rlvr section is invalid:\n  " + "\n  ".join(lines)) from None


def check_config(config: Any) -> VerlSettings:
    """Refuse a verl config whose rlvr pieces cannot work together, before anything starts.

    * ``algorithm.adv_estimator: rlvr_grpo`` admits rows by the causes rlvr's reward manager writes:
      it needs ``reward.reward_manager.name: rlvr``;
    * the ``rlvr`` trainer (``trainer.v1.trainer_mode: rlvr``) needs both, and the v1 trainer;
    * the ``rlvr`` section itself must validate.

    Returns the validated ``rlvr`` section.
    """
    settings = settings_of(config)
    manager = _get(config, "reward.reward_manager.name", "naive")
    estimator = str(_get(config, "algorithm.adv_estimator", ""))
    mode = _get(config, "trainer.v1.trainer_mode", "sync")
    if estimator == "rlvr_grpo" and manager != "rlvr":
        raise ConfigError(
            f"algorithm.adv_estimator=rlvr_grpo needs reward.reward_manager.name=rlvr (it is "
            f"{manager!r}): the estimator admits rows by the causes rlvr's reward manager writes; "
            "set reward.reward_manager.name=rlvr, or use algorithm.adv_estimator=grpo"
        )
    if mode == "rlvr":
        if manager != "rlvr":
            raise ConfigError(f"trainer.v1.trainer_mode=rlvr needs reward.reward_manager.name=rlvr (it is {manager!r})")
        if estimator != "rlvr_grpo":
            raise ConfigError(
                f"trainer.v1.trainer_mode=rlvr needs algorithm.adv_estimator=rlvr_grpo (it is "
                f"{estimator!r}): excluded rows must stay out of the group baseline"
            )
        if not _get(config, "trainer.use_v1", True):
            raise ConfigError("trainer.v1.trainer_mode=rlvr is a v1 trainer: set trainer.use_v1=true")
    check_tools_config(config)
    return settings


def check_tools_config(config: Any) -> None:
    """A multi-turn rollout rlvr cannot run is refused before any worker starts: the tool YAML and
    function-tool file must load (each tool described), the parser must be Hermes for
    ``rlvr_tool_agent`` to see malformed calls, ``rlvr_tool_agent`` needs tools (or a conversation,
    ``rlvr.env.conversation``, which also needs rlvr's reward manager), and an environment's
    tools (:class:`rlvr.integrations.verl.environments.EnvironmentTool`) need ``rlvr_tool_agent`` and
    rlvr's reward manager (the environment judges the episode there)."""
    mt = "actor_rollout_ref.rollout.multi_turn"
    yaml_path = _get(config, f"{mt}.tool_config_path")
    fn_path = _get(config, f"{mt}.function_tool_path")
    agent = _get(config, "actor_rollout_ref.rollout.agent.default_agent_loop")
    manager = _get(config, "reward.reward_manager.name", "naive")
    conversation = settings_of(config).env.conversation
    if conversation is not None and (agent != "rlvr_tool_agent" or manager != "rlvr"):
        raise ConfigError(
            f"rlvr.env.conversation={conversation!r}: the environment answers the policy's turns in "
            "rlvr_tool_agent and judges there, and rlvr's reward manager scores it; set "
            "actor_rollout_ref.rollout.agent.default_agent_loop=rlvr_tool_agent and "
            f"reward.reward_manager.name=rlvr (they are {agent!r}, {manager!r})"
        )
    if not yaml_path and not fn_path:
        if agent == "rlvr_tool_agent" and conversation is None:
            raise ConfigError(
                f"actor_rollout_ref.rollout.agent.default_agent_loop=rlvr_tool_agent has no tools: set "
                f"{mt}.tool_config_path (a tool YAML; rlvr's: examples/verl/rlvr_tools.yaml) or "
                f"{mt}.function_tool_path"
            )
        return
    try:
        from verl.tools.tool_registry import load_all_tools
    except ImportError:  # pragma: no cover - verl is there whenever a verl config is
        return
    try:
        tools = load_all_tools(
            tool_config_path=str(yaml_path) if yaml_path else None, function_tool_path=str(fn_path) if fn_path else None
        )
    except Exception as e:
        key = f"{mt}.tool_config_path" if yaml_path else f"{mt}.function_tool_path"
        raise ConfigError(
            f"{key}={yaml_path or fn_path!r} cannot be loaded: {type(e).__name__}: {e} (each tool "
            "needs class_name, config.type: native and a tool_schema, or a described "
            "@function_tool)"
        ) from None
    if not tools:
        raise ConfigError(f"{mt}.tool_config_path / function_tool_path define no tools")
    envs = sorted({t.spec for t in tools if type(t).__name__ == "EnvironmentTool"})
    if envs and (agent != "rlvr_tool_agent" or manager != "rlvr"):
        raise ConfigError(
            f"{mt}.tool_config_path lists the tools of {', '.join(envs)}: an environment's episodes are "
            "judged by it and closed in rlvr_tool_agent, and scored by rlvr's reward manager; set "
            "actor_rollout_ref.rollout.agent.default_agent_loop=rlvr_tool_agent and "
            f"reward.reward_manager.name=rlvr (they are {agent!r}, {manager!r})"
        )
    fmt = _get(config, f"{mt}.format", "hermes")
    if agent == "rlvr_tool_agent" and fmt != "hermes":
        raise ConfigError(
            f"{mt}.format={fmt!r}: rlvr_tool_agent reads calls in the Hermes markup "
            "(<tool_call>...</tool_call>) to tell a malformed call from an answer; set it to hermes"
        )


ID_KEYS = ("prompt_id", "index", "id")


def prompt_key(extra_info: Any) -> str | None:
    """A row's prompt id in ``extra_info`` (``prompt_id``, ``index`` or ``id``), or None."""
    info = extra_info if isinstance(extra_info, Mapping) else {}
    return next((str(info[k]) for k in ID_KEYS if info.get(k) is not None), None)


def check_row(row: Mapping[str, Any], where: str, *, needs_id: bool = False) -> Any:
    """The gold of one dataset row as verl stores it (``reward_model.ground_truth``).

    ``needs_id``: the row must also name its prompt (``extra_info.index``): quarantine counts
    deaths per prompt, and a row without an id cannot be told from the others.

    Raises:
        ConfigError: the row lacks either, naming the column and the fix.
    """
    if needs_id and prompt_key(row.get("extra_info")) is None:
        raise ConfigError(
            f"{where}: the row has no extra_info.index (or prompt_id); rlvr's quarantine "
            "(rlvr.failure.quarantine, on by default) counts deaths per prompt by it: write the row's "
            "index there when making the parquet (as verl's examples/data_preprocess scripts do), or "
            "set +rlvr.failure.quarantine=false"
        )
    rm = row.get("reward_model")
    gold = rm.get("ground_truth") if isinstance(rm, Mapping) else None
    if gold is None:
        keys = ", ".join(sorted(map(str, row))) or "none"
        raise ConfigError(
            f"{where}: the row has no reward_model.ground_truth (its columns: {keys}); rlvr verifies "
            "against it: write the gold there when making the parquet (as verl's "
            "examples/data_preprocess scripts do)"
        )
    return gold
