"""Benchmark figures that cannot go stale: every run writes what it measured, where and when.

Each benchmark ends with :func:`report`: one ``PASS``/``FAIL`` line per bar (the figure, the bar),
and a JSON file ``benchmarks/results/<name>.json`` (``results/quick/`` for ``--quick`` runs, which
git ignores) holding the figures, the bars, the arguments, the commit (``+dirty`` when the tree
had uncommitted changes), the date and the machine's load. The docs' tables cite the commit
of the file they were copied from; ``make bench-check`` runs every benchmark in its quick mode.

``--against REV`` support (:func:`worktree`): a benchmark can measure an older commit of rlvr in
the same run, from a temporary git worktree, to print *before* and *after* side by side.
"""

from __future__ import annotations

import datetime
import json
import operator
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}


@dataclass(frozen=True)
class Bar:
    """One bar: ``figure OP target`` (``value`` is what this run measured).

    ``quick_decides=False`` marks a bar that one short quick-mode run cannot decide (an accuracy
    difference inside the spread of one seed and a few dozen steps): a quick run shows it as a
    ``FIGURE`` line, neither PASS nor FAIL, and only the full run judges it.
    """

    name: str
    value: float
    op: str
    target: float
    unit: str = ""
    quick_decides: bool = True

    @property
    def met(self) -> bool:
        return _OPS[self.op](self.value, self.target)

    def judged(self, quick: bool) -> bool:
        """Whether this run's figure is a verdict on the bar."""
        return self.quick_decides or not quick

    def line(self, bench: str, quick: bool = False) -> str:
        fmt = (lambda v: f"{v:.2%}") if self.unit == "%" else (lambda v: f"{v:.3g}{self.unit}")
        if not self.judged(quick):
            return (
                f"FIGURE {bench}: {self.name} = {fmt(self.value)} (bar {self.op} {fmt(self.target)}, "
                f"judged by the full run only)"
            )
        verdict = "PASS" if self.met else "FAIL"
        return f"{verdict} {bench}: {self.name} = {fmt(self.value)} (bar {self.op} {fmt(self.target)})"


def provenance() -> dict[str, Any]:
    """The commit (``+dirty`` for uncommitted changes), the date and the machine's state."""

    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"):  # results don't count
        commit += "+dirty"
    return {
        "commit": commit,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
    }


#: the tree as the benchmark started (a later edit while it runs does not make its figures "dirty")
STARTED = provenance()


def bar_records(bars: list[Bar]) -> list[dict[str, Any]]:
    """The bars as a results file keeps them (with whether each was met)."""
    return [{**asdict(b), "met": b.met} for b in bars]


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write a results file whole or not at all (a crash mid-write leaves the earlier one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def report(name: str, figures: dict[str, Any], bars: list[Bar], args: Any = None, *, quick: bool = False) -> Path:
    """Print the bar lines and write the results file; returns its path."""
    out = (RESULTS / "quick" if quick else RESULTS) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": name,
        "quick": quick,
        **STARTED,
        "finished": provenance()["date"],
        "args": vars(args) if args is not None and hasattr(args, "__dict__") else args,
        "figures": figures,
        "bars": bar_records(bars),
    }
    write_record(out, record)
    print()
    for b in bars:
        print(b.line(name, quick))
    print(f"results: {out.relative_to(ROOT)} (commit {record['commit']}, {record['date']})")
    return out


def worktree(rev: str) -> Path:
    """A temporary checkout of ``rev`` (its ``src`` goes on ``sys.path`` of a child process)."""
    path = Path(tempfile.mkdtemp(prefix="rlvr-bench-")) / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(path), rev], cwd=ROOT, check=True)
    return path


def drop_worktree(path: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True)


