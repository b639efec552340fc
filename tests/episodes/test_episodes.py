"""Episodes with tools: each way an episode can go is recorded where it happens, with its owner.

Scripted policies (a list of assistant turns) drive the turn loop against real tools; the failure
step then treats environment faults apart (out of the baseline and the loss, redrawn, quarantined)
and keeps the policy's faults in the gradient.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from rlvr.config import FailureConfig
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import FailureAware, RolloutView
from rlvr.episodes import (
    ENVIRONMENT_FAULTS,
    Calculator,
    EnvCrash,
    Episode,
    Faults,
    evaluate,
    run_episode,
    tool_metrics,
    tool_schema,
    toolbox,
)
from rlvr.errors import ConfigError
from rlvr.types import Status, Verdict


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def scripted(*turns: str):
    """A policy that says ``turns`` in order (each turn costs its word count in tokens)."""
    said = iter(turns)

    def policy(messages, max_new_tokens):
        text = next(said)
        n = len(text.split())
        return (
            (text, "eos", n)
            if n <= max_new_tokens
            else (" ".join(text.split()[:max_new_tokens]), "length", max_new_tokens)
        )

    return policy


class Flaky:
    """A user's environment: one tool that fails as its service would, and one that hangs."""

    def reset(self, row: dict) -> str:
        self.base = row["base"]
        return f"The base is {self.base}."

    def lookup(self, key: str) -> str:
        """Look a key up in the service.

        Args:
            key: what to look up.
        """
        if key == "down":
            raise ConnectionError("service unavailable")
        if key == "dead":
            raise EnvCrash("session lost")
        if key == "garbled":  # a service's message with a lone surrogate (a JSON escape) in it
            raise ConnectionError(json.loads('"bad \\ud800 reply"'))
        if key == "echo":
            return json.loads('"x=\\udfff"')
        return f"{key}={self.base}"

    def slow(self, seconds: float) -> str:
        """Wait, then answer.

        Args:
            seconds: how long to wait.
        """
        time.sleep(seconds)
        return "done"


class BrokenReset(Flaky):
    def reset(self, row: dict) -> str:
        raise RuntimeError("no sandbox slot")


CALC = toolbox(["calculator"])
ROW = {"base": 7}

# (name, environment, turns, episode cause, events, finish)
CASES = [
    (
        "answers after a calculator call",
        CALC,
        [call("calculator", expression="1234*5678"), "It is 7006652."],
        None,
        [],
        "eos",
    ),
    (
        "the policy's expression is its result",
        CALC,
        [call("calculator", expression="1/0"), "Undefined."],
        None,
        [],
        "eos",
    ),
    (
        "malformed markup",
        CALC,
        ["<tool_call>{calculator: 2+2}</tool_call>", "4"],
        None,
        [Cause.MALFORMED_TOOL_CALL],
        "eos",
    ),
    ("an unknown tool", CALC, [call("search", query="2+2"), "4"], None, [Cause.UNKNOWN_TOOL], "eos"),
    ("arguments outside the schema", CALC, [call("calculator", expr="2+2"), "4"], None, [Cause.BAD_ARGUMENTS], "eos"),
    (
        "an argument the tool does not take",
        Flaky,
        [call("lookup", key="x", verbose=True), "7"],
        None,
        [Cause.BAD_ARGUMENTS],
        "eos",
    ),
    (
        "a fault whose message cannot be encoded",
        Flaky,
        [call("lookup", key="garbled"), "?"],
        Cause.TOOL_ERROR,
        [Cause.TOOL_ERROR],
        "fault",
    ),
    ("a result that cannot be encoded", Flaky, [call("lookup", key="echo"), "x"], None, [], "eos"),
    (
        "the turn limit",
        CALC,
        [call("calculator", expression="1+1")] * 3,
        Cause.TURN_LIMIT,
        [Cause.TURN_LIMIT],
        "turn_limit",
    ),
    (
        "a tool that fails on a well-formed call",
        Flaky,
        [call("lookup", key="down"), "?"],
        Cause.TOOL_ERROR,
        [Cause.TOOL_ERROR],
        "fault",
    ),
    ("a session that dies", Flaky, [call("lookup", key="dead"), "?"], Cause.ENV_CRASH, [Cause.ENV_CRASH], "fault"),
    (
        "a tool that hangs past its limit",
        Flaky,
        [call("slow", seconds=30), "?"],
        Cause.ENV_TIMEOUT,
        [Cause.ENV_TIMEOUT],
        "fault",
    ),
    ("an environment that cannot start", BrokenReset, ["?"], Cause.ENV_CRASH, [Cause.ENV_CRASH], "fault"),
    (
        "the episode's tokens run out",
        CALC,
        [call("calculator", expression="1+1") + " " + "x " * 40, "4"],
        Cause.CONTEXT_OVERFLOW,
        [Cause.CONTEXT_OVERFLOW],
        "context_overflow",
    ),
]


