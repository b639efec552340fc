"""Environments people publish, as rlvr episodes: ``verifiers`` environments (their dataset, tools
and rubric) and OpenEnv servers, written here in those libraries' own APIs
(``tests/episodes/published/``), their faults told from the policy's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers")
pytest.importorskip("openenv.core")

from rlvr.data.verifiers_env import gold_fields, load_rows, train_and_held
from rlvr.diagnostics.causes import Cause
from rlvr.episodes import call_markup, run_episode
from rlvr.episodes.env import check_environment, load_environment
from rlvr.episodes.episode import env_scored
from rlvr.errors import ConfigError, DataError
from rlvr.types import RewardBreakdown, Status
from rlvr.verify import verify

HERE = Path(__file__).parent / "published"
CALC = f"verifiers:{HERE / 'vf_calculator.py'}"
SINGLE = f"verifiers:{HERE / 'vf_single.py'}"
GUESS = f"verifiers:{HERE / 'vf_guess.py'}"
ECHO = f"verifiers:{HERE / 'vf_echo.py'}"
SERVER = f"{sys.executable} {HERE / 'openenv_calculator.py'} --port {{port}}"


def scripted(*turns: str):
    """A policy that writes ``turns`` in order (what a model would write), whatever it is shown."""
    it = iter(turns)

    def policy(messages, budget):
        return next(it), "eos", 5

    return policy


def episode(cls, row, *turns, **kw):
    return run_episode(scripted(*turns), cls, row, "q", max_turns=kw.pop("max_turns", 4), **kw)


def row_of(spec: str, i: int = 0) -> dict:
    s = load_rows(spec)[i]
    return {"prompt": s.prompt, "gold": s.gold, "task": s.task, "id": s.id, **s.extra}


def judged(ep):
    blank = RewardBreakdown(None, {"accuracy": None}, {"accuracy": 1.0})
    return env_scored(blank, ep)


# ----------------------------------------------------------------------------- verifiers
def test_a_verifiers_dataset_becomes_rows_and_its_eval_dataset_the_held_out_rows() -> None:
    rows = load_rows(CALC)
    assert len(rows) == 16 and {r.task for r in rows} == {"verifiers"}
    assert rows[0].prompt[-1] == {"role": "user", "content": "12*34"} and rows[0].id.endswith("train-0")
    f = gold_fields(rows[0].gold)
    assert f["answer"] == "408" and f["info"] == {"a": 12, "b": 34} and f["env"] == CALC
    train, held = train_and_held(SINGLE, 10)
    assert len(train) == 6 and [gold_fields(h.gold)["answer"] for h in held] == ["42"]  # its own eval dataset
    assert train[0].prompt[0] == {"role": "system", "content": "Answer in <answer></answer>."}
    train, held = train_and_held(CALC, 4)  # none of its own: the first rows held out
    assert len(held) == 4 and len(train) == 12
    with pytest.raises(DataError, match=r"lower data\.eval_size"):
        train_and_held(CALC, 16)


def test_a_single_turn_environment_s_rubric_is_the_verdict_and_its_deaths_stay_apart() -> None:
    gold = load_rows(SINGLE)[2].gold  # 2 + 3
    right = verify("<answer>5</answer>", gold, task="verifiers")
    assert right.status is Status.CORRECT and right.details["components"] == {"correct_answer": 1.0, "format": 1.0}
    wrong = verify("<answer>6</answer>", gold, task="verifiers")
    assert wrong.status is Status.WRONG and wrong.extracted == "6"
    assert verify("five, I think", gold, task="verifiers").status is Status.NO_ANSWER  # the format's death
    assert verify("<answer>5</answer>", '{"no": 1}', task="verifiers").status is Status.BAD_GOLD


def test_a_reward_function_that_raises_is_the_environment_s_error_not_a_zero() -> None:
    spec = f"{CALC}?reward_fails=true"
    v = verify("408", load_rows(spec)[0].gold, task="verifiers")
    assert v.status is Status.ERROR and "correct_answer raised ValueError" in v.reason
    cls = load_environment(spec)
    ep = episode(cls, row_of(spec), "408")
    assert ep.finish == "eos"
    ep.judge(cls().reward, row_of(spec), 0)  # what the engines do when the episode ends
    assert ep.cause() is Cause.TOOL_ERROR and "reward raised" in ep.events[-1].detail


def test_a_tool_environment_runs_its_tools_under_rlvr_s_guard_and_its_rubric_keeps_components() -> None:
    cls = load_environment(CALC)
    schemas = check_environment(cls)
    assert list(schemas) == ["calculator"]
    assert schemas["calculator"]["function"]["parameters"]["required"] == ["expression"]
    row = row_of(CALC)
    ep = episode(cls, row, call_markup("calculator", {"expression": "12*34"}), "408")
    assert [t.content for t in ep.turns if t.role == "tool"] == ["408"] and ep.cause() is None
    ep.judge(cls().reward, row, 1)  # a fresh instance judges from the row alone: no tool calls seen
    fresh = ep.score
    env = cls()
    env.reset(row)
    env.calculator(expression="12*34")
    ep.judge(env.reward, row, 1)
    assert (
        ep.score.components == {"correct_answer": 1.0, "used_the_tool": 1.0} and fresh.components["used_the_tool"] == 0
    )
    b = judged(ep)
    assert b.total == pytest.approx(1.1) and b.weights == {"correct_answer": 1.0, "used_the_tool": 0.1}
    assert b.verdict.status is Status.CORRECT


def test_the_policy_s_mistakes_stay_the_policy_s_and_a_raising_tool_is_the_environment_s() -> None:
    cls = load_environment(CALC)
    row = row_of(CALC)
    ep = episode(cls, row, call_markup("calc", {"expression": "1"}), call_markup("calculator", {"x": 1}), "408")
    assert [e.cause for e in ep.events] == [Cause.UNKNOWN_TOOL, Cause.BAD_ARGUMENTS] and ep.cause() is None
    broken = load_environment(f"{CALC}?fail_rate=1.0")
    ep = episode(broken, row, call_markup("calculator", {"expression": "12*34"}), "408")
    assert ep.cause() is Cause.TOOL_ERROR and ep.finish == "fault"
    assert "the calculator service is down" in ep.events[0].detail  # verifiers would have shown the policy this


def test_a_stateful_game_hides_its_argument_and_fills_it_from_the_episode_s_state() -> None:
    cls = load_environment(GUESS)
    schema = check_environment(cls)["guess"]["function"]["parameters"]
    assert list(schema["properties"]) == ["number"] and "secret" not in str(schema)
    row = row_of(GUESS)  # secret 3
    ep = episode(
        cls,
        row,
        call_markup("guess", {"number": 5}),
        call_markup("guess", {"number": 2}),
        call_markup("guess", {"number": 3}),
        "It is 3.",
        max_turns=6,
    )
    assert [t.content for t in ep.turns if t.role == "tool"] == ["lower", "higher", "right"]
    smuggled = episode(cls, row, call_markup("guess", {"number": 3, "secret": 3}), "3")
    assert smuggled.events[0].cause is Cause.BAD_ARGUMENTS  # the hidden argument is not the policy's to give


def test_a_multi_turn_environment_answers_each_turn_until_one_of_its_stop_conditions_holds() -> None:
    cls = load_environment(ECHO)
    assert check_environment(cls) == {}  # no tools: its env_response is the episode's other party
    row = row_of(ECHO)  # says 12, then 345, then 6
    ep = episode(cls, row, "12", "345", "6", max_turns=6)
    assert [(t.role, t.content) for t in ep.turns] == [
        ("assistant", "12"),
        ("user", "say 345"),
        ("assistant", "345"),
        ("user", "say 6"),
        ("assistant", "6"),
    ]
    assert ep.finish == "eos" and ep.answer == "6" and ep.cause() is None  # its stop condition ended it
    env = cls()  # what an engine does: the episode's own environment judges it, the whole conversation
    for turn in ("12", "34", "6"):
        env.reset(row) if turn == "12" else None
        env.respond(turn)
    assert len(env.state["trajectory"]) == 3 and env.state["heard"] == ["12", "34"]
    ep.judge(env.reward, row, 2)
    assert ep.score.components == {"said_back": pytest.approx(2 / 3)}
    assert judged(ep).verdict.status is Status.CORRECT  # 2/3 passes verifiers' default threshold (0.5)


def test_a_multi_turn_environment_s_final_response_ends_the_episode_and_its_rubric_reads_it() -> None:
    cls = load_environment(f"{ECHO}?final=true")
    env = cls()
    env.reset(row_of(ECHO))
    assert [env.respond(t) for t in ("12", "345")] == [
        [{"role": "user", "content": "say 345"}],
        [{"role": "user", "content": "say 6"}],
    ]
    assert env.respond("6") is None and env.messages[-1] == {"role": "user", "content": "thanks"}
    ep = episode(cls, row_of(ECHO), "12", "345", "6", max_turns=6)
    assert ep.finish == "eos" and [t.role for t in ep.turns].count("assistant") == 3


def test_a_multi_turn_environment_that_fails_is_the_environment_s_fault_and_a_long_talk_the_policy_s() -> None:
    broken = load_environment(f"{ECHO}?fail_rate=1.0")
    ep = episode(broken, row_of(ECHO), "12", "345")
    assert ep.cause() is Cause.TOOL_ERROR and ep.finish == "fault"
    assert "the echo service is down" in ep.events[0].detail and ep.turns[0].content == "12"
    ep = episode(load_environment(ECHO), row_of(ECHO), "12", "345", "6", max_turns=2)  # rlvr's cap comes first
    assert ep.cause() is Cause.TURN_LIMIT and ep.ended_by() is Cause.TURN_LIMIT


def test_environments_rlvr_cannot_run_are_refused_naming_why() -> None:
    with pytest.raises(ConfigError, match="has no tools"):
        load_environment(SINGLE)
    with pytest.raises(ConfigError, match="no such file"):
        load_environment("verifiers:/nowhere/env.py")
    with pytest.raises(ConfigError, match="raised TypeError"):
        load_environment(f"{CALC}?colour=blue")
    with pytest.raises(ConfigError, match="has no load_environment"):
        load_environment("verifiers:json")


# ----------------------------------------------------------------------------- OpenEnv
@pytest.fixture(scope="module")
def calculator_server():
    """The OpenEnv calculator, served on a free port of this machine by rlvr itself."""
    from rlvr.episodes.from_openenv import start_server

    return start_server(SERVER)


def test_an_openenv_server_is_an_episode_environment_each_step_a_turn(calculator_server) -> None:
    cls = load_environment(f"openenv:{calculator_server}?tool=calculator")
    schema = check_environment(cls)["calculator"]
    assert schema["function"]["parameters"]["required"] == ["expression"] and "metadata" not in str(schema)
    row = {"id": "p12x34", "openenv_reset": {"target": 408}}
    ep = episode(
        cls,
        row,
        call_markup("calculator", {"expression": "12*35"}),
        call_markup("calculator", {"expression": "12*34"}),
        call_markup("calculator", {"expression": "1+1"}),
        "408",
    )
    tools = [t.content for t in ep.turns if t.role == "tool"]
    # the observations as the server wrote them; a call after done is told the episode is over
    assert tools[0] == "420" and tools[1] == "408" and "episode is over" in tools[2]
    assert ep.prompt.endswith("Use the calculator.")
    env = cls()
    env.reset(row)
    env.calculator(expression="12*34")
    ep.judge(env.reward, row, 2)
    assert ep.score.components == {"env_reward": 1.0} and judged(ep).verdict.status is Status.CORRECT
    bad = episode(cls, row, call_markup("calculator", {"expression": 5}), "x")  # outside the action's schema
    assert bad.events[0].cause is Cause.BAD_ARGUMENTS


def _served_with(monkeypatch, **env: str) -> str:
    """The OpenEnv calculator started with ``env`` in its environment (this process's left as it was)."""
    from rlvr.episodes.from_openenv import start_server

    with monkeypatch.context() as m:
        for k, v in env.items():
            m.setenv(k, v)
        return start_server(SERVER)


def test_openenv_faults_are_the_environment_s(monkeypatch) -> None:
    failing = _served_with(monkeypatch, CALC_FAIL_RATE="1.0")
    cls = load_environment(f"openenv:{failing}?tool=calculator")
    ep = episode(cls, {"id": "a"}, call_markup("calculator", {"expression": "1+1"}), "2")
    assert ep.cause() is Cause.TOOL_ERROR and "backend failed" in ep.events[0].detail
    dying = _served_with(monkeypatch, CALC_DIE_AFTER="1")
    cls = load_environment(f"openenv:{dying}?tool=calculator")
    ep = episode(cls, {"id": "b"}, call_markup("calculator", {"expression": "1+1"}), "2")
    assert ep.cause() is Cause.ENV_CRASH  # the server died under the step
    ep = episode(cls, {"id": "c"}, "2")  # and nothing answers any more: the episode cannot start
    assert ep.cause() is Cause.ENV_CRASH and ep.finish == "fault"
    with pytest.raises(ConfigError, match="no action schema"):
        load_environment(f"openenv:{dying}")  # a URL nothing serves is refused before a run


def test_openenv_specs_and_servers_that_cannot_work_are_refused() -> None:
    from rlvr.config import EnvConfig

    with pytest.raises(ValueError, match=r"needs env\.server"):
        EnvConfig(environment="openenv")
    with pytest.raises(ValueError, match="starts an OpenEnv environment"):
        EnvConfig(environment="mod:Cls", server="x {port}")
    with pytest.raises(ConfigError, match="exited with status"):
        load_environment("openenv", server=f"{sys.executable} -c 'raise SystemExit(3)'")
    with pytest.raises(ConfigError, match="unknown option"):
        load_environment("openenv:http://127.0.0.1:1?colour=blue")


def _gone(url: str, within_s: float = 15.0) -> bool:
    """Whether the server at ``url`` stops answering within ``within_s``."""
    import time

    from rlvr.episodes.from_openenv import _healthy

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _healthy(url):
            return True
        time.sleep(0.2)
    return False


def test_a_server_rlvr_started_ends_with_the_run_and_with_a_killed_process() -> None:
    """Sequential runs in one process leave no server behind (the engines call ``shutdown``), and a run
    killed by a signal (no exit handler runs) takes its server with it."""
    import subprocess

    from rlvr.episodes.env import shutdown

    cls = load_environment("openenv?tool=calculator", server=SERVER)
    assert not _gone(cls.base_url, within_s=0.5)
    shutdown(cls)
    assert _gone(cls.base_url)
    shutdown(cls)  # twice: nothing left to stop
    starter = (
        "import sys, time; from rlvr.episodes.from_openenv import start_server; "
        f"print(start_server({SERVER!r}), flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and not _gone(url, within_s=0.5)
        proc.kill()  # SIGKILL: no atexit handler runs
        proc.wait(10)
        assert _gone(url)
    finally:
        proc.kill()
