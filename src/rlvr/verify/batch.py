"""Run a verification function over many items in worker processes with hard limits.

The parent enforces each item's deadline from outside: a worker past it is killed
with SIGKILL together with its process group (anything it spawned) and a fresh
worker takes its place, so one hang cannot stall the batch. Results keep input
order.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Extra seconds a worker gets beyond the item's own time limit before it is killed.
GRACE_S = 1.0


def _worker(conn: Any, fn: Callable[..., Any], options: dict[str, Any]) -> None:
    try:
        os.setpgid(0, 0)  # own process group: the parent can kill what we spawn too
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        idx, item = task
        try:
            out = ("ok", fn(item, **options))
        except BaseException as e:  # reported to the parent, which decides
            out = ("crash", f"{type(e).__name__}: {e}")
        try:
            conn.send((idx, out))
        except (OSError, ValueError):
            return


class _Slot:
    def __init__(self, ctx: Any, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, fn, options), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        self.idx: int | None = None
        self.started = 0.0

    def kill(self) -> None:
        for target in (lambda: os.killpg(self.proc.pid, signal.SIGKILL), lambda: os.kill(self.proc.pid, signal.SIGKILL)):
            try:
                target()
                break
            except OSError:
                continue
        self.proc.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(2)
        if self.proc.is_alive():
            self.kill()


def run_batch(
    fn: Callable[..., R],
    items: Sequence[T],
    *,
    jobs: int,
    timeout: float,
    options: dict[str, Any] | None = None,
    on_timeout: Callable[[T], R],
    on_crash: Callable[[T, str], R],
    progress: bool = False,
    on_done: Callable[[int], None] | None = None,
) -> list[R]:
    """``[fn(item, **options) for item in items]`` in ``jobs`` processes with hard limits.

    ``fn`` must be a module-level function (it is sent to the workers). ``on_done(n)``
    is called as items finish with how many finished since the last call (progress bars).
    """
    options = options or {}
    if jobs <= 0:
        out = []
        for item in items:
            out.append(fn(item, **options))
            if on_done is not None:
                on_done(1)
        return out
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    results: list[Any] = [None] * len(items)
    pending = deque(range(len(items)))
    slots = [_Slot(ctx, fn, options) for _ in range(min(jobs, max(1, len(items))))]
    limit = timeout + GRACE_S
    done, last_note = 0, time.monotonic()
    try:
        while pending or any(s.idx is not None for s in slots):
            for s in slots:
                if s.idx is None and pending:
                    s.idx = pending.popleft()
                    s.started = time.monotonic()
                    s.conn.send((s.idx, items[s.idx]))
            busy = [s for s in slots if s.idx is not None]
            deadline = min(s.started + limit for s in busy)
            wait([s.conn for s in busy] + [s.proc.sentinel for s in busy], timeout=max(0.0, deadline - time.monotonic()))
            now = time.monotonic()
            for i, s in enumerate(slots):
                if s.idx is None:
                    continue
                got = False
                try:
                    if s.conn.poll():
                        idx, (kind, value) = s.conn.recv()
                        results[idx] = value if kind == "ok" else on_crash(items[idx], value)
                        got = True
                except (EOFError, OSError):
                    pass
                if got:
                    s.idx = None
                    done += 1
                    if on_done is not None:
                        on_done(1)
                elif not s.proc.is_alive() or now - s.started >= limit:
                    alive = s.proc.is_alive()
                    results[s.idx] = on_timeout(items[s.idx]) if alive else on_crash(
                        items[s.idx], f"worker exited with code {s.proc.exitcode}")
                    done += 1
                    if on_done is not None:
                        on_done(1)
                    s.kill()
                    slots[i] = _Slot(ctx, fn, options)
            if progress and now - last_note > 5:
                last_note = now
                print(f"  {done}/{len(items)} verified", file=sys.stderr, flush=True)
    finally:
        for s in slots:
            s.stop() if s.idx is None else s.kill()
    return results