@pytest.mark.parametrize(("name", "env", "turns", "cause", "events", "finish"), CASES, ids=[c[0] for c in CASES])
def test_each_way_an_episode_goes_is_recorded_at_the_source(name, env, turns, cause, events, finish) -> None:
    t0 = time.monotonic()
    ep = run_episode(scripted(*turns), env, ROW, "What is it?", max_turns=3, max_tokens=40, timeout_s=0.5)
    assert time.monotonic() - t0 < 5, "a hanging tool held the episode"
    assert (ep.cause(), [e.cause for e in ep.events], ep.finish) == (cause, events, finish), ep.events
    record = json.loads(json.dumps(ep.record()))  # what rollouts.jsonl keeps
    json.dumps(ep.record(), ensure_ascii=False).encode("utf-8")  # every string it holds can be written
    assert [e["cause"] for e in record["events"]] == [e.value for e in events]


def test_tool_results_are_messages_and_observations_join_the_prompt() -> None:
    seen = []

    def policy(messages, max_new_tokens):
        seen.append([m["role"] for m in messages])
        return (call("lookup", key="x"), "eos", 3) if len(seen) == 1 else ("x is 7", "eos", 3)

    ep = run_episode(policy, Flaky, ROW, "Find x.")
    assert ep.prompt.endswith("The base is 7.") and ep.answer == "x is 7" and ep.tokens == 6
    assert seen == [["user"], ["user", "assistant", "tool"]]
    assert [t.role for t in ep.turns] == ["assistant", "tool", "assistant"] and ep.turns[1].content == "x=7"


def test_a_result_larger_than_the_budget_is_cut_and_says_so() -> None:
    ep = run_episode(scripted(call("calculator", expression="7**300"), "big"), CALC, {}, "?", max_result_chars=50)
    assert len(ep.turns[1].content) < 100 and "[cut at 50 characters]" in ep.turns[1].content


def test_injected_faults_are_seeded_per_episode_and_call() -> None:
    faults = Faults({"tool_error": 0.5}, seed=3)
    draws = [faults.draw(f"p{i}", 1) for i in range(200)]
    assert draws == [faults.draw(f"p{i}", 1) for i in range(200)]  # the same episode, the same faults
    assert 60 < sum(d is Cause.TOOL_ERROR for d in draws) < 140
    ep = run_episode(
        scripted(call("calculator", expression="2+2"), "4"), CALC, {}, "?", faults=Faults({"env_crash": 1.0}), key="p0"
    )
    assert ep.cause() is Cause.ENV_CRASH and ep.events[0].detail == "injected env_crash"
    with pytest.raises(ValueError, match=r"env\.faults"):
        Faults({"tool_eror": 0.2})


def test_the_calculator_is_exact_and_evaluates_nothing_but_numbers() -> None:
    assert evaluate("(1234 * 5678) + 9") == 7006661 and str(evaluate("1/3 + 1/6")) == "1/2"
    calc = Calculator()
    for hostile in ["__import__('os').system('id')", "open('/etc/passwd')", "(lambda: 1)()", "9**9**9**9", "x + 1"]:
        assert calc.calculator(hostile).startswith("error:"), hostile
    assert calc.calculator("2^10") == "1024"


@pytest.mark.parametrize(
    "expression",
    [
        "((1/3)**1000)**10000",  # a base below one: its denominator grows as a numerator would
        "(0.999)**100000",
        "(9**999) * (9**999) * (9**999) * (9**999)",  # products of large operands
        "(2**3000 + 1) / (3**2000 + 1) * (5**1000 + 1)",
        "(-(7**1000))**100",
        "1.5e308**1000",
    ],
)
def test_the_calculator_bounds_every_exact_operation(expression: str) -> None:
    """No call holds the interpreter lock past a moment: a value too large to compute exactly is
    refused before it is computed, whichever operation would make it."""
    out = Calculator().calculator(expression)
    assert out.startswith("error:") and "too large to compute exactly" in out, (expression, out[:80])
    assert Calculator().calculator("(1/2)**10 * 1024") == "1"
    assert Calculator().calculator("0**5 + (-1)**100001 + 1**10**4") == "0"


