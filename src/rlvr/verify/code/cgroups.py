"""Per-run control groups: a sandbox run's processes held together, whatever they do.

RLIMIT_AS caps each process and RLIMIT_NPROC a user id's process count, so a run that forks and
maps shared memory (memfds, tmpfs) can hold its limit many times over, and a swarm of spinners in
sessions of their own can starve a right answer running beside it. A control group per run
caps what all of a run's processes hold together and is how they are all found and killed at the
end, however they detached (``setsid``, a dropped parent-death signal, closed descriptors):

* ``memory``: the run's resident memory, tmpfs and memfd pages included, at ``Limits.memory_mb``
  (the kernel's OOM killer ends the run inside its group, nothing outside it);
* ``pids``: at most ``Limits.processes`` processes and threads;
* ``cpu``: at most one CPU's time, and an equal share with every other run when CPUs are scarce.

cgroup v2 where its controllers are enabled, else the v1 hierarchies (``/sys/fs/cgroup/memory``
...); neither without root or a writable cgroup filesystem: :func:`layout` says which, and the
verdict says when the limits are only per process.

A process keeps a small pool of its groups (:func:`take`, :meth:`RunGroup.release`): the first process
to join a fresh memory group costs the kernel ~17 ms, a group joined before costs well under one. A
group serves one run at a time and is emptied before it serves the next; its counters are read as
differences, so nothing of one run reaches another's result.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
from functools import lru_cache
from multiprocessing import util
from pathlib import Path
from typing import Literal

FS = Path("/sys/fs/cgroup")
PARENT = "rlvr-sandbox"
CONTROLLERS = ("memory", "pids", "cpu")
_PERIOD_US = 100_000


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@lru_cache(maxsize=1)
def layout() -> Literal["v2", "v1"] | None:
    """``v2`` or ``v1`` when this process can give each run a control group, else None. The first
    call also sweeps the groups of verifier processes that died (their runs' processes killed)."""
    if os.geteuid() != 0 or os.environ.get("RLVR_SANDBOX_CGROUPS", "").lower() == "off":
        return None
    for kind in ("v2", "v1"):
        try:
            probe = RunGroup(f"probe-{os.getpid()}", memory_mb=64, processes=8, kind=kind)
        except OSError:
            continue
        probe.close()
        sweep(kind)
        return "v2" if kind == "v2" else "v1"
    return None


def sweep(kind: str) -> int:
    """Kill the runs left in the groups of verifier processes that are gone, and remove the groups:
    a verifier that died (SIGKILL, a crash) cannot have ended its runs, whatever they detached from.
    Returns how many groups were swept."""
    roots = [FS / PARENT] if kind == "v2" else [FS / c / PARENT for c in CONTROLLERS]
    swept = 0
    for root in roots:
        if not root.is_dir():
            continue
        for d in root.iterdir():
            owner = d.name[1:].split("-")[0] if d.name.startswith("p") else ""
            if not d.is_dir() or not owner.isdigit() or Path(f"/proc/{owner}").exists():
                continue
            RunGroup._kill_in(d)
            try:
                d.rmdir()
                swept += 1
            except OSError:
                pass
    return swept


class RunGroup:
    """One run's control groups (see the module docstring); :meth:`join` in the run's first process
    before it starts the program, :meth:`close` when the run is over (kills what is left, removes them).

    Args:
        name: unique among live runs (the run's user id names it).
        memory_mb: what the run's processes may hold together.
        processes: processes and threads the run may have at once.
        kind: ``v2`` or ``v1`` (default: :func:`layout`).
    """

    def __init__(self, name: str, *, memory_mb: int, processes: int, kind: str | None = None) -> None:
        self.kind = kind or layout()
        if self.kind is None:
            raise OSError("no control groups on this machine")
        if self.kind == "v2":
            parent = FS / PARENT
            parent.mkdir(exist_ok=True)
            wanted = " ".join(f"+{c}" for c in CONTROLLERS)
            if set(CONTROLLERS) - set((parent / "cgroup.subtree_control").read_text().split()):
                _write(FS / "cgroup.subtree_control", wanted)
                _write(parent / "cgroup.subtree_control", wanted)
            self.dirs = [parent / name]
        else:
            self.dirs = [FS / c / PARENT / name for c in CONTROLLERS]
        for d in self.dirs:
            if d.exists():  # left by a verifier that died: empty it first
                self._kill_in(d)
                _rmdir(d)
            d.mkdir(parents=True)
        if self.kind == "v2":
            d = self.dirs[0]
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
            _write(d / "cpu.max", f"{_PERIOD_US} {_PERIOD_US}")
        else:
            _write(self.dirs[2] / "cpu.cfs_period_us", str(_PERIOD_US))
            _write(self.dirs[2] / "cpu.cfs_quota_us", str(_PERIOD_US))
        self.limit(memory_mb=memory_mb, processes=processes)

    def limit(self, *, memory_mb: int, processes: int) -> None:
        """Set the caps for the next run, and start its counters (peak memory, OOM kills) afresh."""
        mb = 1024 * 1024
        if self.kind == "v2":
            d = self.dirs[0]
            _write(d / "memory.max", str(memory_mb * mb))
            _write(d / "pids.max", str(processes))
            if (d / "memory.peak").exists():
                try:
                    _write(d / "memory.peak", "0")  # resettable on recent kernels
                except OSError:
                    pass
        else:
            memory, pids, _cpu = self.dirs
            _write(memory / "memory.limit_in_bytes", str(memory_mb * mb))
            _write(memory / "memory.max_usage_in_bytes", "0")
            _write(pids / "pids.max", str(processes))
        self._ooms = self._oom_kills()

    def _oom_kills(self) -> int:
        try:
            if self.kind == "v2":
                events = dict(ln.split() for ln in (self.dirs[0] / "memory.events").read_text().splitlines())
                return int(events.get("oom_kill", 0))
            return _oom_count(self.dirs[0])
        except (OSError, ValueError):
            return 0

    def join(self) -> None:
        """Move this (single-threaded, freshly forked) process into the run's groups; its children are
        born there. On v1 it writes ``0`` to ``tasks``: the kernel moves the calling thread without
        taking the global lock a process move takes (whose RCU wait cost 7-23 ms a run here)."""
        for d in self.dirs:
            _write(d / ("tasks" if self.kind == "v1" else "cgroup.procs"), "0")

    def pids(self) -> list[int]:
        """The processes in the run's groups now."""
        return _pids(self.dirs[-1] if self.kind == "v1" else self.dirs[0])

    def oom_killed(self) -> bool:
        """Whether the memory cap had to kill something of the run's (since :meth:`limit`)."""
        return self._oom_kills() > self._ooms

    def release(self) -> None:
        """The run is over: kill what is left and give the group back to the pool, once the kernel
        has released every task of the run (a killed task still counts against ``pids.max`` until it
        is reaped); a group that does not empty in time is left to the sweep, never reused."""
        self.kill()
        end = time.monotonic() + 0.2
        while any(_pids(d) for d in self.dirs) or self._tasks() > 0:
            if time.monotonic() > end:
                for d in self.dirs:
                    try:
                        d.rmdir()
                    except OSError:
                        pass  # still busy: the next sweep removes it
                return
            time.sleep(0.001)
        with _POOL_LOCK:
            _POOL.append(self)

    def _tasks(self) -> int:
        """Tasks the pids controller still counts (killed ones included until they are reaped)."""
        pids = self.dirs[1] if self.kind == "v1" else self.dirs[0]
        try:
            return int((pids / "pids.current").read_text())
        except (OSError, ValueError):
            return 0

    def peak_memory_mb(self) -> float:
        """The most the run's processes held together."""
        name = "memory.peak" if self.kind == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((self.dirs[0] / name).read_text()) / 1024 / 1024
        except (OSError, ValueError):
            return 0.0

    def kill(self) -> None:
        """SIGKILL every process of the run and wait (bounded) until none is left."""
        if self.kind == "v2" and (self.dirs[0] / "cgroup.kill").exists():
            _write(self.dirs[0] / "cgroup.kill", "1")
        for d in self.dirs:
            self._kill_in(d)

    def close(self) -> None:
        """Kill what is left and remove the groups."""
        self.kill()
        for d in self.dirs:
            _rmdir(d)

    @staticmethod
    def _kill_in(d: Path) -> None:
        end = time.monotonic() + 3
        while (left := _pids(d)) and time.monotonic() < end:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.002)


