"""Run an untrusted program with hard limits and nothing to reach.

Two levels, chosen once per process by :func:`isolation` and named in every result:

``namespaces`` (running as root; the normal case in CI)
    The program runs in fresh PID, network, mount, IPC and UTS namespaces, under a root
    that :mod:`rlvr.verify.code.jail` builds for it: ``/usr`` read-only (the
    interpreters, compilers and their standard libraries), a few device files, a ``/proc``
    of its own PID namespace, and two size-capped tmpfs, its working directory ``/work``
    and ``/tmp``, the only writable places. Nothing else of the host exists there: no
    ``/root``, ``/home``, ``/etc``, ``/opt``, ``/var``, ``/run``, no checkout, no data set.
    There is no network interface but a downed loopback, so no socket reaches anything.
    The program is PID 1 of its namespace: when it exits (or is killed) the kernel kills
    every process it left behind.
``rlimits`` (no namespaces available)
    Resource limits, a private temporary directory, a scrubbed environment and,
    when running as root, a throwaway user id. The network, the host's files and
    world-writable directories and (for a non-root caller) the caller's own processes
    stay reachable; every verdict says so loudly in its reason.

Both levels apply the same :class:`Limits` (wall and CPU time, address space, file
size, processes, open files, output size) and, as root, run the program as a user id that
no other live run holds (claimed under a lock shared by every process on the machine), in
control groups of its own (:mod:`rlvr.verify.code.cgroups`: memory and processes of the whole
run together, at most one CPU). Every run ends whole: when its verdict is returned,
everything in its control groups and everything its user id still runs has been killed,
however it detached. Key-management calls are refused (:func:`rlvr.verify.code.jail.seal`),
so no kernel keyring carries anything from one run to the next. :func:`start` returns a :class:`Running` sandbox, so
that two can run at once joined by pipes (the code verifier's tests and the program
under test, each in its own sandbox); :func:`run` is start-and-finish.
"""

from __future__ import annotations

import fcntl
import os
import resource
import secrets
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from rlvr.verify.code import cgroups, jail