def test_the_python_tool_runs_the_policys_code_in_the_sandbox() -> None:
    from rlvr.episodes import PythonTool
    from rlvr.verify.code import sandbox

    if sandbox.isolation() != "namespaces":
        pytest.skip("needs the namespace sandbox")
    tool = PythonTool()
    assert tool.python("print(sum(range(10)))") == "45"
    assert "ZeroDivisionError" in tool.python("1/0")  # the policy's code raising is its result
    assert "No such file" in tool.python(f"print(open({os.path.abspath(__file__)!r}).read())")


def test_a_tool_that_cannot_be_described_is_refused_before_anything_runs() -> None:
    class Vague:
        def reset(self, row):
            return None

        def act(self, thing):  # no type hints, no docstring
            return thing

    with pytest.raises(ConfigError, match="'act' cannot be described"):
        tool_schema(Vague().act)
    ep = run_episode(scripted("?"), Vague, {}, "?")  # at run time it is the environment's (it never starts)
    assert ep.cause() is Cause.ENV_CRASH


def _views(episodes: list[Episode], rewards: list[float | None]) -> list[RolloutView]:
    out = []
    for ep, r in zip(episodes, rewards):
        status = Status.CORRECT if r is not None and r > 0 else Status.WRONG
        out.append(
            RolloutView(
                "p",
                Verdict(status),
                r,
                text=ep.answer or "x",
                finish=ep.finish if ep.finish in ("eos", "length") else "eos",
                episode=ep.cause(),
                events=tuple(e.cause for e in ep.events),
            )
        )
    return out


def _episode(cause: Cause | None, *events: Cause) -> Episode:
    ep = Episode("p", answer="42")
    from rlvr.episodes import Event

    ep.events = [Event(c, 0) for c in (*events, *([cause] if cause else []))]
    return ep


def test_an_environment_fault_leaves_the_baseline_and_the_loss_and_is_redrawn() -> None:
    # rewards [1, 1, 0, 0] with the last row dead of the environment: the survivors' advantages are
    # those of [1, 1, 0], not of [1, 1, 0, 0] (masking the loss alone would give the latter)
    fa = FailureAware(FailureConfig(quarantine=False), group_size=4)
    eps = [_episode(None), _episode(None), _episode(None), _episode(Cause.TOOL_ERROR)]
    d = fa.decide(_views(eps, [1, 1, 0, 0]), step=1)
    assert [c.value for c in d.causes] == ["correct", "correct", "wrong", "tool_error"]
    assert d.admit.tolist() == [True, True, True, False] and d.advantages[3] == 0
    alone = (
        FailureAware(FailureConfig(quarantine=False), group_size=3)
        .decide(_views(eps[:3], [1, 1, 0]), step=1)
        .advantages
    )
    assert d.advantages[:3].tolist() == pytest.approx(alone.tolist())
    assert fa.to_resample(d.causes) == [3]
    assert d.metrics["env/fault_rate"] == 0.25 and d.metrics["episodes/partial_groups"] == 1.0
    assert d.metrics["causes/tool_error"] == 0.25


def test_masking_only_the_loss_keeps_the_fault_in_the_baseline_as_the_ablation_says() -> None:
    # NeMo-RL #4061: with the dead row masked from the loss only, the survivors get the advantages of
    # [1, 1, 0, 0], not of [1, 1, 0]; the row is neither trained on nor redrawn
    fa = FailureAware(FailureConfig(quarantine=False, env_fault_handling="mask_loss"), group_size=4)
    eps = [_episode(None), _episode(None), _episode(None), _episode(Cause.TOOL_ERROR)]
    d = fa.decide(_views(eps, [1, 1, 0, 0.7]), step=1)  # whatever it scored, it counts as 0
    plain = (
        FailureAware(FailureConfig(quarantine=False), group_size=4)
        .decide(_views([_episode(None)] * 4, [1, 1, 0, 0]), step=1)
        .advantages
    )
    assert d.admit.tolist() == [True, True, True, False] and d.advantages[3] == 0
    assert d.advantages[:3].tolist() == pytest.approx(plain[:3].tolist())
    assert fa.to_resample(d.causes) == [] and d.causes[3] is Cause.TOOL_ERROR


def test_group_filters_read_only_the_episodes_that_stay_in_the_group() -> None:
    from rlvr.diagnostics.step import informative

    # one correct episode and three environment faults: after the faults leave, nothing varies
    views = _views([_episode(None), *[_episode(Cause.TOOL_ERROR)] * 3], [1, 0, 0, 0])
    assert informative(views, 4) == [True]
    assert informative(views, 4, ENVIRONMENT_FAULTS) == [False]
    fa = FailureAware(FailureConfig(quarantine=False), group_size=4)
    assert fa.decide(views, step=1, drop_uninformative=True).admit.tolist() == [False] * 4


