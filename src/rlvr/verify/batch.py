"""Run a verification function over many items in worker processes with hard limits.

Items travel to workers in chunks (one message per chunk, not per item: per-item
pipe traffic cost more than verifying a short answer), but every *item* keeps its
own deadline: each worker publishes which item of its chunk it is on and since
when in shared memory, and the parent kills a worker whose current item has run
past its limit (SIGKILL to its whole process group, so anything it spawned dies
too). The item in flight comes back as a timeout, the rest of its chunk is queued
again, and a fresh worker takes the slot, so one hang cannot stall the batch.
Results keep input order.
"""

from __future__ import annotations

import gc
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
_UNSET: Any = object()
#: Upper bound on items per message.
MAX_CHUNK = 64


def _worker(conn: Any, progress: Any, fn: Callable[..., Any], options: dict[str, Any]) -> None:
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
        out = []
        for k, item in enumerate(task):
            progress[0], progress[1] = k, time.monotonic()  # read by the parent's watchdog
            try:
                out.append(("ok", fn(item, **options)))
            except BaseException as e:  # reported to the parent, which decides
                out.append(("crash", f"{type(e).__name__}: {e}"))
        progress[0] = -1
        try:
            conn.send(out)
        except (OSError, ValueError):
            return


class _Slot:
    def __init__(self, ctx: Any, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        # Objects the child inherits are frozen out of its garbage collector: otherwise every
        # collection walks the parent's whole heap, copying each page it touches (and ran the
        # worker ~2x slower than the same work in process).
        gc.freeze()
        parent, child = ctx.Pipe()
        self.progress = ctx.RawArray("d", 2)  # [index in chunk, start time]; -1 when idle
        self.progress[0] = -1
        self.proc = ctx.Process(target=_worker, args=(child, self.progress, fn, options), daemon=True)
        self.proc.start()
        gc.unfreeze()
        child.close()
        self.conn = parent
        self.chunk: list[int] = []
        self.sent = 0.0

    def current(self) -> tuple[int, float]:
        """(index within the chunk, start time) of the item being worked on."""
        k = int(self.progress[0])
        return (k, self.progress[1]) if k >= 0 else (0, self.sent)

    def kill(self) -> None:
        pid = self.proc.pid
        for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
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
    chunk: int | None = None,
    limit: Callable[[T], float] | None = None,
) -> list[R]:
    """``[fn(item, **options) for item in items]`` in ``jobs`` processes with hard limits.

    ``fn`` must be a module-level function (it is sent to the workers). Each item gets
    ``timeout + GRACE_S`` seconds (``limit(item) + GRACE_S`` when given: an item's own limit).
    ``on_done(n)`` is called as items finish with how many finished since the last call
    (progress bars). ``chunk`` items per message (default: enough for ~8 messages per worker, at
    most :data:`MAX_CHUNK`).
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
    results: list[Any] = [_UNSET] * len(items)
    size = chunk or max(1, min(MAX_CHUNK, len(items) // (jobs * 8)))
    pending = deque(range(len(items)))
    slots = [_Slot(ctx, fn, options) for _ in range(min(jobs, max(1, len(items))))]
    limits = [(limit(it) if limit is not None else timeout) + GRACE_S for it in items]

    def allowed(s: _Slot) -> float:
        return limits[s.chunk[s.current()[0]]]

    done, last_note = 0, time.monotonic()

    def finish(idx: int, value: Any) -> None:
        nonlocal done
        results[idx] = value
        done += 1
        if on_done is not None:
            on_done(1)

    try:
        while pending or any(s.chunk for s in slots):
            for s in slots:
                if not s.chunk and pending:
                    s.chunk = [pending.popleft() for _ in range(min(size, len(pending)))]
                    s.sent = time.monotonic()
                    s.conn.send([items[i] for i in s.chunk])
            busy = [s for s in slots if s.chunk]
            deadline = min(s.current()[1] + allowed(s) for s in busy)
            # wake at the earliest deadline, or sooner to re-read progress (it moves without messages)
            wait(
                [s.conn for s in busy] + [s.proc.sentinel for s in busy],
                timeout=min(max(0.0, deadline - time.monotonic()), 0.25),
            )
            now = time.monotonic()
            for i, s in enumerate(slots):
                if not s.chunk:
                    continue
                got = None
                try:
                    if s.conn.poll():
                        got = s.conn.recv()
                except (EOFError, OSError):
                    pass
                if got is not None:
                    for idx, (kind, value) in zip(s.chunk, got):
                        finish(idx, value if kind == "ok" else on_crash(items[idx], value))
                    s.chunk = []
                    continue
                k, started = s.current()
                alive = s.proc.is_alive()
                if alive and now - started < limits[s.chunk[k]]:
                    continue
                culprit = s.chunk[k]
                finish(
                    culprit,
                    on_timeout(items[culprit])
                    if alive
                    else on_crash(items[culprit], f"worker exited with code {s.proc.exitcode}"),
                )
                pending.extendleft(reversed([j for j in s.chunk if results[j] is _UNSET and j != culprit]))
                s.kill()
                slots[i] = _Slot(ctx, fn, options)
            if progress and now - last_note > 5:
                last_note = now
                print(f"  {done}/{len(items)} verified", file=sys.stderr, flush=True)
    finally:
        for s in slots:
            s.stop() if not s.chunk else s.kill()
    return results