def _pids(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _oom_count(memory: Path) -> int:
    try:
        for line in (memory / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return int((memory / "memory.failcnt").read_text())  # older kernels: a failed charge as the cap's work
    except (OSError, ValueError):
        return 0


def _rmdir(d: Path) -> None:
    end = time.monotonic() + 2
    while True:
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # busy while the last killed processes are reaped
            if time.monotonic() > end:
                return
            time.sleep(0.002)


_POOL: list[RunGroup] = []
_POOL_LOCK = threading.Lock()
_SERIAL = iter(range(1 << 62))


_FINALIZED: list[int] = []  # the process ids whose multiprocessing exit drops their pool


def take(*, memory_mb: int, processes: int) -> RunGroup:
    """A group of this process's pool for one run, with these caps (a new one when none is free)."""
    with _POOL_LOCK:
        group = _POOL.pop() if _POOL else None
        serial = next(_SERIAL)
        first = os.getpid() not in _FINALIZED
        if first:
            _FINALIZED.append(os.getpid())
    if first:
        _drop_pool_at_worker_exit()
    if group is None:
        return RunGroup(f"p{os.getpid()}-{serial}", memory_mb=memory_mb, processes=processes)
    group.limit(memory_mb=memory_mb, processes=processes)
    return group


def _forget_pool() -> None:
    """In a forked child: the parent's pooled groups stay the parent's. Two workers forked from one
    parent would otherwise take the same group for runs at the same time, and the first to finish
    would kill the other's run with its own."""
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()  # a fork may copy it held
    _POOL[:] = []


os.register_at_fork(after_in_child=_forget_pool)


def _drop_pool_at_worker_exit() -> None:
    """A multiprocessing worker ends through ``os._exit`` (no ``atexit``) after running its
    finalizers: the pool is dropped there (registered once the process takes a group, after
    multiprocessing has cleared the finalizers a fork inherited)."""

    util.Finalize(None, _drop_pool, exitpriority=0)


@atexit.register
def _drop_pool() -> None:
    with _POOL_LOCK:
        groups, _POOL[:] = list(_POOL), []
    for g in groups:
        g.close()
