"""Every run ends whole, holds a user id of its own, leaves no kernel state, and its limits hold for
all of its processes together, so one run cannot change another's verdict.

Each phenomenon with instances of its own (not the held-back round's): the tests stay safe beside
other work (their own user ids and control groups, checked by what they started).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from rlvr.types import Status
from rlvr.verify.code import cgroups, sandbox
from rlvr.verify.code.verifier import verify_code

ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="user ids and control groups per run need root")
GROUPS = pytest.mark.skipif(cgroups.layout() is None, reason="no control groups on this machine")
PY = "/usr/bin/python3"
IO = {"cases": [{"input": "", "output": "ok"}]}


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def left(*results: sandbox.RunResult) -> list[int]:
    return [pid for r in results if r.uid is not None for pid in sandbox.live_processes(r.uid)]


# A first process that leaves everything behind: no parent-death signal, a session of its own, no
# descriptors (so its pipes close as if it had ended), then it waits, alive.
DETACH = (
    "import ctypes, os, time\n"
    "ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\n"  # PR_SET_PDEATHSIG 0
    "print('ok', flush=True)\n"
    "os.setsid()\n"
    "os.closerange(0, 1024)\n"
    "time.sleep(60)\n"
)


@ROOT
@pytest.mark.parametrize("where", ["first process", "a child that double-forks"])
def test_a_process_that_detaches_is_gone_when_the_verdict_returns(where: str) -> None:
    code = (
        DETACH
        if where == "first process"
        else (
            "import os\nif os.fork() == 0:\n    if os.fork() == 0:\n"
            + "".join("        " + ln + "\n" for ln in DETACH.splitlines())
            + "    os._exit(0)\nos.wait()\nprint('ok')\n"
        )
    )
    t0 = time.monotonic()
    run = sandbox.run([PY, "-I", "-c", code], {}, limits=sandbox.Limits(wall_s=3))
    assert time.monotonic() - t0 < 6
    assert left(run) == [], f"{where}: outlived its run"


@ROOT
def test_a_detached_python_tool_program_is_gone_after_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvr.episodes.tools import PythonTool

    runs: list[sandbox.RunResult] = []
    real = sandbox.run
    monkeypatch.setattr(sandbox, "run", lambda *a, **k: runs.append(real(*a, **k)) or runs[-1])
    out = PythonTool().python(DETACH)
    assert "ran past" in out  # its first process is still alive at the limit: the program had not ended
    assert runs and left(*runs) == []  # and nothing of it is left when the call returns


@ROOT
def test_runs_at_the_same_time_never_share_a_user_id_and_a_held_id_is_not_drawn() -> None:
    held: list[int] = []
    locks: list[int] = []
    lock = threading.Lock()

    def claim() -> None:
        uid, fd = sandbox._claim_uid()
        with lock:
            held.append(uid)
            locks.append(fd)

    threads = [threading.Thread(target=claim) for _ in range(64)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    try:
        assert len(set(held)) == len(held) == 64
        runs = [sandbox.start([PY, "-c", "import time; time.sleep(0.5)"], {}) for _ in range(4)]
        assert len({r.uid for r in runs} | set(held)) == 68  # no live run's id was drawn again
        for r in runs:
            r.finish()
    finally:
        for fd in locks:
            os.close(fd)


@ROOT
def test_an_orphan_left_under_a_user_id_is_killed_before_the_id_is_used_again(tmp_path) -> None:
    """A verifier that died without cleaning up (simulated: a process left under a claimed id whose
    lock was then released): the next claim of that id kills the leftover, or draws another id."""
    uid, fd = sandbox._claim_uid()
    os.close(fd)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the leftover
        os.setgid(uid)
        os.setuid(uid)
        time.sleep(30)
        os._exit(0)
    try:
        deadline = time.monotonic() + 5
        while not sandbox.live_processes(uid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sandbox.live_processes(uid)
        original = sandbox.secrets.randbelow
        sandbox.secrets.randbelow = lambda n: uid - sandbox._UID_BASE  # type: ignore[assignment]
        try:
            again, fd2 = sandbox._claim_uid()
        finally:
            sandbox.secrets.randbelow = original  # type: ignore[assignment]
        assert again == uid and sandbox.live_processes(uid) == []
        os.close(fd2)
    finally:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        os.waitpid(pid, 0)


def test_an_id_released_clean_is_claimed_again_without_reading_proc(monkeypatch) -> None:
    """The lock file says ``in use`` until a clean release: only an id whose holder died mid-run
    costs a scan of ``/proc`` when it is claimed again."""
    uid, fd = sandbox._claim_uid()
    sandbox._release_uid(fd, clean=True)
    scans: list[int | None] = []
    real = sandbox.live_processes
    monkeypatch.setattr(sandbox, "live_processes", lambda u=None: scans.append(u) or real(u))
    monkeypatch.setattr(sandbox.secrets, "randbelow", lambda n: uid - sandbox._UID_BASE)
    again, fd = sandbox._claim_uid()
    assert again == uid and scans == []
    sandbox._release_uid(fd, clean=False)  # something may be left: the next claim looks
    again, fd = sandbox._claim_uid()
    assert again == uid and scans == [uid]
    sandbox._release_uid(fd, clean=True)


@ROOT
@GROUPS
def test_workers_forked_from_one_parent_never_share_its_pooled_group() -> None:
    """The parent ran a program (its group went back to its pool), then forked two workers: one
    runs a long program, the other a short one. Sharing the parent's group, the short run's end
    would kill the long one."""
    assert sandbox.run([PY, "-c", "pass"], {}).returncode == 0
    assert cgroups._POOL  # the parent's group, free for its next run
    outcomes = []
    for code in ("import time; time.sleep(1.5); print('whole')", "print('short')"):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the worker
            os.close(r)
            res = sandbox.run([PY, "-c", code], {})
            os.write(w, f"{res.returncode} {res.stdout.strip()}".encode())
            os._exit(0)
        os.close(w)
        outcomes.append((pid, r))
    got = []
    for pid, r in outcomes:
        os.waitpid(pid, 0)
        got.append(os.read(r, 100).decode())
        os.close(r)
    assert got == ["0 whole", "0 short"]


@ROOT
def test_a_kernel_keyring_carries_nothing_from_one_run_to_the_next() -> None:
    add = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.syscall(248, b'user', b'note', b'secret', 6, -4)\n"  # add_key(..., KEY_SPEC_USER_KEYRING)
        "print(r, ctypes.get_errno())\n"
    )
    run = sandbox.run([PY, "-I", "-c", add], {})
    assert run.stdout.split() == ["-1", "1"]  # refused: EPERM
    read = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.syscall(249, b'user', b'note', None, 0)\n"  # request_key
        "print(r, ctypes.get_errno())\n"
    )
    assert sandbox.run([PY, "-I", "-c", read], {}).stdout.split() == ["-1", "1"]


# keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0) through the i386 ABI (int 0x80, call 288),
# from x86-64 machine code in an executable page; prints the call's return value
I386_KEYCTL = (
    "import ctypes, mmap\n"
    "code = bytes.fromhex('53b820010000bb00000000b9fcffffff31d2cd805b4863c0c3')\n"
    "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
    "m.write(code)\n"
    "print(ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))())\n"
)


@ROOT
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the i386 ABI is x86-64's")
def test_the_key_calls_are_refused_through_every_abi() -> None:
    """The filter names the native call numbers; through ``int 0x80`` the same call has another
    number. Every non-native call is refused (EPERM: -1), so a run reaches no keyring that way."""
    host = subprocess.run([PY, "-I", "-c", I386_KEYCTL], capture_output=True, text=True, timeout=30)
    if host.returncode != 0 or host.stdout.strip() == "-38":
        pytest.skip("this kernel runs no i386 calls (no IA32 emulation)")
    run = sandbox.run([PY, "-I", "-c", I386_KEYCTL], {})
    assert run.stdout.split() == ["-1"], (run.stdout, run.stderr[-300:])


@ROOT
@GROUPS
@pytest.mark.parametrize(
    "how",
    [
        "children that each hold a share",
        "an unmapped memfd",
        "a tmpfs file of /tmp",
    ],
)
def test_memory_is_capped_for_all_of_a_runs_processes_together(how: str) -> None:
    code = {
        "children that each hold a share": (
            "import os, time\nfor _ in range(4):\n    if os.fork() == 0:\n        b = bytearray(90 << 20)\n"
            "        b[::4096] = b'x' * len(b[::4096])\n        time.sleep(3)\n        os._exit(0)\n"
            "ok = sum(os.waitstatus_to_exitcode(os.wait()[1]) == 0 for _ in range(4))\n"
            "print('all held' if ok == 4 else f'{ok} held')\n"
        ),
        "an unmapped memfd": (
            "import os\nfd = os.memfd_create('m')\nfor _ in range(300):\n    os.write(fd, b'x' * (1 << 20))\n"
            "print('held')\n"
        ),
        "a tmpfs file of /tmp": (
            "f = open('/tmp/big', 'wb')\nfor _ in range(300):\n    f.write(b'x' * (1 << 20))\n"
            "f.flush()\nprint('held')\n"
        ),
    }[how]
    limits = sandbox.Limits(wall_s=8, memory_mb=200, file_mb=400, processes=16)
    run = sandbox.run([PY, "-I", "-c", code], {}, limits=limits)
    assert run.limits_held == "per run"
    assert "all held" not in run.stdout and run.stdout.strip() != "held", f"{how}: held more than the run's limit"
    assert run.memory_exceeded
    assert left(run) == []


@ROOT
@GROUPS
def test_a_swarm_of_spinners_cannot_starve_a_right_answer_beside_it() -> None:
    """A run that starts spinners in sessions of their own gets at most one CPU: a right answer run
    at the same time (about half a second of work alone) still finishes inside its limit."""
    spin = (
        "import os\nfor _ in range(12):\n    if os.fork() == 0:\n        os.setsid()\n        while True:\n"
        "            pass\nimport time\ntime.sleep(20)\n"
    )
    hog = sandbox.start([PY, "-I", "-c", spin], {}, limits=sandbox.Limits(wall_s=12, processes=32))
    try:
        time.sleep(1.0)  # the spinners are up
        work = "s = 0\nfor i in range(6_000_000):\n    s += i\nprint('ok')"
        v = verify_code(fenced(work), IO, timeout=8)
        assert v.status is Status.CORRECT, v.reason
    finally:
        hog.kill()
        res = hog.finish()
    assert left(res) == []


@ROOT
def test_what_holds_the_limits_is_said() -> None:
    run = sandbox.run([PY, "-c", "print(1)"], {})
    assert run.limits_held == ("per run" if cgroups.layout() is not None else "per process")


# ---------------------------------------------------------------------------------------- verdicts


@ROOT
@pytest.mark.parametrize(
    "tests",
    [
        "def check(candidate):\n    for x, y in zip([1, 2, 3], map(candidate, [1, 2, 3])):\n"
        "        assert y == 2 * x\n",
        "def check(candidate):\n    it = (candidate(x) for x in [1, 2])\n    assert next(it, 2) == 2\n"
        "    assert next(it, 4) == 4\n",
        "def check(candidate):\n    for y in iter(lambda: candidate(1), None):\n        assert y == 2\n        break\n",
    ],
    ids=["map in a for loop", "next with a default", "iter with a sentinel"],
)
def test_no_exception_of_the_program_changes_how_the_tests_run(tests: str) -> None:
    """The program raises what a loop takes for "no more items": the loop must not end quietly with
    its asserts unreached (they would count as passed), the right answer still passes."""
    spec = {"entry_point": "f", "tests": tests}
    forged = verify_code(fenced("def f(x):\n    raise StopIteration('done')"), spec)
    assert forged.status is Status.WRONG, forged.reason
    assert verify_code(fenced("def f(x):\n    return 2 * x"), spec).status is Status.CORRECT


@ROOT
@pytest.mark.parametrize("printed", ["nan", "-nan", "NaN", "inf"])
def test_non_finite_numbers_never_equal_under_a_tolerance(printed: str) -> None:
    spec = {"cases": [{"input": "", "output": "0.25\n"}], "float_tol": 1e-3}
    assert verify_code(fenced(f"print('{printed}')"), spec).status is Status.WRONG
    assert verify_code(fenced("print(0.2501)"), spec).status is Status.CORRECT


def test_text_that_cannot_be_encoded_is_the_policys_not_the_sandboxs() -> None:
    v = verify_code(fenced("s = 'a\udc80b'\nprint(s)"), IO)
    assert v.status is Status.NO_ANSWER and "UTF-8" in v.reason  # the policy's (-0.2), never `error`
    from rlvr.diagnostics.causes import Cause
    from rlvr.episodes import Guard, PythonTool

    guard = Guard({"python": PythonTool().python}, key="k", timeout_s=10, max_result_chars=2000)
    out = guard.invoke("python", {"code": "print('\ud83d')"}, 0)
    assert out.event is not None and out.event.cause is Cause.BAD_ARGUMENTS  # a policy fault, not tool_error


@ROOT
def test_the_policys_endless_program_is_its_own_whatever_the_guards_limit() -> None:
    """The python tool stops the policy's loop at its own limit (2 s) and says so in the result;
    the guard's limit (0.5 s, shorter) counts only the environment's time, so the loop, its
    sandbox's set-up and its teardown are never the environment's ``env_timeout``."""
    from rlvr.episodes import Guard, PythonTool

    tool = PythonTool()
    tool.timeout_s = 2.0
    guard = Guard({"python": tool.python}, key="k", timeout_s=0.5)
    out = guard.invoke("python", {"code": "while True:\n    pass"}, 0)
    assert out.event is None, out.event  # the policy's result: the episode goes on
    assert "ran past 2s" in out.result
    assert guard.invoke("python", {"code": "print(6 * 7)"}, 1).result == "42"


@ROOT
@GROUPS
def test_the_runs_of_a_verifier_that_died_are_swept() -> None:
    """A verifier killed mid-run cannot end its runs: the next one to start sweeps the groups whose
    owner is gone, killing what they hold, however it detached."""
    import subprocess
    import sys

    code = (
        "import time\nfrom rlvr.verify.code import sandbox\n"
        "r = sandbox.start(['/usr/bin/python3', '-c', 'import ctypes, os, time\\n"
        "ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\\nos.setsid()\\ntime.sleep(60)'], {},"
        " limits=sandbox.Limits(wall_s=60))\nprint(r.uid, flush=True)\ntime.sleep(60)\n"
    )
    verifier = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    uid = int(verifier.stdout.readline())  # type: ignore[union-attr]
    time.sleep(0.3)
    assert sandbox.live_processes(uid)
    verifier.kill()  # no clean-up of its own
    verifier.wait()
    assert cgroups.sweep(cgroups.layout() or "v1") >= 1
    deadline = time.monotonic() + 3
    while sandbox.live_processes(uid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sandbox.live_processes(uid) == []
    # its run's working folder, named by the dead verifier's pid, goes too
    import tempfile

    mine = [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(f"rlvr-sbx-{verifier.pid}-")]
    assert mine, "the killed verifier's folder is not there to sweep"
    sandbox.sweep_folders()
    assert not [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(f"rlvr-sbx-{verifier.pid}-")]


def _groups_of(pids: set[int]) -> list[str]:
    kind = cgroups.layout() or "v1"
    roots = (
        [cgroups.FS / cgroups.PARENT]
        if kind == "v2"
        else [cgroups.FS / c / cgroups.PARENT for c in cgroups.CONTROLLERS]
    )
    return [
        d.name for r in roots if r.is_dir() for d in r.iterdir() if d.name.split("-")[0][1:] in {str(p) for p in pids}
    ]


@ROOT
@GROUPS
def test_batch_workers_leave_no_groups_when_they_end() -> None:
    """Each worker pools the groups of its runs; a worker that ends (a clean finish, through
    multiprocessing's os._exit, where no atexit runs) removes them."""
    from rlvr.verify.batch import run_batch

    pids = run_batch(_runs_one, [0, 1, 2, 3], jobs=2, timeout=30, on_timeout=lambda i: -1, on_crash=lambda i, why: -1)
    workers = {p for p in pids if p != os.getpid()}
    assert len(workers) >= 1
    assert _groups_of(workers) == []


def _runs_one(item: int) -> int:
    assert sandbox.run([PY, "-c", "print(1)"], {}).returncode == 0
    return os.getpid()