def run_child(script: Path, src: Path, argv: list[str]) -> dict[str, Any]:
    """Run ``script`` with rlvr imported from ``src``; its last stdout line is a JSON object."""
    env = {**os.environ, "RLVR_BENCH_SRC": str(src)}
    res = subprocess.run([sys.executable, str(script), *argv], env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{script.name} {' '.join(argv)} under {src} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def src_path() -> str:
    """Where to import rlvr from: this tree's ``src``, or the one ``--against`` checked out."""
    return os.environ.get("RLVR_BENCH_SRC") or str(ROOT / "src")


def summary(folder: Path) -> int:
    """Print every bar line of the results files in ``folder``; the number that failed."""
    failed = 0
    files = sorted(folder.glob("*.json"))
    if not files:
        print(f"no results in {folder}")
        return 1
    for path in files:
        rec = json.loads(path.read_text())
        quick = bool(rec.get("quick"))
        for b in rec["bars"]:
            bar = Bar(b["name"], b["value"], b["op"], b["target"], b.get("unit", ""), b.get("quick_decides", True))
            failed += bar.judged(quick) and not bar.met
            print(bar.line(rec["benchmark"], quick) + f"  [{rec['commit']}]")
    broken = (folder / "failed.txt").read_text().split("\n") if (folder / "failed.txt").exists() else []
    for cmd in filter(None, broken):
        print(f"FAILED TO RUN: {cmd} (run it alone to see why)")
        failed += 1
    print(f"{failed} bar(s) not met or benchmark(s) not run" if failed else "every bar met")
    return failed


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Print the bar lines of benchmark results files.")
    ap.add_argument("--summary", type=Path, default=RESULTS, help="folder of results files")
    sys.exit(1 if summary(ap.parse_args().summary) else 0)


def save_figure(fig: Any, path: Path) -> None:
    """Write a matplotlib figure (tight layout, 110 dpi) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


class KeptRuns:
    """Finished (arm, seed) runs of a long benchmark kept as files under ``folder``, each with the
    settings it ran under: an interrupted benchmark resumes where it stopped instead of starting its
    hours again, and a kept run is reused only when its settings match."""

    def __init__(self, folder: Path, settings: dict[str, Any]) -> None:
        self.folder, self.settings = folder, settings

    def path(self, arm: str, seed: int) -> Path:
        return self.folder / f"{arm.replace(' ', '_')}-seed{seed}.json"

    def get(self, arm: str, seed: int) -> dict[str, Any] | None:
        """The kept result of ``arm`` and ``seed`` (printed as reused), or None."""
        path = self.path(arm, seed)
        if path.exists() and (old := json.loads(path.read_text()))["settings"] == self.settings:
            print(f"kept: {arm} seed {seed} ({path})", flush=True)
            return old["result"]
        return None

    def put(self, arm: str, seed: int, result: dict[str, Any]) -> None:
        path = self.path(arm, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"settings": self.settings, "result": result}))


def mean_se(xs: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for one value)."""
    import math
    import statistics

    m = statistics.mean(xs)
    return m, (statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0)


def _die_with_parent() -> None:
    """In a worker: end with the benchmark that started it (a parent killed by a signal otherwise leaves
    its workers running, writing into the run folders of the next run)."""
    import ctypes
    import signal
    import sys

    if sys.platform == "linux":
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def side_by_side(
    fn: Callable[..., Any], calls: dict[Any, tuple[Any, ...]], jobs: int, done: Callable[[Any, Any], None]
) -> None:
    """``fn(*args)`` for every ``key: args`` of ``calls``, ``jobs`` at a time in spawned processes (one
    torch thread each: every run is seeded, so the figures do not depend on ``jobs``), or in this
    process when ``jobs`` is 1; ``done(key, result)`` in the order of ``calls``."""
    if jobs <= 1:
        for key, args in calls.items():
            done(key, fn(*args))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_die_with_parent) as pool:
        futures = {key: pool.submit(fn, *args) for key, args in calls.items()}
        for key, f in futures.items():
            done(key, f.result())
