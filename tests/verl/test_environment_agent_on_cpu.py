"""A ``verifiers`` tool environment under verl's agent loop: its rows and tools written by
``examples/verl/prepare.py --env``, read back by verl (parquet, ``load_all_tools``), its episodes
run by ``rlvr_tool_agent`` (scripted turns, :mod:`scripted`), judged by its rubric and scored the
rlvr way; its faults are causes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from scripted import CALL, ROOT, TOK, example, run
from verl.tools.tool_registry import load_all_tools
from verl.utils.dataset.rl_dataset import RLHFDataset

from rlvr.errors import ConfigError
from rlvr.integrations.verl.environments import EnvironmentTool
from rlvr.integrations.verl.rows import score_row
from rlvr.integrations.verl.settings import check_config, check_tools_config, settings_of
from rlvr.rewards import Total

PUBLISHED = ROOT / "tests" / "episodes" / "published"
CALCULATOR = f"verifiers:{PUBLISHED / 'vf_calculator.py'}"
GUESS = f"verifiers:{PUBLISHED / 'vf_guess.py'}"


def _prepare() -> Any:
    spec = importlib.util.spec_from_file_location("verl_prepare", ROOT / "examples" / "verl" / "prepare.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def prepared(tmp: Path, env: str, held: int = 4) -> tuple[list[Any], RLHFDataset]:
    """The environment as verl reads it: its tools from the YAML, its training rows through verl's
    dataset (which hands the agent loop ``tools_kwargs`` from each row's ``extra_info``)."""
    _prepare().environment(tmp, env, None, held)
    rows = RLHFDataset(str(tmp / "train.parquet"), TOK, example().data)
    return load_all_tools(str(tmp / "tools.yaml"), None), rows


def episode(turns: list[str], tools: list[Any], row: Any, *overrides: str) -> dict[str, Any]:
    out, _ = run(turns, *overrides, tools=tools, tools_kwargs=row["tools_kwargs"])
    return out.extra_fields["rlvr_episode"]


def scored(ep: dict[str, Any], row: Any) -> dict[str, Any]:
    total = Total.from_config(settings_of(example()).rewards)
    got = score_row(
        total,
        ep["answer"],
        row["reward_model"]["ground_truth"],
        data_source=row["data_source"],
        extra_info=dict(row["extra_info"]),
        episode=ep,
    )
    return {"score": got.score, **got.extra}


def test_a_verifiers_tool_environment_trains_under_verls_agent_loop_judged_by_its_rubric(tmp_path) -> None:
    tools, rows = prepared(tmp_path, CALCULATOR)
    assert [t.name for t in tools] == ["calculator"] and len(rows) == 12  # 16 rows, 4 held out
    assert len(pd.read_parquet(tmp_path / "test.parquet")) == 4
    assert set(tools[0].tool_schema.function.parameters.properties) == {"expression"}
    row = rows[0]  # 12*34
    assert row["agent_name"] == "rlvr_tool_agent" and json.loads(row["reward_model"]["ground_truth"])["answer"] == "408"

    # a call to the environment's own tool, then the answer: its rubric sees the tool turn
    ep = episode([CALL, "The product is 408.<eos>"], tools, row)
    assert ep["events"] == [] and ep["finish"] == "eos" and ep["judge"] == "environment"
    assert ep["score"]["components"] == {"correct_answer": 1.0, "used_the_tool": 1.0}
    got = scored(ep, row)
    assert got["score"] == pytest.approx(1.1) and got["acc"] == 1.0 and got["cause"] == "correct"
    assert got["admit"] == 1.0 and got["env_reward"] == pytest.approx(1.1)
    assert json.loads(got["env_components"]) == {"correct_answer": 1.0, "used_the_tool": 1.0}

    # no call: the rubric still judges (its tool reward 0); a wrong answer is the verification's death
    got = scored(episode(["408<eos>"], tools, row), row)
    assert got["score"] == pytest.approx(1.0) and got["cause"] == "correct"
    wrong = scored(episode([CALL, "409<eos>"], tools, row), row)
    assert wrong["score"] == pytest.approx(0.1) and wrong["cause"] == "wrong" and wrong["admit"] == 1.0
    assert set(wrong) == set(got)  # verl batches reward_extra_info by the first row's keys


def test_the_environments_failures_are_its_causes_not_zeros(tmp_path) -> None:
    tools, rows = prepared(tmp_path / "tool", f"{CALCULATOR}?fail_rate=1.0")
    row = rows[0]
    ep = episode([CALL, "408<eos>"], tools, row)  # the tool raises on every try
    assert [e["cause"] for e in ep["events"]] == ["tool_error"] and ep["finish"] == "fault"
    assert "service is down" in ep["events"][0]["detail"] and len(ep["recovered"]) == 2
    assert "judge" not in ep  # a faulted episode is redrawn, never judged
    got = scored(ep, row)
    assert got["cause"] == "tool_error" and got["admit"] == 0.0

    tools, rows = prepared(tmp_path / "reward", f"{CALCULATOR}?reward_fails=true")
    row = rows[0]
    ep = episode([CALL, "408<eos>"], tools, row)  # the rubric raises judging a good episode
    assert [e["cause"] for e in ep["events"]] == ["tool_error"] and ep["finish"] == "fault"
    assert "the grader lost its key" in ep["events"][0]["detail"]
    got = scored(ep, row)
    assert got["cause"] == "tool_error" and got["admit"] == 0.0 and got["env_reward"] is None

    # the policy's own mistakes stay the policy's: an argument outside the environment tool's schema
    tools, rows = prepared(tmp_path / "ok", CALCULATOR)
    bad = '<tool_call>{"name":"calculator","arguments":{"expr":"12*34"}}</tool_call><eos>'
    ep = episode([bad, "408<eos>"], tools, rows[0])
    assert [e["cause"] for e in ep["events"]] == ["bad_arguments"] and ep["finish"] == "eos"


def test_a_stateful_game_keeps_its_state_across_calls_and_into_its_rubric(tmp_path) -> None:
    tools, rows = prepared(tmp_path, GUESS, held=1)
    assert set(tools[0].tool_schema.function.parameters.properties) == {"number"}  # the secret is hidden
    row = rows[0]  # secret 7
    guess = '<tool_call>{"name":"guess","arguments":{"number":%d}}</tool_call><eos>'
    out, _ = run([guess % 3, guess % 7, "7<eos>"], tools=tools, tools_kwargs=row["tools_kwargs"])

    text = TOK.decode(out.response_ids)
    assert "<tool_response>higher</tool_response>" in text and "<tool_response>right</tool_response>" in text
    ep = out.extra_fields["rlvr_episode"]
    assert ep["score"]["components"] == {"found": 1.0}  # the rubric read the guesses the tools counted
    # the same answer without a guess: the game's state has none, and its rubric says so
    assert episode(["7<eos>"], tools, row)["score"]["components"] == {"found": 0.0}


def test_a_row_that_does_not_hand_the_environment_its_row_is_refused(tmp_path) -> None:
    tools, _ = prepared(tmp_path, CALCULATOR)
    with pytest.raises(ConfigError, match=r"tools_kwargs\.calculator\.create_kwargs\.row"):
        run([CALL, "408<eos>"], tools=tools, tools_kwargs={})


def test_an_environments_tools_without_rlvrs_agent_loop_or_reward_manager_are_refused(tmp_path) -> None:
    _prepare().environment(tmp_path, CALCULATOR, None, 4)
    tools = f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tmp_path / 'tools.yaml'}"
    check_config(example(tools))  # rlvr_tool_agent and the rlvr reward manager: runs
    with pytest.raises(ConfigError, match=r"vf_calculator\.py.*default_agent_loop=rlvr_tool_agent"):
        check_config(example(tools, "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent"))
    with pytest.raises(ConfigError, match=r"reward\.reward_manager\.name=rlvr \(they are 'rlvr_tool_agent', 'naive'\)"):
        check_tools_config(example(tools, "reward.reward_manager.name=naive"))


