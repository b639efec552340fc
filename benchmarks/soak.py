"""Kill soak: SIGKILL training runs at random moments, resume them, and check nothing was lost.

For each engine arm (rlvr's engine sync, with dynamic sampling, async; TRL with one and two
processes) a reference run goes uninterrupted; then each trial starts the same run and kills its
whole process group at a moment drawn at random, of one of these kinds:

* ``step``: a random fraction of a step after a random step was logged (mid-sampling, mid-update,
  mid-handoff between the async sampler and the learner: wherever the run happened to be);
* ``save``: while a checkpoint is being written (rlvr's ``checkpoints/.step-N.tmp``, TRL's
  ``checkpoint-N`` without its ``trainer_state.json`` yet);

then resumes it with ``rlvr train --resume`` (killing it again, at random, up to ``--kills`` times;
a run killed before its first checkpoint starts again from nothing, as an operator's script would).
A kill is survived when the finished run has the reference's weights (bit for bit: every arm here
is deterministic on CPU), one set of rows for every step in ``rollouts.jsonl`` (none lost, none
written twice), each step the reference's prompts (none skipped, none used twice, the dynamic
sampler's draw-ahead included), and one metrics line per step.

    .venv/bin/python benchmarks/soak.py                 # every arm (~30 minutes on 2 cores)
    .venv/bin/python benchmarks/soak.py --quick         # one trial an arm
    .venv/bin/python benchmarks/soak.py --arms rlvr-sync,trl-1 --trials 4
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import Bar, report

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
    "run.save_every=2",
]
WARM = Path(__file__).resolve().parents[2] / "shared" / "bench" / "trainer" / "models" / "tiny-warm"
# a warmed model (37% right): groups right and wrong alike, so the sampler draws ahead and keeps
# informative groups for later steps, which a resume must neither lose nor use twice
_DYNAMIC = [
    f"model.name={WARM if WARM.exists() else 'tiny'}",
    "rewards.weights={accuracy: 1.0, format: 0.1}",
    "failure.dynamic_sampling=3",
    "failure.max_staleness=2",
    "rollout.prompts_per_step=4",
]
#: arm -> (the run's --set overrides, extra CLI arguments, steps)
ARMS: dict[str, tuple[list[str], list[str], int]] = {
    "rlvr-sync": ([], [], 10),
    "rlvr-dynamic": (_DYNAMIC, [], 10),
    "rlvr-async": (["rollout.mode=async"], [], 10),
    "rlvr-async-dynamic": (["rollout.mode=async", *_DYNAMIC], [], 10),
    "trl-1": (["engine=trl"], [], 8),
    "trl-2": (["engine=trl"], ["--processes", "2"], 6),
}


def _cmd(out: Path, sets: list[str], extra: list[str], steps: int) -> list[str]:
    every = [*TINY, *sets, f"run.steps={steps}", f"run.out_dir={out}"]
    return [sys.executable, "-m", "rlvr", "train", *[a for s in every for a in ("--set", s)], *extra]


def _resume(out: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "rlvr", "train", "--resume", str(out), *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _logged_steps(out: Path) -> int:
    rows = _lines_tolerant(out / "metrics.jsonl")
    return max((int(r["step"]) for r in rows if "step" in r), default=0)


def _lines_tolerant(path: Path) -> list[dict[str, Any]]:
    out = []
    if path.exists():
        for x in path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(x))
            except json.JSONDecodeError:
                pass
    return out


def _saving(out: Path) -> bool:
    ck = out / "checkpoints"
    if ck.is_dir() and any(p.name.endswith(".tmp") for p in ck.iterdir()):
        return True  # rlvr: a step written aside
    return any(not (p / "trainer_state.json").exists() for p in out.glob("checkpoint-*") if p.is_dir())


def _has_checkpoint(out: Path) -> bool:
    return (out / "checkpoints" / "latest").exists() or any(
        (p / "trainer_state.json").exists() for p in out.glob("checkpoint-*")
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _one_life(cmd: list[str], out: Path, kind: str | None, rng: random.Random, steps: int, step_s: float) -> str:
    """Run ``cmd``; kill it at a moment of ``kind`` (None: let it finish). Returns what happened."""
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    if kind is None:
        _, err = proc.communicate(timeout=1800)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd[3:])} failed:\n{err.decode(errors='replace')[-3000:]}")
        return "finished"
    target = rng.randint(min(max(1, _logged_steps(out)), steps), steps)  # from the last step logged on
    delay = rng.random() * step_s
    deadline = time.monotonic() + 900
    hit = "step"
    while time.monotonic() < deadline and proc.poll() is None:
        if kind == "save" and _saving(out):
            hit = "save"
            break
        if kind == "step" and _logged_steps(out) >= target:
            time.sleep(delay)
            break
        time.sleep(0.002)
    if proc.poll() is not None:  # it finished (or failed) first
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd[3:])} failed:\n{err[-3000:]}")
        return "finished"
    _kill_group(proc)
    return f"killed ({hit}, after step {_logged_steps(out)})"


def _signature(out: Path) -> dict[str, Any]:
    """What a finished run must share with the reference."""
    from safetensors.torch import load_file

    weights = load_file(str(out / "model" / "model.safetensors"))
    rows = [r for r in _lines(out / "rollouts.jsonl") if not r.get("replaced")]
    by_step: dict[int, list[str]] = {}
    for r in rows:
        by_step.setdefault(int(r["step"]), []).append(r["prompt_id"])
    metric_steps = [
        int(m["step"]) for m in _lines(out / "metrics.jsonl") if "reward/total/mean" in m or "loss/policy" in m
    ]
    return {"weights": weights, "prompts": by_step, "metric_steps": metric_steps}


def _compare(ref: dict[str, Any], got: dict[str, Any], steps: int) -> list[str]:
    import torch

    wrong = []
    if ref["weights"].keys() != got["weights"].keys():
        wrong.append("different weight names")
    else:
        diff = max(float((ref["weights"][k] - got["weights"][k]).abs().max()) for k in ref["weights"])
        if not all(torch.equal(ref["weights"][k], got["weights"][k]) for k in ref["weights"]):
            wrong.append(f"weights differ (max |diff| {diff:.3g})")
    if sorted(got["prompts"]) != list(range(1, steps + 1)):
        wrong.append(f"rollout steps {sorted(got['prompts'])}")
    for s, ids in ref["prompts"].items():
        if got["prompts"].get(s) != ids:
            wrong.append(f"step {s}: prompts {got['prompts'].get(s)} (reference {ids})")
            break
    if got["metric_steps"] != list(range(1, steps + 1)):
        wrong.append(f"metric steps {got['metric_steps']}")
    return wrong


def soak_arm(name: str, trials: int, max_kills: int, seed: int, work: Path) -> dict[str, Any]:
    sets, extra, steps = ARMS[name]
    ref = work / f"{name}-ref"
    t0 = time.monotonic()
    _one_life(_cmd(ref, sets, extra, steps), ref, None, random.Random(0), steps, 0.0)
    wall = time.monotonic() - t0
    step_s = wall / (steps + 2)  # start-up counts about two steps on these tiny runs
    reference = _signature(ref)
    rng = random.Random(seed)
    out_trials = []
    for k in range(trials):
        run = work / f"{name}-{k}"
        lives, kills = [], 0
        cmd = _cmd(run, sets, extra, steps)
        while True:
            kind = rng.choice(["step", "save"]) if kills < max_kills else None
            what = _one_life(cmd, run, kind, rng, steps, step_s)
            lives.append(what)
            if what == "finished":
                break
            kills += 1
            # the restart an operator's script makes: resume, or start again before any checkpoint
            cmd = _resume(run, extra) if _has_checkpoint(run) else _cmd(run, sets, extra, steps)
        wrong = _compare(reference, _signature(run), steps)
        print(f"{name} trial {k}: {' -> '.join(lives)}: {'OK' if not wrong else '; '.join(wrong)}", flush=True)
        out_trials.append({"lives": lives, "kills": kills, "wrong": wrong})
        shutil.rmtree(run, ignore_errors=True)
    return {"reference_s": round(wall, 1), "steps": steps, "trials": out_trials}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated: " + ", ".join(ARMS))
    ap.add_argument("--trials", type=int, default=4, help="trials an arm")
    ap.add_argument("--kills", type=int, default=2, help="kills a trial at most (each at a random moment)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="one trial an arm, one kill each")
    a = ap.parse_args()
    if a.quick:
        a.trials, a.kills = 1, 1
    arms = [x.strip() for x in a.arms.split(",") if x.strip()]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        sys.exit(f"--arms: unknown {', '.join(unknown)} (known: {', '.join(ARMS)})")
    results = {}
    with tempfile.TemporaryDirectory(prefix="rlvr-soak-") as tmp:
        for i, name in enumerate(arms):
            results[name] = soak_arm(name, a.trials, a.kills, a.seed + i, Path(tmp))
    tried = sum(t["kills"] for r in results.values() for t in r["trials"])
    survived = sum(t["kills"] for r in results.values() for t in r["trials"] if not t["wrong"])
    print(f"\nkills survived: {survived} of {tried}")
    for name, r in results.items():
        bad = [t for t in r["trials"] if t["wrong"]]
        print(f"  {name:13s} {sum(t['kills'] for t in r['trials'])} kills, {len(bad)} trials wrong")
    report(
        "soak",
        {"kills_tried": tried, "kills_survived": survived, "arms": results},
        [
            Bar("kills survived / tried", survived / max(tried, 1), "==", 1.0),
            Bar("kills tried", tried, ">=", 30, quick_decides=False),
        ],
        a,
        quick=a.quick,
    )


if __name__ == "__main__":
    main()