def test_scoring_a_fault_zero_keeps_it_in_the_baseline_and_the_loss_as_trl_does() -> None:
    fa = FailureAware(FailureConfig(quarantine=False, env_fault_handling="score_zero"), group_size=4)
    eps = [_episode(None), _episode(None), _episode(None), _episode(Cause.TOOL_ERROR)]
    d = fa.decide(_views(eps, [1, 1, 0, None]), step=1)  # an episode cut by its fault has no score: it gets 0
    plain = (
        FailureAware(FailureConfig(quarantine=False), group_size=4)
        .decide(_views([_episode(None)] * 4, [1, 1, 0, 0]), step=1)
        .advantages
    )
    assert d.admit.all() and d.advantages.tolist() == pytest.approx(plain.tolist()) and d.advantages[3] < 0
    assert fa.to_resample(d.causes) == []


def test_the_policys_faults_stay_in_the_gradient_with_their_penalty() -> None:
    cfg = FailureConfig(quarantine=False, policy_penalties={"malformed_tool_call": 0.5})
    fa = FailureAware(cfg, group_size=4)
    eps = [_episode(None), _episode(None, Cause.MALFORMED_TOOL_CALL), _episode(Cause.TURN_LIMIT), _episode(None)]
    d = fa.decide(_views(eps, [1, 1, 0, 0]), step=1)
    assert [c.value for c in d.causes] == ["correct", "correct", "turn_limit", "wrong"]
    assert d.admit.all() and fa.to_resample(d.causes) == []
    assert d.advantages[1] < d.advantages[0]  # the malformed call cost it 0.5 of its reward


def test_which_causes_are_the_environments_is_configurable() -> None:
    fa = FailureAware(FailureConfig(quarantine=False, env_faults=["tool_error", "turn_limit"]), group_size=2)
    d = fa.decide(_views([_episode(Cause.TURN_LIMIT), _episode(None)], [0, 1]), step=1)
    assert d.causes[0] is Cause.TURN_LIMIT and d.admit.tolist() == [False, True]


def test_a_prompt_whose_episodes_keep_dying_of_the_environment_is_quarantined() -> None:
    fa = FailureAware(FailureConfig(quarantine_consecutive=2), group_size=2)
    dead = [_episode(Cause.ENV_TIMEOUT), _episode(Cause.ENV_CRASH)]
    assert fa.decide(_views(dead, [0, 0]), step=1).quarantined == []
    assert fa.decide(_views(dead, [0, 0]), step=2).quarantined == ["p"]


def test_tool_metrics() -> None:
    eps = [
        run_episode(scripted(call("calculator", expression="1+1"), "2"), CALC, {}, "?"),
        run_episode(scripted(call("lookup", key="down"), "?"), Flaky, ROW, "?"),
    ]
    m = tool_metrics(eps)
    assert m["tools/calls_per_episode"] == 1.0 and m["episodes/turns"] == 1.5  # the faulted one stops at its call
    assert (m["tools/calculator/calls"], m["tools/calculator/failures"]) == (1, 0)
    assert (m["tools/lookup/calls"], m["tools/lookup/failures"]) == (1, 1) and m["tools/lookup/latency_s"] >= 0


def test_an_env_section_is_checked_by_the_config() -> None:
    from rlvr.config import EnvConfig, TrainConfig

    assert TrainConfig(env={"tools": ["calculator"]}).env.tools == ["calculator"]
    with pytest.raises(ValueError, match="give tools"):
        EnvConfig()
    with pytest.raises(ValueError, match="max_turns"):
        EnvConfig(tools=["calculator"], max_turns=0)
    with pytest.raises(ConfigError, match="unknown tool"):
        toolbox(["calculater"])


def test_a_tools_schema_is_described_once_and_handed_out_as_a_copy() -> None:
    from rlvr.episodes.env import tool_schema
    from rlvr.episodes.tools import Calculator

    first = tool_schema(Calculator().calculator)
    first["function"]["name"] = "changed by a caller"
    again = tool_schema(Calculator().calculator)  # another environment's same tool
    assert again["function"]["name"] == "calculator" and "expression" in again["function"]["parameters"]["properties"]


def test_an_episodes_environment_is_released_once_and_a_failing_close_is_only_logged(caplog) -> None:
    from rlvr.episodes.env import release

    class Session:
        closed = 0

        def close(self) -> None:
            Session.closed += 1
            if Session.closed > 1:
                raise ConnectionError("the server is gone")

    release(Session())
    assert Session.closed == 1
    with caplog.at_level("WARNING", logger="rlvr.episodes.env"):
        release(Session())  # the episode is judged already: its close failing is not the run's
    assert Session.closed == 2 and "the server is gone" in caplog.text
    release(None)
    release(object())  # nothing to let go of
