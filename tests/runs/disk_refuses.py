"""Run inside ``unshare -Urm`` by ``test_disk.py``: a run whose disk fills, or turns read-only,
while it saves a checkpoint. Prints one JSON line: what the run said and what was left.

    python disk_refuses.py full WORK       # a 3.5 MB tmpfs under the run: the second checkpoint does not fit
    python disk_refuses.py readonly WORK   # a run with step-1, resumed with its checkpoints/ mounted read-only
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

from rlvr.runs.checkpoint import latest

TRAIN = [sys.executable, "-m", "rlvr", "train", "--set", "run.eval_every=0", "--set", "run.save_every=1"]


def _train(run: Path, steps: int, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [*TRAIN, "--set", f"run.steps={steps}", "--set", f"run.out_dir={run}", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def main() -> None:
    kind, work = sys.argv[1], Path(sys.argv[2])
    run = work / "run"
    run.mkdir(parents=True)
    if kind == "full":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3500k", "tmpfs", str(run)], check=True)
        done = _train(run, 3)
    else:
        first = _train(run, 1)
        assert first.returncode == 0, first.stderr
        ckpts = run / "checkpoints"
        subprocess.run(["mount", "--bind", str(ckpts), str(ckpts)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ckpts)], check=True)
        done = _train(run, 3, "--resume", str(run))
    kept = latest(run)
    loadable = kept is not None and "model" in torch.load(kept / "state.pt", weights_only=False, map_location="cpu")
    leftovers = sorted(p.name for p in (run / "checkpoints").iterdir() if p.name.startswith("."))
    print(
        json.dumps(
            {
                "rc": done.returncode,
                "stderr": done.stderr,
                "kept": kept.name if kept else None,
                "loadable": loadable,
                "leftovers": leftovers,
                "config_whole": (run / "config.yaml").read_text().startswith("engine:")
                or "model:" in (run / "config.yaml").read_text(),
            }
        )
    )


if __name__ == "__main__":
    main()
