"""An rlvr environment under verl's agent loop: a ``verifiers`` tool environment (or an rlvr
environment class) as verl tools, its rows as verl's parquet rows, its rubric as the episode's judge.

verl's ``ToolAgentLoop`` knows tools, not environments: a tool YAML lists ``BaseTool`` classes, each
made once per worker, each call going through a fresh ``create`` / ``execute`` / ``release``. An
environment is one object per episode whose tools share its state (a ``StatefulToolEnv``'s hidden
arguments, the episode's messages its rubric reads) and which judges the final answer. So:

* :class:`EnvironmentTool` is one of the environment's tools (``config: {environment: <spec>, tool:
  <name>}``; :func:`tool_config` writes the YAML for all of them). The episode's environment is made
  at its first call, on verl's ``AgentData`` (shared by the environment's tools, fresh per episode),
  and reset from the row the dataset carries in ``extra_info.tools_kwargs.<tool>.create_kwargs.row``
  (:func:`rows` writes it). A ``reset`` that raises is ``env_crash`` (the environment's); a tool
  that raises, ``tool_error``: ``rlvr_tool_agent`` records both, tries again, and ends the episode as
  ``fault`` (out of the baseline and the loss, redrawn by group).
* :func:`judge` runs the environment's ``reward(answer, row)`` when the episode ends on the policy's
  answer (the rubric of a ``verifiers`` environment, with the episode's tool messages): its total and
  components travel in the episode's record and the reward manager takes them as the row's reward
  (:func:`rlvr.integrations.verl.rows.score_row`); a reward function that raises is ``tool_error``.

An environment that answers the policy's turns (``respond``: a ``verifiers`` ``MultiTurnEnv``) is no
tool: it is named once, ``+rlvr.env.conversation=<spec>``, and each row hands it its data row in
``extra_info.tools_kwargs.rlvr_conversation`` (:func:`rows` writes it); ``rlvr_tool_agent`` makes it
per episode like the others (:func:`conversation_environment`), hands it each turn without a call
and appends its reply as the chat template writes it (out of the loss), and it judges the episode.

verl writes its prompts before the run, so an environment whose ``reset`` adds text to the prompt
(an OpenEnv environment's first observation) cannot run here: refused with a :class:`ConfigError`.

    .venv-verl/bin/python examples/verl/prepare.py data/products --env verifiers:benchmarks/envs/vf_products.py
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from rlvr.data.tasks import Sample
from rlvr.diagnostics.causes import Cause
from rlvr.episodes.clock import timed
from rlvr.episodes.env import check_environment, load_environment, release, responds
from rlvr.episodes.episode import Episode
from rlvr.episodes.tools import EnvCrash
from rlvr.errors import ConfigError

#: Where the episode's environments live on verl's ``AgentData`` (by spec: one per episode).
_ENVS = "_rlvr_envs"
#: The ``tools_kwargs`` entry that hands a conversation's environment its row (no tool has this name).
CONVERSATION = "rlvr_conversation"
#: Environment classes and their tools' schemas, by spec, once per process (loading a verifiers
#: environment builds its dataset).
_LOADED: dict[str, tuple[type, dict[str, dict[str, Any]]]] = {}


def loaded(spec: str) -> tuple[type, dict[str, dict[str, Any]]]:
    """The environment class ``spec`` names (:func:`rlvr.episodes.env.load_environment`) and each of
    its tools' schemas, by name (checked: a tool the policy cannot be told how to call is refused)."""
    if spec not in _LOADED:
        cls = load_environment(spec)
        _LOADED[spec] = (cls, check_environment(cls))
    return _LOADED[spec]


def tool_config(spec: str) -> dict[str, Any]:
    """verl's tool YAML (as a dict) listing every tool of the environment ``spec`` names."""
    _, schemas = loaded(spec)
    return {
        "tools": [
            {
                "class_name": f"{__name__}.EnvironmentTool",
                "config": {"type": "native", "environment": spec, "tool": name},
                "tool_schema": schema,
            }
            for name, schema in schemas.items()
        ]
    }


def rows(samples: Iterable[Sample], spec: str, data_source: str = "rlvr_env") -> list[dict[str, Any]]:
    """The samples as verl's parquet rows for episodes of ``spec``: ``prompt``, ``data_source``,
    ``agent_name: rlvr_tool_agent``, ``reward_model.ground_truth`` (the gold) and ``extra_info``:
    ``index`` (the prompt id quarantine counts by), ``task``, and ``tools_kwargs`` (where verl's
    dataset reads them) handing each of the environment's tools the row its environment is reset
    from (as JSON: a gold's fields vary by row; a conversation's environment, under
    :data:`CONVERSATION`)."""
    cls, schemas = loaded(spec)
    names = [*schemas, *([CONVERSATION] if responds(cls) else [])]
    out = []
    for i, s in enumerate(samples):
        row = json.dumps({"gold": s.gold, "prompt": s.prompt, "task": s.task, "id": s.id}, default=str)
        out.append(
            {
                "prompt": s.prompt if isinstance(s.prompt, list) else [{"role": "user", "content": s.prompt}],
                "data_source": data_source,
                "agent_name": "rlvr_tool_agent",
                "reward_model": {"style": "rule", "ground_truth": s.gold},
                "extra_info": {
                    "index": i,
                    "task": s.task,
                    "id": s.id,
                    "need_tools_kwargs": True,
                    "tools_kwargs": {name: {"create_kwargs": {"row": row}} for name in names},
                },
            }
        )
    return out