#: The sandbox's working directory, as the program sees it (namespaces; in place under rlimits).
_WORKDIR = "/work"
#: A user id range nobody uses: each live run holds one of its own, so limits and clean-up are per run.
_UID_BASE = 2_000_000
_UID_SPAN = 1_000_000
#: Where runs claim their user ids (one lock file per id, held while the run lives), shared by every
#: verifier process on the machine; a lock dies with the process that held it.
_UID_LOCKS = Path("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()) / "rlvr-sandbox-uids"
#: Host paths the namespace sandbox binds read-only besides ``/usr`` (see :func:`expose`).
_READ_ONLY: list[str] = []


def expose(path: str) -> None:
    """Make a host directory visible, read-only, inside every namespace sandbox (for an
    interpreter that does not live under ``/usr``). Nothing else of the host is."""
    real = os.path.realpath(path)
    if not real.startswith("/usr/") and real not in _READ_ONLY:
        _READ_ONLY.append(real)


@dataclass(frozen=True)
class Limits:
    """Hard limits for one run.

    Attributes:
        wall_s: wall-clock seconds before the whole sandbox is killed.
        cpu_s: CPU seconds (``RLIMIT_CPU``); defaults to ``wall_s`` rounded up.
        memory_mb: address space per process (``RLIMIT_AS``).
        file_mb: largest file the program may write (``RLIMIT_FSIZE``), and the size of its
            working directory under namespaces.
        processes: processes its user id may own at once (``RLIMIT_NPROC``).
        open_files: open file descriptors per process (``RLIMIT_NOFILE``).
        output_kb: stdout/stderr kept; a program that prints more is killed.
    """

    wall_s: float = 5.0
    cpu_s: float | None = None
    memory_mb: int = 1024
    file_mb: int = 16
    processes: int = 32
    open_files: int = 64
    output_kb: int = 1024


@dataclass
class RunResult:
    """What one sandboxed run did.

    Attributes:
        returncode: the exit status (negative: killed by that signal; ``None``: never started).
        stdout / stderr: what it printed, cut at the output limit.
        results: bytes written to the result channel (the ``{result_fd}`` pipe).
        timed_out: the wall-clock limit fired.
        output_exceeded: it printed more than the output limit and was killed.
        wall_s: seconds from start to exit.
        isolation: ``namespaces`` or ``rlimits``.
        error: why the sandbox itself could not run the program (not the program's fault).
        uid: the throwaway user id it ran as (``None`` when not root): what to look for when
            checking that nothing of this run is left.
        limits_held: ``per run`` when control groups held memory, processes and CPU for the run's
            processes together; ``per process`` when only resource limits did (no cgroups).
        memory_exceeded: the run's processes together ran past the memory limit and were killed.
    """

    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    results: bytes = b""
    timed_out: bool = False
    output_exceeded: bool = False
    wall_s: float = 0.0
    isolation: str = "rlimits"
    error: str = ""
    uid: int | None = None
    notes: list[str] = field(default_factory=list)
    limits_held: str = "per process"
    memory_exceeded: bool = False

    @property
    def ok(self) -> bool:
        """Exited normally with status 0."""
        return self.returncode == 0 and not self.timed_out and not self.output_exceeded and not self.error


@lru_cache(maxsize=1)
def isolation() -> str:
    """``namespaces`` when this process can build the namespace sandbox, else ``rlimits``.

    ``RLVR_SANDBOX=rlimits`` forces the weaker level (tests of the fallback).
    """
    if os.environ.get("RLVR_SANDBOX", "").lower() == "rlimits":
        return "rlimits"
    if os.geteuid() != 0 or not (os.path.isdir(jail.ROOT) and os.path.isdir("/usr")):
        return "rlimits"
    try:  # the real thing, on a program that only exits
        probe = run(["/bin/sh", "-c", "exit 7"], {}, limits=Limits(wall_s=10), level="namespaces")
    except OSError:
        return "rlimits"
    return "namespaces" if probe.returncode == 7 and not probe.error else "rlimits"


def isolation_warning(level: str) -> str:
    """The loud line a verdict carries when only resource limits guarded the run ("" otherwise)."""
    if level == "namespaces":
        return ""
    return (
        "SANDBOX WEAK: rlimits only (no namespaces: not root, or the kernel refused them); "
        "network and world-writable host directories were reachable"
    )


_IN_USE = b"in use"

#: A run's working folder on the host: ``rlvr-sbx-<verifier pid>-<random>`` under the temp folder,
#: so the folders of a verifier that was killed mid-run are known by their owner being gone.
FOLDER_PREFIX = "rlvr-sbx-"
#: Seconds between sweeps of what dead verifiers left (folders, control groups) while runs go on: a
#: trainer that verifies for days, its batch workers killed now and then, leaves nothing for long.
SWEEP_EVERY_S = 60.0
_SWEPT: list[float] = []


def sweep_folders(root: str | None = None) -> int:
    """Remove the working folders of verifier processes that are gone (killed mid-run: nothing of
    theirs removed them); returns how many. A folder of a live process is never touched."""
    root = root or tempfile.gettempdir()
    swept = 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    for name in names:
        owner = name[len(FOLDER_PREFIX) :].split("-")[0] if name.startswith(FOLDER_PREFIX) else ""
        if not owner.isdigit() or os.path.exists(f"/proc/{owner}"):
            continue
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        swept += not os.path.exists(os.path.join(root, name))
    return swept


def _sweep_when_due() -> None:
    """The folders and control groups of verifiers that are gone, at a process's first run and
    every :data:`SWEEP_EVERY_S` after."""
    now = time.monotonic()
    if _SWEPT and now - _SWEPT[0] < SWEEP_EVERY_S:
        return
    _SWEPT[:] = [now]
    sweep_folders()
    if (kind := cgroups.layout()) is not None:
        cgroups.sweep(kind)


def _claim_uid() -> tuple[int, int]:
    """A user id no live run holds, and the locked descriptor that holds it (see :func:`_release_uid`).

    Ids are drawn at random from a large range and claimed with a lock every verifier process on
    the machine respects. The lock file says ``in use`` from claim to a clean release, so an id whose
    earlier holder died mid-run is recognised: what it left running is killed before the id is used
    again (or another id is drawn). Only then is ``/proc`` read, not on every claim."""
    _UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    for _ in range(1000):
        uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        fd = os.open(_UID_LOCKS / str(uid), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        if os.pread(fd, len(_IN_USE), 0) == _IN_USE and live_processes(uid) and not _kill_uid(uid):
            os.close(fd)  # its holder died mid-run and what it left could not be cleared
            continue
        os.pwrite(fd, _IN_USE, 0)
        return uid, fd
    raise OSError("no free sandbox user id")


def _release_uid(fd: int, clean: bool) -> None:
    """Give the id back; ``clean`` when nothing of the run is left (else the next claim looks)."""
    if clean:
        os.ftruncate(fd, 0)
    os.close(fd)


def _set_limits(limits: Limits, uid: int | None) -> None:
    """In the child before exec: own session, limits, and (root) the throwaway user id."""
    cpu = int(limits.cpu_s if limits.cpu_s is not None else limits.wall_s + 0.999) or 1
    mb = 1024 * 1024
    for which, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (limits.memory_mb * mb,) * 2),
        (resource.RLIMIT_FSIZE, (limits.file_mb * mb,) * 2),
        (resource.RLIMIT_NOFILE, (limits.open_files,) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(which, value)
    if uid is not None:
        # NPROC counts the processes of the *real* user id: per run, since the id is per run
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)
    jail.die_with_parent()  # die with the verifier, whatever kills it


def _rlimits_child(limits: Limits, uid: int | None, group: cgroups.RunGroup | None) -> Callable[[], None]:
    def pre() -> None:
        if group is not None:
            group.join()
        _set_limits(limits, uid)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        jail.seal()

    return pre


def live_processes(uid: int | None = None) -> list[int]:
    """Pids of live processes running as ``uid``, or as any sandbox user id when ``None``.

    Zombies are dead and not listed: under the rlimits level killed orphans are reparented
    to the machine's init, and a container init that never reaps leaves their entries."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as f:
                fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        owner = int(fields.get("Uid", "-1").split()[0])
        if (owner == uid if uid is not None else owner >= _UID_BASE) and not fields.get("State", "").strip().startswith(
            "Z"
        ):
            out.append(int(entry.name))
    return out


def _kill_uid(uid: int) -> bool:
    """Kill every process running as ``uid`` and wait until none is alive (bounded); whether none is.

    A helper becomes ``uid`` and signals -1; a fork bomb can spawn during a sweep,
    so sweep until nothing of the user's lives.
    """
    end = time.monotonic() + 3
    while True:
        if shutil.which("setpriv") and shutil.which("kill"):  # no fork of a large parent process
            subprocess.run(
                ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "kill", "-9", "-1"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        else:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the forked child
                try:
                    os.setgid(uid)
                    os.setuid(uid)
                    os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
        if not live_processes(uid):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.005)


def _namespace_child(
    limits: Limits, uid: int, workdir: str, status_w: int, group: cgroups.RunGroup | None
) -> Callable[[], None]:
    """``preexec_fn`` of a namespace sandbox: join the run's control groups, enter the jail, then the
    limits (after the forks and the copy, so neither counts against the program), then exec. A
    failure is written to ``status_w``, close-on-exec: the program never holds it, so it can never
    fake one."""

    def pre() -> None:
        try:
            if group is not None:
                group.join()
            jail.die_with_parent()
            jail.enter(uid, workdir, limits.file_mb, _READ_ONLY)
            _set_limits(limits, uid)
        except BaseException as e:
            os.write(status_w, f"{type(e).__name__}: {e}".encode("utf-8", "replace"))
            raise

    return pre


class Running:
    """A sandbox that :func:`start` started; :meth:`finish` waits for it and returns its result.

    ``finish`` may run in another thread than ``start`` (the pump is plain I/O); :meth:`kill`
    ends the run from any thread (the other half of a pair that is no longer needed).
    """

    def __init__(
        self,
        limits: Limits,
        level: str,
        uid: int | None,
        host_dir: str,
        group: cgroups.RunGroup | None = None,
        lock: int = -1,
    ) -> None:
        self.limits, self.uid, self.host_dir, self.group, self.lock = limits, uid, host_dir, group, lock
        self.result = RunResult(
            returncode=None, isolation=level, uid=uid, limits_held="per run" if group is not None else "per process"
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self._fds: tuple[int, int] = (-1, -1)  # (results read end, sandbox status read end)
        self._stdin, self._start = b"", 0.0

    def kill(self) -> None:
        """Stop the run now (its result says it was killed, by signal)."""
        self._kill_all()
        if self.proc is not None:
            _killpg(self.proc)

    def _kill_all(self) -> bool:
        """Everything of the run: its control groups (no process of it can leave them), else whatever
        its user id still runs; whether nothing of it is left. ``kill`` may call it from another
        thread while ``finish`` releases the group: it reads the group once."""
        group = self.group
        if group is not None:
            group.kill()
            return not group.pids()
        if self.uid is not None and live_processes(self.uid):
            return _kill_uid(self.uid)
        return True

    def finish(self) -> RunResult:
        """Wait for the run (up to its wall-clock limit), collect what it wrote, clean up."""
        res, proc = self.result, self.proc
        try:
            if proc is not None:
                r_fd, status_fd = self._fds
                uid = self.uid
                _pump(
                    proc,
                    r_fd,
                    self._stdin,
                    self.limits,
                    res,
                    self._start,
                    self._kill_all if uid is not None or self.group is not None else None,
                )
                res.wall_s = time.monotonic() - self._start
                res.returncode = proc.returncode
                why = _read_status(status_fd)
                if why:
                    res.error = f"sandbox could not start the program: {why}"
            return res
        finally:
            if proc is not None:
                _reap(proc)
            # the run ends whole: a process that left PID 1's session, dropped its parent-death signal
            # or kept PID 1 itself alive is in the run's groups and runs as its user id
            clean = self._kill_all()
            if self.group is not None:
                res.memory_exceeded = self.group.oom_killed()
                self.group.release()
                self.group = None
            gone = _set_aside(self.host_dir)  # before the id is free: its next holder cannot enter
            if self.lock >= 0:  # the user id is free again
                _release_uid(self.lock, clean)
                self.lock = -1
            _remove_later(gone)


def _set_aside(folder: str) -> str:
    """Move a finished run's folder out of the way (one rename) and close it to everyone but root;
    what it holds, however much the program wrote, is removed by :func:`_remove_later`."""
    gone = f"{folder}-gone"
    try:
        os.rename(folder, gone)
        if os.geteuid() == 0:
            os.chown(gone, 0, 0)
        os.chmod(gone, 0o700)
        return gone
    except OSError:
        return folder


_REMOVING: list[threading.Thread] = []
_REMOVING_LOCK = threading.Lock()


def _remove_later(folder: str) -> None:
    """Remove a run's folder beside the verdict, not before it: a program that wrote many files
    within its limits costs the verifier no time the item is judged by (a verifier that dies first
    leaves it to :func:`sweep_folders`)."""
    worker = threading.Thread(target=shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, daemon=True)
    with _REMOVING_LOCK:
        _REMOVING[:] = [t for t in _REMOVING if t.is_alive()] + [worker]
    worker.start()


def settle(timeout: float = 30.0) -> bool:
    """Wait for the finished runs' folders to be removed (at most ``timeout`` seconds); True when
    they all are. A verifier that exits does not wait: what is left goes to the sweep."""
    end = time.monotonic() + timeout
    with _REMOVING_LOCK:
        pending = list(_REMOVING)
    for t in pending:
        t.join(max(0.0, end - time.monotonic()))
    return not any(t.is_alive() for t in pending)


def _read_status(fd: int) -> str:
    """What the sandbox's set-up wrote on its status pipe ('' when it reached the program: the pipe
    is close-on-exec, so the program can neither write nor hold it)."""
    try:
        os.set_blocking(fd, False)
        return os.read(fd, 4096).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)


def start(
    argv: Sequence[str],
    files: Mapping[str, str | bytes],
    *,
    stdin: bytes | str = b"",
    limits: Limits = Limits(),
    level: str | None = None,
    channels: Mapping[str, int] | None = None,
) -> Running:
    """Start ``argv`` in a fresh sandbox whose working directory holds ``files``.

    ``argv`` is resolved inside the sandbox (interpreters under ``/usr``, or :func:`expose`
    theirs). The program may write result lines to the ``{result_fd}`` pipe; they come back in
    :attr:`RunResult.results`. ``channels`` names more descriptors to hand it (``{name}`` in
    ``argv`` becomes the number); the caller keeps and closes its own copies. Never raises for
    anything the program does.
    """
    level = level or isolation()
    uid, lock = _claim_uid() if os.geteuid() == 0 else (None, -1)
    group = None
    if uid is not None and cgroups.layout() is not None:
        try:
            group = cgroups.take(memory_mb=limits.memory_mb, processes=limits.processes)
        except OSError:
            group = None  # the run still has its resource limits; its result says they were per process
    _sweep_when_due()
    host_dir = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
    running = Running(limits, level, uid, host_dir, group, lock)
    try:
        for name, content in files.items():
            path = Path(host_dir, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode() if isinstance(content, str) else content)
        if uid is not None and level == "rlimits":  # namespaces: the init copies the files in as root
            os.chmod(host_dir, 0o700)
            for dirpath, _dirs, names in os.walk(host_dir):
                os.chown(dirpath, uid, uid)
                for n in names:
                    os.chown(os.path.join(dirpath, n), uid, uid)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "TMPDIR": "/tmp",
            "HOME": _WORKDIR if level == "namespaces" else host_dir,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
        }
        r_fd, w_fd = os.pipe()
        s_r, s_w = os.pipe()
        if level == "namespaces":
            assert uid is not None  # namespaces require root
            cmd, pre, cwd = list(argv), _namespace_child(limits, uid, host_dir, s_w, group), "/"
        else:
            cmd, pre, cwd = list(argv), _rlimits_child(limits, uid, group), host_dir
        named = {"result_fd": w_fd, **(channels or {})}
        for key, fd in named.items():
            cmd = [a.replace("{" + key + "}", str(fd)) for a in cmd]
        passed = tuple(named.values())
        running._stdin, running._start = stdin.encode() if isinstance(stdin, str) else stdin, time.monotonic()
        try:
            running.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                preexec_fn=pre,
                pass_fds=passed,
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as e:
            os.close(w_fd)
            os.close(s_w)
            why = _read_status(s_r)
            os.close(r_fd)
            running.result.error = f"sandbox could not start: {why or e}"
        else:
            os.close(w_fd)
            os.close(s_w)
            running._fds = (r_fd, s_r)
        return running
    except BaseException:
        running.finish()  # nothing started, or it is ended: groups, the user id and the folder released
        raise


def run(
    argv: Sequence[str],
    files: Mapping[str, str | bytes],
    *,
    stdin: bytes | str = b"",
    limits: Limits = Limits(),
    level: str | None = None,
) -> RunResult:
    """Run ``argv`` in a fresh sandbox whose working directory holds ``files`` (see :func:`start`)."""
    return start(argv, files, stdin=stdin, limits=limits, level=level).finish()


def _pump(
    proc: subprocess.Popen[bytes],
    r_fd: int,
    data: bytes,
    limits: Limits,
    res: RunResult,
    start: float,
    kill_user: Callable[[], object] | None,
) -> None:
    """Feed stdin, collect stdout/stderr/results up to the caps, enforce the wall clock.

    To stop a run, the sandbox user's processes are killed first: under namespaces
    that kills its PID 1, whose exit makes the kernel kill and reap everything else
    in the namespace before the process we started returns, so nothing is left when we do.
    """
    cap = limits.output_kb * 1024
    bufs: dict[int, bytearray] = {1: bytearray(), 2: bytearray(), 3: bytearray()}
    sel = selectors.DefaultSelector()
    assert proc.stdin and proc.stdout and proc.stderr
    for f in (proc.stdout, proc.stderr):
        os.set_blocking(f.fileno(), False)
    os.set_blocking(r_fd, False)
    sel.register(proc.stdout.fileno(), selectors.EVENT_READ, 1)
    sel.register(proc.stderr.fileno(), selectors.EVENT_READ, 2)
    sel.register(r_fd, selectors.EVENT_READ, 3)
    view = memoryview(data)
    if data:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, 0)
    else:
        proc.stdin.close()
    open_reads = 3
    deadline = start + limits.wall_s
    while open_reads:
        left = deadline - time.monotonic()
        if left <= 0:
            res.timed_out = True
            break
        exited = proc.poll() is not None  # then read what is buffered and stop: a daemon it left
        events = sel.select(timeout=0 if exited else min(left, 0.1))  # may hold the pipes open
        if exited and not events:
            break
        for key, _ in events:
            tag = key.data
            if tag == 0:
                try:
                    n = os.write(key.fd, view[:65536])
                except (BrokenPipeError, OSError):
                    n = len(view)
                view = view[n:]
                if not len(view):
                    sel.unregister(key.fd)
                    proc.stdin.close()
                continue
            try:
                chunk = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(key.fd)
                open_reads -= 1
                continue
            buf = bufs[tag]
            room = cap - len(buf)
            buf += chunk[: max(room, 0)]
            if len(chunk) > room:
                res.output_exceeded = True
                open_reads = 0
                break
    sel.close()
    os.close(r_fd)
    if res.timed_out or res.output_exceeded:
        if kill_user is not None:
            kill_user()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        _killpg(proc)
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        res.timed_out = True
        _killpg(proc)
        proc.wait()
    res.stdout = bufs[1].decode("utf-8", "replace")
    res.stderr = bufs[2].decode("utf-8", "replace")
    res.results = bytes(bufs[3])


def _killpg(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        try:
            proc.kill()
        except OSError:
            pass


def _reap(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        _killpg(proc)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    for f in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if f:
                f.close()
        except OSError:
            pass