SHOP = '''
class Shop:
    def reset(self, row):
        self.stock = {"pen": 3, "ink": 5}

    def price(self, item: str) -> int:
        """The price of an item.

        Args:
            item: the item's name.
        """
        return self.stock[item]

    def reward(self, answer, row):
        return 1.0 if answer.strip() == row["gold"] else 0.0
'''


def test_an_rlvr_environment_class_runs_the_same_way_its_number_the_accuracy(tmp_path, monkeypatch) -> None:
    from rlvr.data.tasks import Sample
    from rlvr.integrations.verl.environments import rows

    (tmp_path / "shop_env.py").write_text(SHOP)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "shop_env:Shop"
    samples = [Sample(prompt="What does a pen cost?", gold="3", task="math", id="pen")]
    pd.DataFrame(rows(samples, spec)).to_parquet(tmp_path / "train.parquet")
    row = RLHFDataset(str(tmp_path / "train.parquet"), TOK, example().data)[0]
    tool = EnvironmentTool({"type": "native", "environment": spec, "tool": "price"})
    call = '<tool_call>{"name":"price","arguments":{"item":"pen"}}</tool_call><eos>'
    out, _ = run([call, "3<eos>"], tools=[tool], tools_kwargs=row["tools_kwargs"])
    assert "<tool_response>3</tool_response>" in TOK.decode(out.response_ids)
    ep = out.extra_fields["rlvr_episode"]
    assert ep["judge"] == "environment" and ep["reward"] == 1.0 and "score" not in ep
    got = scored(ep, row)
    assert got["env_reward"] == 1.0 and got["accuracy"] == 1.0 and got["cause"] == "correct"
    # a tool that raises on a well-formed call (an item the shop does not stock) is the environment's
    bad = '<tool_call>{"name":"price","arguments":{"item":"cap"}}</tool_call><eos>'
    ep = episode([bad, "3<eos>"], [tool], row)
    assert [e["cause"] for e in ep["events"]] == ["tool_error"] and ep["finish"] == "fault"


