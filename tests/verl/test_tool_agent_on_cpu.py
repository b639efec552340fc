"""``rlvr_tool_agent`` inside verl: verl's own agent loop, config and tools, driven by a stub server that
returns scripted token ids (:mod:`scripted`), and rlvr's reward manager reading what it recorded."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest
import torch
from scripted import CALL, TOK, example, run
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

from rlvr.episodes.clock import policy_time
from rlvr.errors import ConfigError
from rlvr.integrations.verl.settings import check_config
from rlvr.integrations.verl.tools import CalculatorTool


def test_it_is_registered_with_verl_and_a_tool_call_runs_rlvrs_calculator() -> None:
    assert "rlvr_tool_agent" in _agent_loop_registry
    out, server = run([CALL, "<answer>408</answer><eos>"])
    ep = out.extra_fields["rlvr_episode"]
    assert ep["events"] == [] and ep["tool_calls"] == 1 and ep["finish"] == "eos"
    assert ep["answer"] == "<answer>408</answer>"
    # the tool's result was rendered into the sequence by verl's chat-template merge, out of the loss
    text = TOK.decode(out.response_ids)
    assert "<tool_response>408</tool_response>" in text
    tool = [i for i, m in enumerate(out.response_mask) if m == 0]
    assert tool and TOK.decode([out.response_ids[i] for i in tool]) == "<tool_response>408</tool_response>"
    assert len(server.prompts) == 2


def test_what_verl_turns_into_text_is_recorded_with_its_cause() -> None:
    # markup the Hermes parser cannot read: verl took it for the answer
    out, _ = run(['<tool_call>{"name": oops}</tool_call><eos>'])
    assert [e["cause"] for e in out.extra_fields["rlvr_episode"]["events"]] == ["malformed_tool_call"]
    # a tool the row does not offer, then an answer: the policy's fault, the episode goes on
    out, _ = run(['<tool_call>{"name":"search","arguments":{"q":"x"}}</tool_call><eos>', "<answer>1</answer><eos>"])
    ep = out.extra_fields["rlvr_episode"]
    assert [e["cause"] for e in ep["events"]] == ["unknown_tool"] and ep["finish"] == "eos"
    # arguments outside the tool's schema
    bad = '<tool_call>{"name":"calculator","arguments":{"expr":"1"}}</tool_call><eos>'
    out, _ = run([bad, "<answer>1</answer><eos>"])
    assert [e["cause"] for e in out.extra_fields["rlvr_episode"]["events"]] == ["bad_arguments"]
    # max_assistant_turns with a call in the last turn
    out, _ = run([CALL, CALL], "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=2")
    ep = out.extra_fields["rlvr_episode"]
    assert [e["cause"] for e in ep["events"]] == ["turn_limit"] and ep["finish"] == "turn_limit"
    # a tool result that leaves no room in the response
    out, _ = run([CALL, "<answer>408</answer><eos>"], "actor_rollout_ref.rollout.response_length=90")
    assert out.extra_fields["rlvr_episode"]["finish"] == "context_overflow"


class Flaky:
    """A verl function-style tool that fails on its first ``fails`` calls (a service outage)."""

    def __init__(self, fails: int) -> None:
        from verl.tools.schemas import OpenAIFunctionToolSchema

        self.fails, self.name = fails, "calculator"
        self.tool_schema = OpenAIFunctionToolSchema.model_validate(
            {
                "type": "function",
                "function": {
                    "name": "calculator",
                    "description": "d",
                    "parameters": {
                        "type": "object",
                        "properties": {"expression": {"type": "string"}},
                        "required": ["expression"],
                    },
                },
            }
        )

    async def create(self, create_kwargs=None):
        return "i", None

    async def execute(self, instance_id, parameters, **kwargs):
        from verl.tools.schemas import ToolResponse

        if self.fails > 0:
            self.fails -= 1
            raise ConnectionError("calculator service unavailable")
        return ToolResponse(text="408"), 0.0, {}

    async def release(self, instance_id):
        return None


def test_environment_faults_are_retried_with_a_fresh_instance_then_end_the_episode() -> None:
    out, _ = run([CALL, "<answer>408</answer><eos>"], tools=[Flaky(fails=1)])
    ep = out.extra_fields["rlvr_episode"]
    assert ep["events"] == [] and [r["cause"] for r in ep["recovered"]] == ["tool_error"]  # recovered: no cause
    out, server = run([CALL, "<answer>408</answer><eos>"], tools=[Flaky(fails=5)])
    ep = out.extra_fields["rlvr_episode"]
    assert [e["cause"] for e in ep["events"]] == ["tool_error"] and ep["finish"] == "fault"
    assert "service unavailable" in ep["events"][0]["detail"] and len(ep["recovered"]) == 2
    assert len(server.prompts) == 1 and ep["answer"] == ""  # stopped at the fault: nothing more sampled
    out, _ = run([CALL, "<answer>408</answer><eos>"], "+rlvr.env.faults.env_crash=1.0")
    assert out.extra_fields["rlvr_episode"]["events"][0]["cause"] == "env_crash"


class Slow(CalculatorTool):
    """rlvr's calculator (its schema), whose work takes ``seconds``: in the policy's own program
    (marked with ``policy_time``, bounded by the tool at ``own_limit``, as rlvr's python tool marks
    it) or in the environment's."""

    def __init__(self, seconds: float, policy: bool, own_limit: float = 5.0) -> None:
        super().__init__({"type": "native"})

        def calculator(expression: str) -> str:
            if policy:
                with policy_time(own_limit):
                    time.sleep(seconds)
            else:
                time.sleep(seconds)
            return "408"

        self.fn = calculator


