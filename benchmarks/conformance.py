"""TRL's own GRPO test module run against ``trl.GRPOTrainer`` and rlvr's ``FailureAwareGRPOTrainer``.

The harness (``../shared/bench/trl-conformance/``: TRL's ``tests/test_grpo_trainer.py`` unedited, an
offline pytest plugin and local stand-ins for the hub's tiny models) runs each arm; this script runs
the arms, compares them test by test and fails when a test that passes with ``GRPOTrainer`` fails
with rlvr's class **on the same machine, in the same run**:

    .venv/bin/python benchmarks/conformance.py            # both arms, every test (~40 min on 2 AVX2 cores)
    .venv/bin/python benchmarks/conformance.py --check    # CI: rlvr's arm, the tests the last full run saw
                                                          # pass on GRPOTrainer within --budget-s each;
                                                          # a test rlvr fails is run on GRPOTrainer here
                                                          # and counts only if it passes there
    .venv/bin/python benchmarks/conformance.py --reuse    # both arms' last results, compared again

A test slower than the budget on ``GRPOTrainer`` (TRL's environment tests with a 151k-vocab head: ~300 s
here, at the harness's own 300 s limit) is left to the full run, where both arms meet the same limit
on the same machine; ``--check`` names each one it leaves. The line it ends with:
``TRL conformance: rlvr passes P of T tests that pass on GRPOTrainer``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import RESULTS, ROOT, Bar, report

HARNESS = ROOT.parent / "shared" / "bench" / "trl-conformance"
WORK = Path(os.environ.get("TRLSUITE_WORK", "/tmp/trl-conformance"))


def run_arm(arm: str, *pytest_args: str, only: list[str] | None = None) -> dict[str, dict]:
    """Run one arm of the harness (with extra pytest arguments; ``only``: exactly these tests);
    ``{test id: result row}``."""
    print(f"running arm {arm} (TRL's test module, offline) ...", flush=True)
    argv, env = harness(arm, WORK, only, *pytest_args)
    subprocess.run(argv, cwd=ROOT, check=True, env=env)
    return results(arm)


# pytest's --deselect takes node-id *prefixes* (deselecting test_x also drops test_x_padding): a
# plugin of ours, in the work folder's extras (on the harness's path), keeps exactly the ids listed.
_SELECT_PLUGIN = """import os


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get("RLVR_CONFORMANCE_ONLY")
    if not path:
        return
    with open(path) as f:
        keep = set(f.read().splitlines())
    chosen = [i for i in items if i.nodeid.split("::", 1)[-1] in keep]
    config.hook.pytest_deselected(items=[i for i in items if i.nodeid.split("::", 1)[-1] not in keep])
    items[:] = chosen
"""


def harness(arm: str, work: Path, only: list[str] | None, *pytest_args: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment of one harness run of ``arm`` in ``work``: exactly the tests
    ``only`` names (their list file and the selecting plugin written there), every test when None."""
    argv = [str(HARNESS / "run.sh"), arm, *pytest_args]
    env = {**os.environ, "PYTHON": sys.executable, "TRLSUITE_WORK": str(work)}
    env.pop("RLVR_CONFORMANCE_ONLY", None)
    if only is not None:
        (work / "extra").mkdir(parents=True, exist_ok=True)
        (work / "extra" / "rlvr_select.py").write_text(_SELECT_PLUGIN)
        listing = work / f"only-{arm}.txt"
        listing.write_text("\n".join(sorted(only)) + "\n")
        argv += ["-p", "rlvr_select"]
        env["RLVR_CONFORMANCE_ONLY"] = str(listing)
    return argv, env


def run_shards(arm: str, tests: list[str], seconds: dict[str, float], shards: int) -> dict[str, dict]:
    """Exactly ``tests`` of ``arm``, split over ``shards`` harness runs side by side, balanced by their
    recorded ``seconds`` (the harness runs one test at a time, on one core): each run in a work
    folder of its own whose built models and extras are the main folder's (links); results merged."""
    if shards <= 1 or len(tests) < 2:
        return run_arm(arm, only=tests)
    run_arm(arm, "--collect-only", "-q", only=[])  # the models, datasets and harness extras, built once
    parts: list[list[str]] = [[] for _ in range(shards)]
    load = [0.0] * shards
    for t in sorted(tests, key=lambda t: -seconds.get(t, 5.0)):  # longest first, onto the lightest part
        i = load.index(min(load))
        parts[i].append(t)
        load[i] += seconds.get(t, 5.0)
    runs = []
    for i, part in enumerate(parts):
        work = shard_work(i)
        log = (work / f"shard-{arm}.log").open("w")
        print(f"  part {i + 1} of {shards}: {len(part)} tests, ~{load[i]:.0f} s on GRPOTrainer (log: {log.name})")
        argv, env = harness(arm, work, part)
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        runs.append((proc, log, work))
    merged: dict[str, dict] = {}
    for proc, log, work in runs:
        proc.wait()
        log.close()
        tail = (work / f"shard-{arm}.log").read_text().rstrip().splitlines()
        print(f"  {work.name}: {tail[-2] if len(tail) > 1 else 'no output'}", flush=True)
        merged.update(results(arm, work))
    return merged


def shard_work(i: int) -> Path:
    """Part ``i``'s work folder: the main one, or a sibling linking to its built roots and extras."""
    if i == 0:
        return WORK
    work = WORK.with_name(f"{WORK.name}-part{i + 1}")
    work.mkdir(parents=True, exist_ok=True)
    for name in ("models", "models_gold", "models_full", "models_full_gold", "extra"):
        link = work / name
        if not link.exists():
            link.symlink_to(WORK / name)
    return work


