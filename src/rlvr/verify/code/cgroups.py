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
"""

from __future__ import annotations

import os
import signal
import time
from functools import lru_cache
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
    """``v2`` or ``v1`` when this process can give each run a control group, else None."""
    if os.geteuid() != 0 or os.environ.get("RLVR_SANDBOX_CGROUPS", "").lower() == "off":
        return None
    for kind in ("v2", "v1"):
        try:
            probe = RunGroup(f"probe-{os.getpid()}", memory_mb=64, processes=8, kind=kind)
        except OSError:
            continue
        probe.close()
        return "v2" if kind == "v2" else "v1"
    return None


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
        mb = 1024 * 1024
        if self.kind == "v2":
            d = self.dirs[0]
            _write(d / "memory.max", str(memory_mb * mb))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
            _write(d / "pids.max", str(processes))
            _write(d / "cpu.max", f"{_PERIOD_US} {_PERIOD_US}")
        else:
            memory, pids, cpu = self.dirs
            _write(memory / "memory.limit_in_bytes", str(memory_mb * mb))
            _write(pids / "pids.max", str(processes))
            _write(cpu / "cpu.cfs_period_us", str(_PERIOD_US))
            _write(cpu / "cpu.cfs_quota_us", str(_PERIOD_US))

    def join(self, pid: int = 0) -> None:
        """Move ``pid`` (0: this process) into the run's groups; its children are born there."""
        who = str(pid or os.getpid())
        for d in self.dirs:
            _write(d / "cgroup.procs", who)

    def pids(self) -> list[int]:
        """The processes in the run's groups now."""
        return _pids(self.dirs[-1] if self.kind == "v1" else self.dirs[0])

    def oom_killed(self) -> bool:
        """Whether the memory cap had to kill something of the run's."""
        try:
            if self.kind == "v2":
                events = dict(ln.split() for ln in (self.dirs[0] / "memory.events").read_text().splitlines())
                return int(events.get("oom_kill", 0)) > 0
            return int((self.dirs[0] / "memory.failcnt").read_text()) > 0 and _oom_count(self.dirs[0]) > 0
        except (OSError, ValueError):
            return False

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
    except (OSError, ValueError):
        pass
    return 1  # older kernels do not count: a failed charge is taken as the cap's work


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
