"""The layout page's walk (one rollout, from the draw to the gradient, on rlvr's engine) is the
code's: a real step enters every call the table lists, in the table's order, each in the file it
names, and between the loop (``GRPOTrainer.train_step``) and the places the row is worked on (made,
scored, recorded, checked for a redraw, decided, its log-probs, its loss) no other function of rlvr
is on the stack. The walk stays within the bar of issue 55: twelve calls over six files at most."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import load_config
from rlvr.engine.trainer import GRPOTrainer
from tests.engine.test_trainer import TINY

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "rlvr"
PAGE = ROOT / "docs" / "concepts" / "layout.md"
LOOP = ("engine/trainer.py", "GRPOTrainer.train_step")
#: where the row is worked on; the rewards' entry is a leaf (what scores it is not the walk's plumbing)
WORK = {
    ("sampling/decode.py", "generate"),
    ("rewards/combine.py", "Total.breakdown"),
    ("sampling/rows.py", "ScoredRows.of"),
    ("sampling/rows.py", "redraw"),
    ("diagnostics/step.py", "FailureAware.decide"),
    ("engine/learner.py", "Forward.rows"),
    ("algo/loss.py", "policy_loss"),
}
LEAVES = {("rewards/combine.py", "Total.breakdown")}


def _table() -> list[tuple[str, str]]:
    """``(file, call)`` of each row of the page's walk, in order."""
    text = PAGE.read_text()
    section = text[text.index("### One rollout, sampling to gradient") :]
    section = section[: section.index("\n## ")]
    rows = re.findall(r"^\| (\d+) \| `([\w.]+)` \| `([\w/.]+)` \|", section, re.M)
    assert [int(n) for n, _, _ in rows] == list(range(1, len(rows) + 1)), "the walk's rows are numbered 1..n"
    return [(file, call) for _, call, file in rows]


def _where(frame: FrameType) -> tuple[str, str] | None:
    path = Path(frame.f_code.co_filename)
    if not path.is_relative_to(SRC):
        return None
    return str(path.relative_to(SRC)), frame.f_code.co_qualname


def _one_step(out: Path) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    """A real step's first entries of every rlvr function (in order) and the rlvr functions on the
    stack between the loop and the first entry of each place the row is worked on."""
    cfg = load_config(None, [*TINY, "run.steps=1", f"run.out_dir={out}"])
    trainer = GRPOTrainer(cfg)
    first: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    between: set[tuple[str, str]] = set()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or (here := _where(frame)) is None or here in seen:
            return
        seen.add(here)
        first.append(here)
        if here not in WORK:
            return
        chain = [] if here in LEAVES else [here]
        f = frame.f_back
        while f is not None and (up := _where(f)) != LOOP:
            if up is not None:
                chain.append(up)
            f = f.f_back
        assert f is not None, f"{here} was entered outside the loop's step"
        between.update(chain)

    before = sys.getprofile()
    sys.setprofile(profile)
    try:
        trainer.train_step()
    finally:
        sys.setprofile(before)
    return first, between


def main(out: str) -> None:
    """Print one step's walk as JSON (the test runs this in a fresh interpreter: a profiler over a
    step must not meet what earlier tests left in the process)."""
    torch.set_num_threads(1)
    first, between = _one_step(Path(out))
    print(json.dumps({"first": first, "between": sorted(between)}))


def test_the_layout_pages_walk_is_the_path_a_step_takes(tmp_path: Path) -> None:
    walk = _table()
    assert len(walk) <= 12 and len({file for file, _ in walk}) <= 6, walk
    run = subprocess.run(
        [sys.executable, "-c", f"from tests.engine.test_walk import main; main({str(tmp_path)!r})"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    first = [tuple(x) for x in got["first"]]
    between = {tuple(x) for x in got["between"]}
    missing = [c for c in walk if c not in first]
    assert not missing, f"the walk names calls a step never enters (or not in the file it says): {missing}"
    assert sorted(walk, key=first.index) == walk, "the walk's order is not the order a step enters its calls"
    assert between == set(walk), (
        f"on the row's path but not in the walk: {sorted(between - set(walk))}; "
        f"in the walk but not on the row's path: {sorted(set(walk) - between)}"
    )
