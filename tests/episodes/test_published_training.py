"""A ``verifiers`` tool environment, a ``verifiers`` ``MultiTurnEnv`` and an OpenEnv server train on
rlvr's engine and on TRL from one config line (``env.environment``), the environments failing on
their own at half their calls: the failed episodes stay out of the baseline and the loss and
``rlvr causes`` names them the environment's. The policy is the tiny model taught to call a
calculator, or, in conversation, to say numbers back (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers")
pytest.importorskip("openenv.core")
pytest.importorskip("trl")

HERE = Path(__file__).parent / "published"
SRC = Path(__file__).resolve().parents[2] / "src"
VERIFIERS_ENV = f"verifiers:{HERE / 'vf_calculator.py'}?fail_rate=0.5&repeat=2"
ECHO_ENV = f"verifiers:{HERE / 'vf_echo.py'}?fail_rate=0.5"
OPENENV_SERVER = f"{sys.executable} {HERE / 'openenv_calculator.py'} --port {{port}}"


def _train(policy, tmp_path: Path, engine: str, env: str, *sets: str, extra_env: dict | None = None) -> Path:
    model, tok = policy
    folder = tmp_path / "policy"
    if not folder.exists():
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
    out = tmp_path / f"run-{engine}"
    opts = [
        f"model.name={folder}",
        "rollout.prompts_per_step=2",
        "rollout.group_size=4",
        "rollout.max_new_tokens=160",
        "data.eval_size=2",
        "run.eval_every=0",
        "run.steps=1",
        f"run.out_dir={out}",
        f"engine={engine}",
        f"env={env}",
        *sets,
    ]
    environ = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SRC), **(extra_env or {})}
    cmd = [sys.executable, "-m", "rlvr", "train", *[x for o in opts for x in ("--set", o)]]
    res = subprocess.run(cmd, env=environ, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def _checked(out: Path, components: set[str]) -> list[dict]:
    recs = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]
    faulted = [r for r in recs if r["cause"] in ("tool_error", "env_crash", "env_timeout")]
    assert faulted, "no episode met the environment's own failures"
    for r in faulted:  # out of the baseline and the loss
        assert not r["admitted"] and r["advantage"] == 0.0 and r["episode"]["finish"] == "fault"
    judged = [r for r in recs if r["cause"] not in ("tool_error", "env_crash", "env_timeout")]
    assert judged and all(set(r["components"]) == components for r in judged)
    causes = subprocess.run(
        [sys.executable, "-m", "rlvr", "causes", str(out)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert causes.returncode == 0, causes.stderr[-2000:]
    assert faulted[0]["cause"] in causes.stdout and "environment" in causes.stdout.lower()
    return recs


@pytest.mark.parametrize("engine", ["rlvr", "trl"])
def test_a_verifiers_tool_environment_trains_from_one_line(calculator_policy, tmp_path, engine) -> None:
    log = tmp_path / "rubric.log"
    env = f"{{environment: '{VERIFIERS_ENV}', max_turns: 2}}"
    out = _train(calculator_policy, tmp_path, engine, env, extra_env={"VF_RUBRIC_LOG": str(log)})
    recs = _checked(out, {"correct_answer", "used_the_tool"})
    callers = log.read_text().split()
    assert "episode" in callers  # the environment judged its episodes
    if engine == "rlvr":  # ... and rlvr's engine scores a text through the single-turn verifier only for
        # an episode the environment did not judge (one that ended before it could: no room to answer)
        unjudged = [r for r in recs if r["cause"] == "context_overflow" and r["episode"]["tool_calls"] == 0]
        assert callers.count("verifier") <= len(unjudged)
    assert all(r["prompt_id"].startswith("vf_calculator-train-") for r in recs)
    assert any(r["verdict"]["status"] == "correct" for r in recs)  # the policy computes and answers


@pytest.mark.parametrize("engine", ["rlvr", "trl"])
def test_an_openenv_server_trains_from_one_line(calculator_policy, tmp_path, engine) -> None:
    env = f"{{environment: 'openenv?tool=calculator', server: '{OPENENV_SERVER}', max_turns: 2}}"
    out = _train(
        calculator_policy,
        tmp_path,
        engine,
        env,
        "data.task=arithmetic",
        "data.task_options={digits: 2, ops: '*'}",
        extra_env={"CALC_FAIL_RATE": "0.5", "CALC_GREETING": ""},  # the prompt as the policy learnt it
    )
    recs = _checked(out, {"env_reward"})
    assert any(r["episode"]["tool_calls"] for r in recs)


@pytest.mark.parametrize("engine", ["rlvr", "trl"])
def test_a_verifiers_multi_turn_environment_trains_from_one_line(echo_policy, tmp_path, engine) -> None:
    env = f"{{environment: '{ECHO_ENV}', max_turns: 4}}"
    out = _train(echo_policy, tmp_path, engine, env, "rollout.max_new_tokens=64")
    recs = _checked(out, {"said_back"})
    talked = [r for r in recs if r["cause"] not in ("tool_error", "env_crash", "env_timeout")]
    for r in talked:  # the environment's turns are in the episode, its replies between the policy's
        roles = [t["role"] for t in r["episode"]["turns"]]
        assert roles[::2] == ["assistant"] * len(roles[::2]) and set(roles[1::2]) <= {"user"}
    assert any(len(r["episode"]["turns"]) == 5 for r in talked)  # a whole conversation: 3 turns, 2 replies
    assert len({r["components"]["said_back"] for r in talked}) > 1  # something to learn from