# ----------------------------------------------------------------------------- a conversation
ECHO = f"verifiers:{PUBLISHED / 'vf_echo.py'}"


def conversed(tmp: Path, env: str, said: list[str] | None, *overrides: str) -> tuple[Any, Any, list[int]]:
    """One episode of the conversing environment ``env`` under ``rlvr_tool_agent``, its rows as
    prepare.py writes them (no tool YAML: it has no tools) read back through verl's dataset; the
    policy says ``said``, or each number it is asked for (None). Returns the output, the row and
    the row's numbers."""
    _prepare().environment(tmp, env, None, 2)
    assert not (tmp / "tools.yaml").exists()
    row = RLHFDataset(str(tmp / "train.parquet"), TOK, example().data)[0]
    numbers = json.loads(row["reward_model"]["ground_truth"])["info"]["numbers"]
    turns = [f"{x}<eos>" for x in (said if said is not None else numbers)]
    out, _ = run(
        turns,
        f"+rlvr.env.conversation='{env}'",
        *overrides,
        tools=[],
        prompt=f"say {numbers[0]}",
        tools_kwargs=row["tools_kwargs"],
    )
    return out, row, numbers


def test_a_multi_turn_environment_answers_each_turn_under_verls_agent_loop(tmp_path) -> None:
    out, row, numbers = conversed(tmp_path, ECHO, None)
    ep = out.extra_fields["rlvr_episode"]
    assert ep["events"] == [] and ep["finish"] == "eos" and ep["turns"] == 3 and ep["replies"] == 3
    assert ep["judge"] == "environment" and ep["score"]["components"] == {"said_back": 1.0}
    ids, mask = list(out.response_ids), list(out.response_mask)
    theirs = TOK.decode([t for t, m in zip(ids, mask) if m == 0])
    assert theirs == "".join(f"Q:say {x}=" for x in numbers[1:])  # the replies, as written, out of the loss
    assert TOK.decode([t for t, m in zip(ids, mask) if m == 1]) == "".join(f"{x}<eos>" for x in numbers)
    got = scored(ep, row)
    assert got["cause"] == "correct" and got["env_reward"] == 1.0 and got["admit"] == 1.0


def test_a_conversation_s_failures_and_limits_are_told_apart_under_verl(tmp_path) -> None:
    out, row, _ = conversed(tmp_path / "down", f"{ECHO}?fail_rate=1.0", ["1", "2"])
    ep = out.extra_fields["rlvr_episode"]
    assert [e["cause"] for e in ep["events"]] == ["tool_error"] and ep["finish"] == "fault" and "judge" not in ep
    assert "the echo service is down" in ep["events"][0]["detail"]
    assert scored(ep, row)["admit"] == 0.0
    out, _, _ = conversed(tmp_path / "long", ECHO, None, "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=2")
    ep = out.extra_fields["rlvr_episode"]
    assert ep["finish"] == "turn_limit" and [e["cause"] for e in ep["events"]] == ["turn_limit"]
    assert ep["judge"] == "environment"  # the policy's: judged, in the gradient


def test_a_conversation_needs_rlvrs_agent_loop_and_reward_manager(tmp_path) -> None:
    conv = f"+rlvr.env.conversation='{ECHO}'"
    check_config(example(conv, "~actor_rollout_ref.rollout.multi_turn.tool_config_path"))  # no tools needed
    with pytest.raises(ConfigError, match=r"rlvr\.env\.conversation=.*default_agent_loop=rlvr_tool_agent"):
        check_config(example(conv, "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent"))
