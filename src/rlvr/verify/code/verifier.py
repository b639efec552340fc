"""``verify_code``: run the completion's program against its tests in the sandbox.

Statuses keep the two deaths apart, as for maths:

- ``no_answer`` (a format death: the *invalid* row of the seeds' table, -0.2): no
  code block of the language, a syntax error, or a failed build;
- ``correct`` (+1): every test passed;
- ``wrong`` (-1): the program ran and some test failed, raised, timed out, ran out
  of memory or printed past the output limit;
- ``bad_gold``: the test specification is not one; ``error``: the sandbox itself
  could not run (never the program's fault, never scored).

``details`` carries ``passed``, ``total`` and ``pass_fraction`` (the ``code_pass_rate``
reward), the sandbox level, and the first failures' reasons.
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from importlib.resources import files as package_files
from typing import Any

from rlvr.encoding import encodable, unencodable
from rlvr.types import Method, Status, Verdict
from rlvr.verify.code import sandbox
from rlvr.verify.code._harness import encode, load_plain
from rlvr.verify.code.asserts import Check, compile_asserts, evaluate
from rlvr.verify.code.extract import extract_code
from rlvr.verify.code.languages import Language, get_language
from rlvr.verify.code.spec import TestSpec, parse_spec

#: Seconds for a whole item (every run it needs) unless the spec says otherwise.
DEFAULT_CODE_TIMEOUT = 10.0
_HARNESS = "_rlvr_harness.py"  # the name _tests.py imports it by
_TESTS = "_rlvr_tests.py"
_MAX_FAILURES = 5


def _harness_source(name: str = "_harness.py") -> str:
    return package_files("rlvr.verify.code").joinpath(name).read_text()


def _invalid(why: str, code: str = "", rule: str = "", **details: Any) -> Verdict:
    return Verdict(
        Status.NO_ANSWER,
        extracted=code[:2000],
        method=Method.EXECUTION,
        reason=why,
        details={
            "invalid": details.pop("kind", "no_code"),
            "rule": rule,
            "passed": 0,
            "total": 0,
            "pass_fraction": 0.0,
            **details,
        },
    )


def _python_syntax(code: str) -> str:
    """'' when ``code`` compiles, else the error (hostile sources cannot crash the check)."""
    try:
        compile(code, "solution.py", "exec", dont_inherit=True)
        return ""
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as e:
        return f"{type(e).__name__}: {e}"


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    head = name.split(".")[0]
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == head for n in tree.body
    ) or any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == head for t in n.targets)
        for n in tree.body
    )


def verify_code(
    completion: str,
    gold: Any,
    *,
    timeout: float | None = DEFAULT_CODE_TIMEOUT,
    language: str | None = None,
    early_stop: bool = False,
    bare: bool = False,
    limits: sandbox.Limits | None = None,
    **_: Any,
) -> Verdict:
    """Verify one completion against a test specification (see :mod:`rlvr.verify.code.spec`).

    Args:
        completion: the model's output.
        gold: the test specification.
        timeout: wall seconds for the whole item (all its runs); the spec's own wins.
        language: overrides the spec's language.
        early_stop: stop at the first failing test.
        bare: accept a completion with no code fence as code (base-model continuations).
        limits: sandbox limits (its ``wall_s`` is replaced by the remaining budget).

    Never raises: whatever the program does or sends back is a verdict.
    """
    try:
        return _verify_code(completion, gold, timeout, language, early_stop, bare, limits)
    except Exception as e:  # a bug of ours, never the program's win: not scored, and said loudly
        return Verdict(
            Status.ERROR, method=Method.EXECUTION, reason=f"code verifier error: {type(e).__name__}: {str(e)[:200]}"
        )


def _verify_code(
    completion: str,
    gold: Any,
    timeout: float | None,
    language: str | None,
    early_stop: bool,
    bare: bool,
    limits: sandbox.Limits | None,
) -> Verdict:
    try:
        spec = parse_spec(gold)
        lang = get_language(language or spec.language)
    except ValueError as e:
        return Verdict(Status.BAD_GOLD, method=Method.EXECUTION, reason=f"bad test specification: {e}")
    code, rule = extract_code(completion, lang, bare=bare)
    if not code.strip():
        return _invalid(f"no {lang.name} code found (fenced block or <answer>)")
    if (why := unencodable(code)) is not None:  # the policy's text, not the sandbox's fault
        return _invalid(f"the program cannot be written as UTF-8: {why}", code, rule, kind="encoding")
    if lang.name == "python":
        if spec.prompt and spec.entry_point and not _defines(code, spec.entry_point):
            code = spec.prompt + code  # HumanEval style: the completion continues the prompt
        if err := _python_syntax(code):
            return _invalid(f"does not compile: {err}", code, rule, kind="syntax")
    budget = spec.timeout or timeout or DEFAULT_CODE_TIMEOUT
    limits = limits or sandbox.Limits()
    if spec.mode == "io":
        result = _run_io(code, spec, lang, limits, budget, early_stop)
    elif lang.harness:
        result = _run_harness(code, spec, lang, limits, budget, early_stop)
    else:
        result = _run_program(code, spec, lang, limits, budget)
    if isinstance(result, Verdict):
        return result
    passed, total, failures, level, extra = result
    warn = sandbox.isolation_warning(level)
    frac = passed / total if total else 0.0
    details = {
        "passed": passed,
        "total": total,
        "pass_fraction": frac,
        "isolation": level,
        "rule": rule,
        "failures": failures[:_MAX_FAILURES],
        "language": lang.name,
        "mode": spec.mode,
        **extra,
    }
    if extra.get("tamper"):  # data, not a crash: -1, and the alarm alarms/code_tamper
        reason, status = f"tamper attempt: {extra['tamper']} (scored wrong)", Status.WRONG
    elif total and passed == total:
        reason = f"all {total} tests passed"
        status = Status.CORRECT
    else:
        reason = f"{passed}/{total} tests passed" + (f"; first failure: {failures[0]}" if failures else "")
        status = Status.WRONG
    return Verdict(
        status,
        extracted=code[:2000],
        method=Method.EXECUTION,
        reason=f"{reason} [{warn}]" if warn else reason,
        details=details,
    )


#: ``(passed, total, failures, isolation level, extra details)``.
_Result = tuple[int, int, list[str], str, dict[str, Any]]


def _uids(*runs: sandbox.RunResult) -> list[int]:
    """The sandbox user ids these runs ran as (what a check that nothing is left looks at)."""
    return [r.uid for r in runs if r.uid is not None]


def _run_failure(run: sandbox.RunResult) -> str:
    """Why a run did not finish cleanly, in words ('' when it did)."""
    if run.timed_out:
        return f"timed out after {run.wall_s:.1f}s"
    if run.output_exceeded:
        return "printed more than the output limit"
    if run.returncode and run.returncode < 0:
        return f"killed by signal {-run.returncode}"
    if run.returncode:
        tail = run.stderr.strip().splitlines()[-1:] or [""]
        return f"exit status {run.returncode}" + (f": {tail[0][:200]}" if tail[0] else "")
    return ""


def _build_argv(lang: Language) -> list[str]:
    run = " ".join(_shq(a.replace("{source}", lang.source)) for a in lang.run)
    if lang.build is None:
        return [a.replace("{source}", lang.source) for a in lang.run]
    # the marker is written before the program starts, so the program can neither forge nor erase it
    return ["/bin/bash", "-c", f"{lang.build} 1>&2 && echo built >&{{result_fd}} && exec {run}"]


def _shq(s: str) -> str:
    return s if re.fullmatch(r"[\w./{}=-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def _built(lang: Language, run: sandbox.RunResult, code: str) -> Verdict | None:
    if lang.build is not None and not run.results.startswith(b"built"):
        if run.timed_out:
            return _invalid("build timed out", code, kind="build")
        return _invalid(f"build failed: {run.stderr.strip()[-300:]}", code, kind="build")
    return None


def _limits(limits: sandbox.Limits, wall: float) -> sandbox.Limits:
    return replace(limits, wall_s=max(0.1, wall))


def _run_io(
    code: str, spec: TestSpec, lang: Language, limits: sandbox.Limits, budget: float, early_stop: bool
) -> _Result | Verdict:
    end = time.monotonic() + budget
    passed, failures, level, uids = 0, [], sandbox.isolation(), []
    for i, case in enumerate(spec.cases):
        left = end - time.monotonic()
        if left <= 0:
            failures.append(f"case {i}: not run (time budget spent)")
            if early_stop:
                break
            continue
        run = sandbox.run(
            _build_argv(lang), {lang.source: code}, stdin=str(case["input"]), limits=_limits(limits, left)
        )
        level = run.isolation
        uids += _uids(run)
        if run.error:
            return Verdict(Status.ERROR, extracted=code[:2000], method=Method.EXECUTION, reason=run.error)
        if (bad := _built(lang, run, code)) is not None:
            return bad
        why = _run_failure(run)
        if not why and not same_output(run.stdout, str(case["output"]), spec.float_tol):
            why = f"output {run.stdout.strip()[:80]!r} != expected {str(case['output']).strip()[:80]!r}"
        if why:
            failures.append(f"case {i}: {why}")
            if early_stop:
                break
        else:
            passed += 1
    return passed, len(spec.cases), failures, level, {"checks": "outside", "sandbox_uids": uids}


def _run_harness(
    code: str, spec: TestSpec, lang: Language, limits: sandbox.Limits, budget: float, early_stop: bool
) -> _Result | Verdict:
    """Python: call cases and assert tests of the usual shape run as calls judged here (the expected
    values never enter the sandbox); other assert tests run in a sandbox of their own, calling the
    program in another (:func:`_run_apart`)."""
    if spec.mode == "call" and not spec.entry_point:
        return Verdict(Status.BAD_GOLD, method=Method.EXECUTION, reason="call tests need an entry_point")
    checks: list[Check] | None
    if spec.mode == "call":
        checks = [_case_check(c, spec.float_tol) for c in spec.cases]
    else:
        checks = compile_asserts(spec.tests, spec.entry_point)
    if checks is None:
        return _run_apart(code, spec, lang, limits, budget, early_stop)
    calls = [c for c in checks if c.calls]
    order = {
        "mode": "calls",
        "entry_point": spec.entry_point,
        "calls": [{"args": encode(list(c.args)), "kwargs": encode(c.kwargs)} for c in calls],
    }
    nonce = secrets.token_hex(8)
    run = sandbox.run(
        [lang.run[0], "-I", _HARNESS, "{result_fd}"],
        {lang.source: code, _HARNESS: _harness_source()},
        stdin=json.dumps({"nonce": nonce, "source": lang.source, **order}),
        limits=_limits(limits, budget),
    )
    if run.error:
        return Verdict(Status.ERROR, extracted=code[:2000], method=Method.EXECUTION, reason=run.error)
    passed, total, failures, level, extra = _judge_calls(checks, _read_report(run, nonce), early_stop)
    return passed, total, failures, level, {**extra, "sandbox_uids": _uids(run)}


@dataclass
class _Report:
    """What a harness said on its result pipe (lines without its nonce are ignored)."""

    run: sandbox.RunResult
    total: int | None = None
    done: bool = False
    fatal: str = ""
    tamper: str = ""
    cases: dict[int, tuple[bool, str]] = field(default_factory=dict)  # tests' runner: i -> (ok, why)
    results: dict[int, tuple[bool, Any]] = field(default_factory=dict)  # calls mode: i -> (returned?, value/why)

    @property
    def level(self) -> str:
        return self.run.isolation


def _read_report(run: sandbox.RunResult, nonce: str) -> _Report:
    rep = _Report(run=run)
    lines = run.results.decode("utf-8", "replace").splitlines()
    if run.output_exceeded and lines:  # cut at the output limit: the last line is not whole
        lines.pop()
    for line in lines:
        head, _, rest = line.partition(" ")
        if head != nonce:  # not the harness's (the solution printing to our pipe)
            continue
        try:
            _read_line(rep, rest)
        except Exception as e:
            # only the harness knows the nonce: a line it wrote that does not parse was tampered with
            rep.tamper = rep.tamper or f"corrupted the harness's report ({type(e).__name__}: {str(e)[:120]})"
    return rep


def _read_line(rep: _Report, rest: str) -> None:
    kind, _, rest = rest.partition(" ")
    if kind == "total" and rep.total is None:
        rep.total = int(rest)
    elif kind == "case":
        i, ok, why = rest.split(" ", 2)
        rep.cases.setdefault(int(i), (ok == "1", _text(load_plain(why))))
    elif kind in ("result", "raised"):
        i, payload = rest.split(" ", 1)
        value = load_plain(payload) if kind == "result" else _text(load_plain(payload))
        rep.results.setdefault(int(i), (kind == "result", value))
    elif kind == "fatal":
        rep.fatal = _text(load_plain(rest))
    elif kind == "tamper":
        rep.tamper = rep.tamper or _text(load_plain(rest))
    elif kind in ("done", "stopped"):  # stopped: early stop after a failure, by request
        rep.done = True


def _text(value: Any) -> str:
    """A message the harness sent back, as text any writer can encode (the program chose it: an
    exception's message or name can hold a lone surrogate)."""
    return encodable(str(value))


def _tampered(rep: _Report, total: int, checks: str) -> _Result:
    return 0, total, [f"tamper attempt: {rep.tamper}"], rep.level, {"checks": checks, "tamper": rep.tamper}


def _run_apart(
    code: str, spec: TestSpec, lang: Language, limits: sandbox.Limits, budget: float, early_stop: bool
) -> _Result | Verdict:
    """Tests that must run as code (loops, helpers) in their own sandbox, the program in another.

    Two pipes join them and carry plain values only: the tests call stand-ins for the program's
    names (``_tests.py``), the program answers (``_harness.py``, mode ``serve``). The tests, their
    expected values, their nonce and their report never share an address space with the program.
    """
    harness, wall = _harness_source(), _limits(limits, budget)
    calls_r, calls_w = os.pipe()
    replies_r, replies_w = os.pipe()
    prog_nonce, tests_nonce = secrets.token_hex(8), secrets.token_hex(8)
    try:
        prog = sandbox.start(
            [lang.run[0], "-I", _HARNESS, "{result_fd}", "{calls}", "{replies}"],
            {lang.source: code, _HARNESS: harness},
            stdin=json.dumps({"nonce": prog_nonce, "source": lang.source, "mode": "serve"}),
            limits=wall,
            channels={"calls": calls_r, "replies": replies_w},
        )
        tests = sandbox.start(
            [lang.run[0], "-I", _TESTS, "{result_fd}", "{calls}", "{replies}"],
            {_TESTS: _harness_source("_tests.py"), _HARNESS: harness},
            stdin=json.dumps(
                {
                    "nonce": tests_nonce,
                    "tests": spec.tests,
                    "entry_point": spec.entry_point,
                    "prompt": spec.prompt,
                    "early_stop": early_stop,
                    "names": _names_asked(spec.tests + "\n" + (spec.prompt or ""), _top_level_names(code)),
                }
            ),
            limits=wall,
            channels={"calls": calls_w, "replies": replies_r},
        )
    finally:
        for fd in (calls_r, calls_w, replies_r, replies_w):
            os.close(fd)
    with ThreadPoolExecutor(1) as pool:
        prog_done = pool.submit(prog.finish)
        tests_run = tests.finish()
        prog.kill()  # the tests are over: whatever the program still does is of no use
        prog_run = prog_done.result()
    for r in (tests_run, prog_run):
        if r.error:
            return Verdict(Status.ERROR, extracted=code[:2000], method=Method.EXECUTION, reason=r.error)
    rep, prog_rep = _read_report(tests_run, tests_nonce), _read_report(prog_run, prog_nonce)
    extra = {"sandbox_uids": _uids(tests_run, prog_run)}
    total = rep.total or 1  # no total: the tests' runner died at load
    if prog_rep.tamper:
        passed, total, failures, level, more = _tampered(prog_rep, total, "apart")
        return passed, total, failures, level, {**more, **extra}
    failures = [f"test {i}: {why}" for i, (ok, why) in sorted(rep.cases.items()) if not ok]
    passed = sum(ok for ok, _ in rep.cases.values())
    if not rep.done:
        failures.append(
            rep.fatal or prog_rep.fatal or _run_failure(tests_run) or "the run ended before the tests finished"
        )
        passed = min(passed, total - 1)
    return passed, total, failures, rep.level, {"checks": "apart", **extra}


def _names_asked(tests: str, names: list[str]) -> list[str]:
    """The program's top-level names the tests (or the spec's prompt helpers) read without binding
    them: only those get a stand-in. A name the tests never read, or one they define or import
    themselves, is not the program's to fill."""
    try:
        tree = ast.parse(tests)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    loaded: set[str] = set()
    bound: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(n.name)
        elif isinstance(n, ast.alias):
            bound.add((n.asname or n.name).partition(".")[0])
    return [x for x in names if x in loaded and x not in bound]


def _top_level_names(code: str) -> list[str]:
    """The names the program defines at module level (functions, classes, assignments, modules it
    imports, as a test module run after it would see them): each the tests read gets a stand-in
    there (a standard module: the real one, :func:`_names_asked`)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []
    for n in tree.body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(n.name)
        elif isinstance(n, ast.Assign | ast.AnnAssign):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names.extend(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(n, ast.Import):
            names.extend((a.asname or a.name).partition(".")[0] for a in n.names)
    return list(dict.fromkeys(names))


def _judge_calls(checks: list[Check], rep: _Report, early_stop: bool) -> _Result:
    if rep.tamper:
        return _tampered(rep, len(checks), "outside")
    passed, failures, k = 0, [], 0
    for i, check in enumerate(checks):
        if check.calls:
            returned, value = rep.results.get(k, (False, None))
            k += 1
            if not returned:
                why = value or rep.fatal or _run_failure(rep.run) or "the run ended before this call"
                ok, why = False, f"{check.source}: {why}"
            else:
                ok, why = evaluate(check, value)
        else:
            ok, why = evaluate(check, None)
        if ok:
            passed += 1
        else:
            failures.append(f"test {i}: {why}")
            if early_stop:
                break
    return passed, len(checks), failures, rep.level, {"checks": "outside"}


def _case_check(case: dict[str, Any], tol: float) -> Check:
    """A function-call case as a check: the result equals the expected value (floats within ``tol``)."""
    return Check(
        "case",
        tuple(case.get("args", [])),
        dict(case.get("kwargs", {})),
        case.get("result"),
        tol={"tol": tol},
        source=f"case {case.get('args', [])!r}"[:160],
    )


def _run_program(code: str, spec: TestSpec, lang: Language, limits: sandbox.Limits, budget: float) -> _Result | Verdict:
    """Languages without the harness: solution + tests as one program; it passes when it exits 0."""
    run = sandbox.run(_build_argv(lang), {lang.source: code + "\n" + spec.tests}, limits=_limits(limits, budget))
    if run.error:
        return Verdict(Status.ERROR, extracted=code[:2000], method=Method.EXECUTION, reason=run.error)
    if (bad := _built(lang, run, code)) is not None:
        return bad
    why = _run_failure(run)
    return (
        (0 if why else 1),
        1,
        ([why] if why else []),
        run.isolation,
        {"checks": "exit_status", "sandbox_uids": _uids(run)},
    )


# an expected output token written as a float: tolerance applies to it, not to an integer's digits
_FLOAT_TOKEN = re.compile(r"[-+]?(?:(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)")


def same_output(got: str, want: str, float_tol: float = 0.0) -> bool:
    """Whitespace-tolerant output comparison, token by token, line by line: an expected token
    written as a float (a point, an exponent) matches a number within ``float_tol`` of it; every
    other token (an integer among them: a float printed near it is not it) matches only itself."""

    def lines(s: str) -> list[list[str]]:
        out = [ln.split() for ln in s.strip().splitlines()]
        return [ln for ln in out if ln]

    a, b = lines(got), lines(want)
    if len(a) != len(b):
        return False
    for la, lb in zip(a, b):
        if len(la) != len(lb):
            return False
        for x, y in zip(la, lb):
            if x == y:
                continue
            if not float_tol or not _FLOAT_TOKEN.fullmatch(y):
                return False
            try:
                fx, fy = float(x), float(y)
            except ValueError:
                return False
            if not abs(fx - fy) <= float_tol * max(1.0, abs(fy)):  # NaN is never within a tolerance
                return False
    return True
