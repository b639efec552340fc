"""Hostile generated code: each case comes back as a verdict in time, leaves nothing, reaches nothing.

The hostile-code table of docs/guides/code.md is this file's results.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from rlvr.types import Status
from rlvr.verify.code import sandbox
from rlvr.verify.code.verifier import verify_code

LIMIT = 3.0
IO = {"cases": [{"input": "", "output": "ok"}]}
NS = pytest.mark.skipif(sandbox.isolation() != "namespaces", reason="needs the namespace sandbox (root + unshare)")


def sandbox_dirs() -> list[str]:
    import tempfile

    return [p for p in os.listdir(tempfile.gettempdir()) if p.startswith("rlvr-sbx-")]


@pytest.fixture
def own_tmp(monkeypatch):
    """A temp folder of this test's own for the sandboxes' working directories (traversable by the
    sandbox users), so what is left there is this test's: another verifier may run beside it."""
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="rlvr-hostile-")
    os.chmod(d, 0o711)
    monkeypatch.setattr(tempfile, "tempdir", d)
    yield d
    monkeypatch.undo()
    shutil.rmtree(d, ignore_errors=True)


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def left_running(*verdicts: object) -> list[int]:
    """Processes still alive under the sandbox user ids these verdicts ran as (only this test's own
    sandboxes: another verifier may run beside the suite)."""
    return [
        pid
        for v in verdicts
        for uid in v.details.get("sandbox_uids", [])  # type: ignore[attr-defined]
        for pid in sandbox.live_processes(uid)
    ]


HOSTILE = {
    "loops forever": "while True:\n    pass",
    "forks until the limit": ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"),
    "allocates 10 GB": "x = bytearray(10 * 1024**3)\nprint('ok')",
    "writes 1 GB to disk": (
        "with open('big.bin', 'wb') as f:\n    for _ in range(1024):\n        f.write(b'0' * (1 << 20))\nprint('ok')"
    ),
    "prints 100 MB": "import sys\nsys.stdout.write('x' * 100_000_000)",
    "closes stdout": "import os\nos.close(1)\nprint('ok')",
    "kills its parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)",
    "spawns a daemon that outlives it": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(30)\n        open('/tmp/daemon-was-here', 'w').write('x')\n    os._exit(0)\nprint('ok')"
    ),
}


ROOT = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="without root the sandbox cannot run code as another user: "
    "hostile code could signal the test process itself",
)


@ROOT
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_code_gets_a_verdict_in_time_and_leaves_nothing(name: str, own_tmp: str) -> None:
    before = set(sandbox_dirs())
    t0 = time.monotonic()
    v = verify_code(fenced(HOSTILE[name]), IO, timeout=LIMIT)
    elapsed = time.monotonic() - t0
    assert elapsed < LIMIT + 2, f"{name}: took {elapsed:.1f}s"
    if name == "spawns a daemon that outlives it":
        assert v.status is Status.CORRECT  # it printed ok; what matters is that the daemon is gone
    else:
        assert v.status is Status.WRONG, (name, v.reason)
    assert v.details.get("sandbox_uids") or v.status is Status.NO_ANSWER
    assert left_running(v) == [], f"{name}: sandbox processes survived"
    assert sandbox.settle(), f"{name}: its working directory is still being removed after 30 s"
    assert set(sandbox_dirs()) <= before, f"{name}: a working directory was left behind"
    # the verifier still takes the next job
    assert verify_code(fenced("print('ok')"), IO, timeout=LIMIT).status is Status.CORRECT


@ROOT
def test_timeouts_and_limits_say_why() -> None:
    assert "timed out" in verify_code(fenced(HOSTILE["loops forever"]), IO, timeout=1).reason
    assert "output limit" in verify_code(fenced(HOSTILE["prints 100 MB"]), IO, timeout=LIMIT).reason
    assert (
        "MemoryError"
        in verify_code(
            fenced("def f():\n    return bytearray(10 * 1024**3)"),
            {"entry_point": "f", "cases": [{"args": [], "result": 0}]},
        ).reason
    )


