"""A run killed mid-way resumes to exactly the run that was never interrupted: the same weights, the
same metrics and rollouts, step for step (rlvr's engine, single-turn and with tool episodes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

# A tiny random model; cosine (length-scaled) rewards differ between rollouts even when all are wrong,
# so every step has advantages and changes the weights.
TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=2",
    "rollout.group_size=4",
    "rollout.max_new_tokens=24",
    "run.eval_every=0",
    "data.eval_size=4",
    "rewards.weights={cosine: 1.0, format: 0.2}",
    "rewards.options={format: {think_tag: null}}",
]


def _train_cmd(out: Path, steps: int, *extra: str) -> list[str]:
    sets = [*TINY, f"run.steps={steps}", "run.save_every=2", f"run.out_dir={out}"]
    return [
        sys.executable,
        "-c",
        "from rlvr.cli.app import main; main()",
        "train",
        *[a for s in sets for a in ("--set", s)],
        *extra,
    ]


def _weights(run: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(run / "model" / "model.safetensors"))


def _steps(run: Path) -> list[dict]:
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in m.items() if not k.startswith(("time/", "tokens_per_s"))} for m in lines]


def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path, kill_at_step):
    env = dict(os.environ, PYTHONHASHSEED="0")
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    subprocess.run(_train_cmd(ref, 8), check=True, env=env, capture_output=True)
    proc = subprocess.Popen(_train_cmd(killed, 8), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_at_step(proc, killed, 3)  # step 3 logged: checkpoint 2 exists
    r = subprocess.run(
        [sys.executable, "-c", "from rlvr.cli.app import main; main()", "train", "--resume", str(killed)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    a, b = _weights(ref), _weights(killed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert _steps(ref) == _steps(killed)  # the metrics log too: no duplicated or missing steps
    assert (ref / "rollouts.jsonl").read_text() == (killed / "rollouts.jsonl").read_text()


def test_sigkill_mid_episode_run_then_resume_equals_uninterrupted(calculator_policy, tmp_path, kill_at_step) -> None:
    """Environment state lives within a step (a fresh environment per episode, faults seeded by
    episode): a run killed between checkpoints resumes to the same weights and rollouts."""
    model, tok = calculator_policy
    folder = tmp_path / "policy"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    sets = [
        f"model.name={folder}",
        "data.task=arithmetic",
        "data.task_options={digits: 2, ops: '*'}",
        "data.eval_size=2",
        "rollout.prompts_per_step=2",
        "rollout.group_size=2",
        "rollout.max_new_tokens=160",
        "env={tools: [calculator], max_turns: 2, faults: {tool_error: 0.3, env_crash: 0.2}}",
        "run.eval_every=0",
        "run.steps=4",
        "run.save_every=2",
    ]

    def cmd(out: Path) -> list[str]:
        return [
            sys.executable,
            "-c",
            "from rlvr.cli.app import main; main()",
            "train",
            *[a for s in [*sets, f"run.out_dir={out}"] for a in ("--set", s)],
        ]

    env = dict(os.environ, PYTHONHASHSEED="0")
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    r = subprocess.run(cmd(ref), env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    proc = subprocess.Popen(cmd(killed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_at_step(proc, killed, 3)  # mid-run: checkpoint 2 exists
    r = subprocess.run(
        [sys.executable, "-c", "from rlvr.cli.app import main; main()", "train", "--resume", str(killed)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr

    def rollouts(run: Path) -> list[dict]:  # every field but how long each call took
        lines = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
        for r in lines:
            for t in r["episode"]["turns"]:
                t.pop("latency_s", None)
        return lines

    assert rollouts(ref) == rollouts(killed) and any(r["episode"]["tool_calls"] for r in rollouts(ref))
    from safetensors.torch import load_file

    a, b = (load_file(str(run / "model" / "model.safetensors")) for run in (ref, killed))
    assert all(torch.equal(a[k], b[k]) for k in a)