def test_the_policys_program_time_is_not_the_environments_timeout() -> None:
    # 1.2 s of the policy's program under a 0.5 s guard: its result, the episode goes on (it was env_timeout)
    out, _ = run([CALL, "<answer>408</answer><eos>"], "rlvr.env.tool_timeout_s=0.5", tools=[Slow(1.2, policy=True)])
    ep = out.extra_fields["rlvr_episode"]
    assert ep["events"] == [] and ep["recovered"] == [] and ep["finish"] == "eos"
    assert "<tool_response>408</tool_response>" in TOK.decode(out.response_ids)
    # the same time spent by the environment itself is its timeout
    out, _ = run(
        [CALL, "<answer>408</answer><eos>"],
        "rlvr.env.tool_timeout_s=0.5",
        "rlvr.env.retries=0",
        tools=[Slow(1.2, policy=False)],
    )
    ep = out.extra_fields["rlvr_episode"]
    assert [e["cause"] for e in ep["events"]] == ["env_timeout"] and ep["finish"] == "fault"
    assert "ran past 0.5s" in ep["events"][0]["detail"]


def _trajectory(extra_fields: dict, text: str) -> DataProto:
    prompt = TOK("Q:12*34=")["input_ids"]
    resp = TOK(text, add_special_tokens=False)["input_ids"]
    width = len(resp) + 4
    responses = torch.full((1, width), TOK.pad_token_id)
    responses[0, : len(resp)] = torch.tensor(resp)
    attention = torch.cat([torch.ones(1, len(prompt)), (torch.arange(width) < len(resp)).float()[None]], 1).long()
    return DataProto.from_dict(
        tensors={"prompts": torch.tensor([prompt]), "responses": responses, "attention_mask": attention},
        non_tensors={
            "data_source": np.array(["arith"], dtype=object),
            "reward_model": np.array([{"ground_truth": "408"}], dtype=object),
            "extra_info": np.array([{"index": 3}], dtype=object),
            "tool_extra_fields": np.array([extra_fields], dtype=object),
        },
    )


def test_the_reward_manager_reads_the_episode_with_a_fixed_key_set_and_judges_the_final_turn_only() -> None:
    from verl.trainer.ppo.reward import load_reward_manager

    from rlvr.integrations.verl.batch import Row, view_of

    good, _ = run([CALL, "<answer>408</answer><eos>"])
    faulted, _ = run([CALL, "<answer>408</answer><eos>"], tools=[Flaky(fails=5)])
    datas = [
        _trajectory(out.extra_fields, TOK.decode(out.response_ids, skip_special_tokens=True)) for out in (good, faulted)
    ]

    async def score() -> list[dict]:
        manager = load_reward_manager(example(), TOK)
        return [(await manager.run_single(d))["reward_extra_info"] for d in datas]

    infos = asyncio.run(score())
    assert len({tuple(sorted(i)) for i in infos}) == 1  # verl batches them: the same keys on every row
    assert infos[0]["cause"] == "correct" and infos[0]["admit"] == 1.0 and infos[0]["tool_calls"] == 1.0
    # the faulted episode's response holds the tool's "408" request, never its answer: not correct, not admitted
    assert infos[1]["cause"] == "tool_error" and infos[1]["episode_cause"] == "tool_error" and infos[1]["admit"] == 0.0
    assert infos[1]["acc"] == 0.0
    view = view_of(Row("k_0_0", "k", "3", infos[1]))
    assert view.episode is not None and view.episode.value == "tool_error" and view.events
    assert json.loads(infos[1]["episode"])["finish"] == "fault"
    # rlvr's replay buffer step: the faulted rows leave the group (mask zeroed, out of rlvr_grpo's
    # baseline) and are the ones its group is redrawn for
    from rlvr.config import FailureConfig
    from rlvr.diagnostics.step import FailureAware
    from rlvr.integrations.verl.batch import decide_rows

    fa = FailureAware(FailureConfig(), group_size=1)
    d = decide_rows(fa, [Row(f"u_{i}_0", "u", "3", infos[i % 2]) for i in range(4)], 1)
    assert d.admit.tolist() == [True, False, True, False] and fa.to_resample(d.causes) == [1, 3]
    assert d.metrics["env/fault_rate"] == 0.5


def test_tool_configs_rlvr_cannot_run_are_refused_before_any_worker_starts(tmp_path) -> None:
    check_config(example())  # the example: tools load, Hermes format, rlvr_tool_agent
    with pytest.raises(ConfigError, match="has no tools"):
        check_config(example("actor_rollout_ref.rollout.multi_turn.tool_config_path=null"))
    bad = tmp_path / "tools.yaml"
    bad.write_text("tools:\n  - class_name: rlvr.integrations.verl.tools.NoSuchTool\n    config: {type: native}\n")
    with pytest.raises(ConfigError, match=r"tool_config_path=.*cannot be loaded"):
        check_config(example(f"actor_rollout_ref.rollout.multi_turn.tool_config_path={bad}"))
    with pytest.raises(ConfigError, match="hermes"):
        check_config(example("actor_rollout_ref.rollout.multi_turn.format=qwen3_coder"))
    with pytest.raises(ConfigError, match=r"rlvr\.env\.retries"):
        check_config(example("rlvr.env.retries=-1"))