@NS
def test_writes_outside_its_directory_do_not_land(tmp_path: Path) -> None:
    targets = [tmp_path / "escaped.txt", Path.cwd() / "escaped-from-sandbox.txt", Path("/tmp/escaped-from-sandbox.txt")]
    code = (
        "\n".join(f"try:\n    open({str(t)!r}, 'w').write('x')\nexcept OSError:\n    pass" for t in targets)
        + "\nprint('ok')"
    )
    v = verify_code(fenced(code), IO, timeout=LIMIT)
    assert v.status is Status.CORRECT
    assert not any(t.exists() for t in targets)


@NS
def test_host_environment_and_home_are_invisible(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RLVR_TEST_SECRET", "hunter2")
    home_file = Path.home() / ".rlvr-sandbox-secret"
    home_file.write_text("hunter3")
    try:
        run = sandbox.run(
            ["/usr/bin/python3", "-I", "a.py"],
            {
                "a.py": "import os, glob\nprint(dict(os.environ))\n"
                "for p in ['/root', '/home', os.path.expanduser('~'), '/tmp']:\n"
                "    try: print(p, os.listdir(p))\n    except OSError as e: print(p, e)\n"
                f"try: print(open({str(home_file)!r}).read())\nexcept OSError as e: print(e)\n"
            },
            limits=sandbox.Limits(wall_s=LIMIT),
        )
    finally:
        home_file.unlink()
    assert run.returncode == 0, run.stderr
    assert "hunter2" not in run.stdout and "hunter3" not in run.stdout
    assert "RLVR_TEST_SECRET" not in run.stdout
    assert "/root [Errno 2]" in run.stdout and "/home [Errno 2]" in run.stdout  # not there at all


@NS
def test_no_socket_reaches_a_loopback_server() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    got: list[object] = []

    def accept() -> None:
        deadline = time.monotonic() + LIMIT + 1
        while time.monotonic() < deadline:
            try:
                got.append(server.accept())
            except OSError:
                continue

    t = threading.Thread(target=accept)
    t.start()
    code = (
        f"import socket\ns = socket.socket()\ns.settimeout(1)\ntry:\n    s.connect(('127.0.0.1', {port}))\n"
        "    print('connected')\nexcept OSError as e:\n    print('ok')"
    )
    v = verify_code(fenced(code), IO, timeout=LIMIT)
    t.join()
    server.close()
    assert v.status is Status.CORRECT  # it printed ok: the connection failed
    assert got == []


def test_rlimits_level_is_named_loudly_and_still_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("the throwaway user id (and its clean-up) needs root")
    monkeypatch.setattr(sandbox, "isolation", lambda: "rlimits")
    v = verify_code(fenced(HOSTILE["spawns a daemon that outlives it"]), IO, timeout=LIMIT)
    assert v.status is Status.CORRECT and "SANDBOX WEAK" in v.reason
    assert v.details["isolation"] == "rlimits"
    assert left_running(v) == []
    v = verify_code(fenced(HOSTILE["forks until the limit"]), IO, timeout=2)
    assert v.status is Status.WRONG and left_running(v) == []


@ROOT
def test_a_batch_of_hostile_code_finishes_and_leaves_nothing() -> None:
    from rlvr.verify import verify_code_batch

    names = list(HOSTILE)
    vs = verify_code_batch(
        [fenced(HOSTILE[n]) for n in names] + [fenced("print('ok')")], [IO] * (len(names) + 1), jobs=2, timeout=LIMIT
    )
    assert [v.status for v in vs][-1] is Status.CORRECT
    assert all(v.status in (Status.WRONG, Status.CORRECT) for v in vs)
    assert all(v.details["sandbox_uids"] for v in vs)
    assert left_running(*vs) == []


SANDBOX_ROOT = {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr", "work"}


@NS
def test_the_hosts_files_are_not_there(tmp_path: Path) -> None:
    """The answer key a policy would look for: planted outside the sandbox, in the places a run
    keeps its data (its temporary directory, the checkout, /opt, /var, /run), never readable."""
    secret = "rlvr-answer-key-" + os.urandom(6).hex()
    planted = [tmp_path / "answers.jsonl", Path.cwd() / ".rlvr-planted-answers", Path("/opt/rlvr-planted-answers")]
    for p in planted:
        p.write_text(secret)
    code = "\n".join(
        [
            "import os",
            "print('root', sorted(os.listdir('/')))",
            *[
                f"try:\n    print(open({str(p)!r}).read())\nexcept OSError as e:\n    print('no', e.errno)"
                for p in planted
            ],
            "for d, dirs, names in os.walk('/'):",  # all but /usr (the host's, read-only) and /proc
            "    if d == '/':",
            "        dirs[:] = [x for x in dirs if x not in ('usr', 'proc')]",
            "    for n in names:",
            "        try:",
            f"            if {secret[::-1]!r}[::-1] in open(os.path.join(d, n), errors='ignore').read(1 << 16):",
            "                print('FOUND', os.path.join(d, n))",
            "        except (OSError, ValueError):",
            "            pass",
        ]
    )
    try:
        run = sandbox.run(["/usr/bin/python3", "-I", "a.py"], {"a.py": code}, limits=sandbox.Limits(wall_s=LIMIT))
    finally:
        for p in planted:
            p.unlink()
    assert run.returncode == 0, run.stderr
    assert secret not in run.stdout and "FOUND" not in run.stdout
    assert run.stdout.count("no 2") == len(planted)
    listed = eval(run.stdout.splitlines()[0].removeprefix("root "))
    assert set(listed) <= SANDBOX_ROOT and {"usr", "work", "tmp"} <= set(listed), listed


@NS
def test_nothing_outside_its_directory_is_writable(tmp_path: Path) -> None:
    name = "rlvr-escaped-" + os.urandom(6).hex()
    hosts = [Path(d, name) for d in ("/run/lock", "/var/tmp", "/dev/shm", "/tmp", str(tmp_path), str(Path.cwd()))]
    inside = ["/", "/usr", "/usr/local", "/etc", "/dev", "/proc", "/run/lock", "/var/tmp", "/dev/shm"]
    code = "\n".join(
        [
            "import os",
            *[
                f"try:\n    open({os.path.join(d, name)!r}, 'w').write('x')\n    print('WROTE', {d!r})\n"
                f"except OSError:\n    pass"
                for d in inside
            ],
            f"open('/work/{name}', 'w').write('x')\nopen('/tmp/{name}', 'w').write('x')\nprint('ok')",
        ]
    )
    run = sandbox.run(["/usr/bin/python3", "-I", "a.py"], {"a.py": code}, limits=sandbox.Limits(wall_s=LIMIT))
    assert run.returncode == 0, run.stderr
    assert "WROTE" not in run.stdout and run.stdout.strip().endswith("ok"), run.stdout
    assert not [p for p in hosts if p.exists()]


@NS
def test_the_program_cannot_fake_a_sandbox_failure() -> None:
    """A failure of the sandbox itself is an `error` verdict (not scored, not the program's -1): only
    the sandbox's first process can say so, on a pipe the program never holds."""
    code = (
        "import os, sys\nsys.stderr.write('rlvr sandbox init failed: x')\nfor fd in range(3, 64):\n"
        "    try:\n        os.write(fd, b'OSError: mount failed')\n    except OSError:\n        pass\nos._exit(125)"
    )
    run = sandbox.run(["/usr/bin/python3", "-I", "a.py"], {"a.py": code}, limits=sandbox.Limits(wall_s=LIMIT))
    assert run.returncode == 125 and run.error == ""
    v = verify_code(fenced(code), IO, timeout=LIMIT)
    assert v.status is Status.WRONG, v.reason
