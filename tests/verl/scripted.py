"""verl's agent loop driven by a stub server that returns scripted token ids (in verl's ``*_on_cpu.py``
style): what the agent-loop tests share."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
from verl.tools.tool_registry import load_all_tools
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from rlvr.integrations.verl.agent import RlvrToolAgentLoop
from rlvr.models.tiny import build_tokenizer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "verl"
TOK = build_tokenizer(max_length=1024)
CALL = '<tool_call>{"name":"calculator","arguments":{"expression":"12*34"}}</tool_call><eos>'


def example(*overrides: str):
    with initialize_config_dir(config_dir=str(EXAMPLES), version_base=None):
        return compose(
            config_name="calculator_agent_rlvr",
            overrides=[
                f"actor_rollout_ref.rollout.multi_turn.tool_config_path={EXAMPLES / 'rlvr_tools.yaml'}",
                *overrides,
            ],
        )


class ScriptedServer:
    """verl's server manager, answering each generate call with the next scripted turn."""

    def __init__(self, turns: list[str]) -> None:
        self.turns = list(turns)
        self.prompts: list[list[int]] = []

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any
    ) -> TokenOutput:
        self.prompts.append(list(prompt_ids))
        ids = TOK(self.turns.pop(0), add_special_tokens=False)["input_ids"]
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids))


def run(
    turns: list[str],
    *overrides: str,
    tools: list | None = None,
    prompt: str = "12*34",
    tools_kwargs: dict[str, Any] | None = None,
) -> tuple[Any, ScriptedServer]:
    """One episode of ``rlvr_tool_agent`` on the example config (``overrides`` on it), the policy's
    turns scripted; ``tools``: verl tool objects (default: the config's tool YAML)."""
    cfg = example(*overrides)
    server = ScriptedServer(turns)
    mt = cfg.actor_rollout_ref.rollout.multi_turn
    tool_list = tools if tools is not None else load_all_tools(mt.tool_config_path, None)

    async def episode() -> Any:  # built inside the running loop, as verl's workers build it
        loop = RlvrToolAgentLoop(
            trainer_config=DictConfigWrap(config=cfg),
            server_manager=server,
            tokenizer=TOK,
            processor=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(cfg.data),
            tools=ToolListWrap(tool_list),
        )
        return await loop.run(
            {"temperature": 1.0}, raw_prompt=[{"role": "user", "content": prompt}], tools_kwargs=tools_kwargs or {}
        )

    return asyncio.run(episode()), server