def _row(create_kwargs: Mapping[str, Any] | None, tool: str) -> dict[str, Any]:
    raw = (create_kwargs or {}).get("row")
    if raw is None:
        raise ConfigError(
            f"the dataset row gives tool {tool!r} no extra_info.tools_kwargs.{tool}.create_kwargs.row: an "
            "environment is reset from its row; write the parquet with rlvr.integrations.verl.environments.rows"
        )
    return json.loads(raw) if isinstance(raw, str) else dict(raw)


def episode_environment(agent_data: Any, spec: str, row: dict[str, Any]) -> Any:
    """The episode's environment ``spec`` (made and reset from ``row`` at its first use).

    Raises:
        EnvCrash: ``reset`` raised (the environment could not start; the next try makes a fresh one).
        ConfigError: ``reset`` returned text for the prompt, which verl wrote before the run.
    """
    envs: dict[str, Any] = agent_data.__dict__.setdefault(_ENVS, {})
    if spec not in envs:
        env = loaded(spec)[0]()
        try:
            shown = env.reset(row)
        except Exception as e:
            raise EnvCrash(f"reset raised {type(e).__name__}: {e}") from e
        if shown:
            raise ConfigError(
                f"{spec}: reset() adds text to the prompt ({str(shown)[:80]!r}), which verl writes before "
                "the run; put it in the dataset's prompt instead"
            )
        envs[spec] = env
    return envs[spec]


def conversation_environment(agent_data: Any, spec: str) -> Any:
    """The episode's conversation environment ``spec`` (``rlvr.env.conversation``), made and reset at
    its first turn from the row under :data:`CONVERSATION` (see :func:`episode_environment`)."""
    kwargs = getattr(agent_data, "tools_kwargs", {}).get(CONVERSATION, {})
    return episode_environment(agent_data, spec, _row(kwargs.get("create_kwargs"), CONVERSATION))


class EnvironmentTool(BaseTool):
    """One tool of an rlvr environment (``config``: ``environment``, the spec; ``tool``, its name),
    called on the episode's own environment (see the module docstring)."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        self.spec, tool = str(config["environment"]), str(config["tool"])
        _, schemas = loaded(self.spec)
        if tool not in schemas:
            raise ConfigError(f"{self.spec} has no tool {tool!r}; its tools: {', '.join(schemas)}")
        self.tool = tool
        self._rows: dict[str, dict[str, Any]] = {}
        super().__init__(config, tool_schema or OpenAIFunctionToolSchema.model_validate(schemas[tool]))

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        iid, response = await super().create(instance_id)
        self._rows[iid] = _row(kwargs.get("create_kwargs"), self.tool)
        return iid, response

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        row, agent_data = self._rows[instance_id], kwargs["agent_data"]

        def call() -> Any:  # the environment's own time, on the agent loop's call clock
            env = episode_environment(agent_data, self.spec, row)
            return timed(getattr(env, self.tool), **parameters)

        return ToolResponse(text=str(await asyncio.to_thread(call))), 0.0, {}

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._rows.pop(instance_id, None)


def judge(
    agent_data: Any, tools: Mapping[str, Any], answer: str, turn: int, conversation: str | None = None
) -> dict[str, Any]:
    """The environment's judgement of the episode's answer, for the episode's record: ``{}`` when no
    environment among ``tools`` (nor the ``conversation``) judges (the task's verifier does), else
    ``judge: environment`` with ``score`` (an :class:`~rlvr.types.EnvScore` as a dict) or ``reward``
    (a number), or with ``events`` holding the ``tool_error`` of a ``reward`` that raised (the
    environment failing to judge, never a 0). Blocking (a rubric runs): call it off the event loop."""
    judges = [(conversation, CONVERSATION)] if conversation is not None else []
    judges += [(t.spec, t.name) for t in tools.values() if isinstance(t, EnvironmentTool)]
    for spec, name in judges:
        if not callable(getattr(loaded(spec)[0], "reward", None)):
            continue
        kwargs = getattr(agent_data, "tools_kwargs", {}).get(name, {})
        row = _row(kwargs.get("create_kwargs"), name)
        ep = Episode(prompt="", answer=answer)
        try:
            env = episode_environment(agent_data, spec, row)
        except EnvCrash as e:  # reset failed at the end (no call started it): the environment's crash
            ep.stopped(Cause.ENV_CRASH, turn, str(e))
        else:
            ep.judge(env.reward, row, turn)
        out: dict[str, Any] = {"judge": "environment"}
        if ep.score is not None:
            out["score"] = asdict(ep.score)
        elif ep.reward is not None:
            out["reward"] = ep.reward
        out["events"] = [{**asdict(e), "cause": e.cause.value} for e in ep.events]
        return out
    return {}


def close(agent_data: Any) -> None:
    """The episode is over: each of its environments that holds something (a ``close`` method) lets it go."""
    for env in agent_data.__dict__.pop(_ENVS, {}).values():
        release(env)