def results(arm: str, work: Path = WORK) -> dict[str, dict]:
    """The last run of ``arm``: ``{test id: {"outcome", "duration", ...}}``."""
    path = work / "results" / arm / "results.jsonl"
    if not path.exists():
        sys.exit(f"{path}: no results (the harness run did not finish; see {path.parent}/pytest.log)")
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {r["nodeid"].split("::", 1)[1]: r for r in rows if "nodeid" in r}


def passed(res: dict[str, dict]) -> set[str]:
    return {t for t, r in res.items() if r["outcome"] == "passed"}


def slowest(res: dict[str, dict], n: int = 8) -> str:
    rows = sorted(res.items(), key=lambda kv: -kv[1].get("duration", 0.0))[:n]
    return "\n".join(f"  {r.get('duration', 0.0):7.1f} s  {r['outcome']:8s} {t}" for t, r in rows)


def here_on_trl(tests: list[str]) -> dict[str, dict]:
    """Exactly ``tests`` run on ``GRPOTrainer`` now, on this machine (the full run's TRL results
    kept aside)."""
    kept = WORK / "results" / "trl"
    aside = WORK / "results" / ".trl-full"
    if kept.exists():
        shutil.rmtree(aside, ignore_errors=True)
        kept.rename(aside)
    try:
        res = run_arm("trl", only=tests)
    finally:
        if aside.exists():
            shutil.rmtree(kept, ignore_errors=True)
            aside.rename(kept)
    return {t: r for t, r in res.items() if t in tests}


def check(budget_s: float, shards: int) -> None:
    recorded = json.loads((RESULTS / "conformance.json").read_text())["figures"]
    trl_passed = set(recorded["trl_passed"])
    durations: dict[str, float] = recorded.get("trl_durations", {})
    slow = sorted(t for t in trl_passed if durations.get(t, 0.0) > budget_s)
    # what cannot count (slow, or not passing on GRPOTrainer when recorded) is not run at all
    if slow:
        print(f"left to the full run (over {budget_s:g} s each on GRPOTrainer when it was recorded):")
        print("\n".join(f"  {durations[t]:6.0f} s  {t}" for t in slow))
    judged = trl_passed - set(slow)
    rlvr = run_shards("rlvr", sorted(judged), durations, shards)
    failed = sorted(t for t in judged if rlvr.get(t, {}).get("outcome") != "passed")
    lost, machine = failed, []
    if failed:  # a test counts against rlvr only if GRPOTrainer passes it here, now
        print(f"{len(failed)} failed on rlvr's class; running them on GRPOTrainer on this machine ...")
        trl_here = here_on_trl(failed)
        machine = [t for t in failed if trl_here.get(t, {}).get("outcome") != "passed"]
        lost = [t for t in failed if t not in machine]
    print("slowest tests on rlvr's class:\n" + slowest(rlvr))
    if machine:
        print("fail on GRPOTrainer too on this machine (they say nothing about rlvr):")
        for t in machine:
            r = rlvr.get(t, {})
            print(f"  {t}: {(r.get('message') or r.get('outcome') or 'missing').splitlines()[-1][:160]}")
    if lost:
        print("pass on GRPOTrainer here, fail on FailureAwareGRPOTrainer:\n  " + "\n  ".join(lost))
    n = len(judged) - len(machine)
    print(f"TRL conformance: rlvr passes {n - len(lost)} of {n} tests that pass on GRPOTrainer here")
    sys.exit(1 if lost else 0)


def compare(trl: dict[str, dict], rlvr: dict[str, dict], a: argparse.Namespace) -> None:
    trl_passed = passed(trl)
    lost = sorted(t for t in trl_passed if rlvr.get(t, {}).get("outcome") != "passed")
    kept = len(trl_passed) - len(lost)
    line = f"TRL conformance: rlvr passes {kept} of {len(trl_passed)} tests that pass on GRPOTrainer"
    if lost:
        print("passes on GRPOTrainer, not on FailureAwareGRPOTrainer:\n  " + "\n  ".join(lost))
    print("slowest tests on GRPOTrainer:\n" + slowest(trl))
    print(line)
    counts = {
        arm: {o: sum(r["outcome"] == o for r in res.values()) for o in ("passed", "failed", "error", "skipped")}
        for arm, res in (("trl", trl), ("rlvr", rlvr))
    }
    report(
        "conformance",
        {
            "trl_passed": sorted(trl_passed),
            "trl_durations": {t: round(r.get("duration", 0.0), 1) for t, r in sorted(trl.items())},
            "machine": platform.processor() or platform.machine(),
            "rlvr_lost": lost,
            "counts": counts,
            "line": line,
        },
        [Bar("TRL's passing tests that fail on rlvr's class", len(lost), "==", 0)],
        a,
    )
    sys.exit(1 if lost else 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="CI: rlvr's arm, failures re-run on GRPOTrainer here")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=60.0,
        help="--check: leave tests slower than this on GRPOTrainer (as recorded) to the full run",
    )
    ap.add_argument(
        "--shards",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="--check: harness runs side by side (one core each), the tests split by their recorded seconds",
    )
    ap.add_argument(
        "--reuse-trl",
        action="store_true",
        help="take TRL's arm from the last run in $TRLSUITE_WORK (it does not depend on rlvr's code)",
    )
    ap.add_argument("--reuse", action="store_true", help="take both arms from the last run: compare only")
    a = ap.parse_args()
    if not (HARNESS / "run.sh").exists():
        sys.exit(f"no harness at {HARNESS} (../shared is not there): nothing to run")
    if a.check:
        check(a.budget_s, a.shards)
    trl = results("trl") if a.reuse_trl or a.reuse else run_arm("trl")
    rlvr = results("rlvr") if a.reuse else run_arm("rlvr")
    compare(trl, rlvr, a)


if __name__ == "__main__":
    main()
