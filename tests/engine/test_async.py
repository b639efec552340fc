"""rlvr's asynchronous engine: a sampler process draws while the learner trains; staleness bounded
and counted; a sampler that dies or goes silent is a clear error; a killed run resumes without using
a prompt twice, and no process is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import load_config
from rlvr.engine.async_engine import AsyncGRPOTrainer, train_engine
from rlvr.engine.trainer import GRPOTrainer
from rlvr.errors import ConfigError

TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=2",
    "rollout.group_size=4",
    "rollout.max_new_tokens=16",
    "run.eval_every=0",
    "data.eval_size=4",
    "optim.lr=1e-2",
    "rewards.weights={cosine: 1.0}",
    "rewards.options={}",
    "failure.quarantine=false",
    "rollout.mode=async",
]


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _children() -> set[int]:
    """This process's live spawned children (the sampler, while it runs; not multiprocessing's
    resource tracker)."""
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(os.getpid())], capture_output=True, text=True)
    return {
        int(line.split()[0])
        for line in out.stdout.splitlines()
        if "spawn_main" in line and "resource_tracker" not in line
    }


def test_the_sampler_runs_ahead_within_the_lag_and_leaves_nothing_behind(tmp_path) -> None:
    cfg = load_config(None, [*TINY, "run.steps=5", f"run.out_dir={tmp_path}", "off_policy.proximal=recompute"])
    tr = train_engine(cfg)
    assert isinstance(tr, AsyncGRPOTrainer)
    before = _children()
    tr.train()
    deadline = time.monotonic() + 10
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _children() - before, "the sampler outlived the run"
    steps = [m for m in _lines(tmp_path / "metrics.jsonl") if "async/lag" in m]
    assert [m["step"] for m in steps] == [1, 2, 3, 4, 5]
    assert all(0 <= m["async/lag_max"] <= 1 for m in steps)  # rollout.max_lag 1
    assert any(m["async/lag"] == 1 for m in steps)  # it did run ahead: overlap happened
    assert all(m["causes/stale"] == 0.0 for m in steps)  # within failure.max_staleness (1)
    assert all("offpolicy/k3" in m for m in steps)  # the gap the lag makes is measured every step
    rows = [r for r in _lines(tmp_path / "rollouts.jsonl") if not r.get("replaced")]
    for r in rows:  # every rollout carries the version that sampled it, never newer than the learner's
        assert r["step"] - 2 <= r["policy_version"] <= r["step"] - 1
    prompts = [r["prompt_id"] for r in rows[::4]]  # the data stream's order, each prompt once
    assert len(prompts) == len(set(prompts)) == 10


def test_rows_older_than_max_staleness_are_stale_and_counted(tmp_path) -> None:
    cfg = load_config(None, [*TINY, "run.steps=3", f"run.out_dir={tmp_path}", "failure.max_staleness=0"])
    AsyncGRPOTrainer(cfg).train()
    steps = [m for m in _lines(tmp_path / "metrics.jsonl") if "async/lag" in m]
    for m in steps:  # a row one version behind is stale under max_staleness 0: out, counted
        assert m["causes/stale"] == pytest.approx(1.0 if m["async/lag"] == 1 else 0.0)


def test_a_sampler_that_dies_is_an_error_in_the_learner(tmp_path) -> None:
    tr = AsyncGRPOTrainer(load_config(None, [*TINY, "run.steps=50", f"run.out_dir={tmp_path}"]))
    tr.train_step()
    tr._proc.kill()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="sampler process died"):
        for _ in range(50):
            tr.train_step()
    assert time.monotonic() - t0 < 30
    tr.stop()


def test_a_silent_sampler_is_an_error_within_its_timeout(tmp_path) -> None:
    tr = AsyncGRPOTrainer(
        load_config(None, [*TINY, "run.steps=2", f"run.out_dir={tmp_path}", "rollout.sampler_timeout_s=0.01"])
    )
    with pytest.raises(RuntimeError, match=r"sent nothing for 0.01s"):  # it takes seconds to start
        tr.train_step()
    assert tr._proc is None


def test_configs_async_cannot_run_are_refused() -> None:
    with pytest.raises(ConfigError, match="rlvr's own engine"):
        load_config(None, ["rollout.mode=async", "engine=trl"])
    with pytest.raises(ConfigError, match="lag is real there"):
        load_config(None, ["rollout.mode=async", "off_policy.lag=1"])
    assert type(train_engine(load_config(None, TINY[:-1] + ["run.steps=1"]))) is GRPOTrainer


def test_a_killed_async_run_resumes_without_using_a_prompt_twice(tmp_path, kill_at_step) -> None:
    sets = [*TINY, "run.steps=6", "run.save_every=2", f"run.out_dir={tmp_path}"]
    cmd = [sys.executable, "-c", "from rlvr.cli.app import main; main()", "train"]
    cmd += [a for s in sets for a in ("--set", s)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    kill_at_step(p, tmp_path, 3)
    time.sleep(1.0)  # the sampler dies with its parent (PR_SET_PDEATHSIG)
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    assert not [x for x in ps.splitlines() if str(tmp_path) in x], "a process of the killed run survived"
    r = subprocess.run([*cmd, "--resume", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [x for x in _lines(tmp_path / "rollouts.jsonl") if not x.get("replaced")]
    assert sorted({x["step"] for x in rows}) == [1, 2, 3, 4, 5, 6]
    prompts = [x["prompt_id"] for x in rows[::4]]
    assert len(prompts) == len(set(prompts)) == 12  # each step its own prompts, none used twice
