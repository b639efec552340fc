"""Whose time a tool call spends: the guard's limit is the environment's, not the policy's program's.

A tool that runs the policy's own code (the python tool) bounds it by a limit of its own and says
so when the program runs past it: that is the policy's mistake, in the result, and the episode goes
on. The guard's ``timeout_s`` must then not fire first and call it the environment's ``env_timeout``
(which keeps the episode out of the loss and redraws it: a way out of any bad episode), nor count
the sandbox's set-up and teardown. So a tool marks that stretch with :func:`policy_time`; the
:class:`CallClock` of the call leaves it out of the guard's count, up to the tool's declared limit
plus :data:`TEARDOWN_S` (a sandbox that does not come back after that is the environment's stall).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

#: Seconds past a tool's own limit its sandbox may take to come back before the stall is the
#: environment's (a kill, the control group's teardown, the working folder removed).
TEARDOWN_S = 30.0

_CURRENT = threading.local()
#: The clock of the call an asynchronous caller is timing (verl's agent loop): tasks and
#: ``asyncio.to_thread`` copy it into the thread that runs the tool (:func:`timed`).
CALL_CLOCK: contextvars.ContextVar[CallClock | None] = contextvars.ContextVar("rlvr_call_clock", default=None)
T = TypeVar("T")


class CallClock:
    """One tool call's clock: wall time since the start, less the policy's stretches."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self._lock = threading.Lock()
        self._policy = 0.0  # closed stretches of the policy's time
        self._open: tuple[float, float] | None = None  # (start, the tool's own limit) of the open one

    def enter(self, limit_s: float) -> None:
        with self._lock:
            self._open = (time.monotonic(), limit_s)

    def leave(self) -> None:
        with self._lock:
            if self._open is not None:
                self._policy += time.monotonic() - self._open[0]
                self._open = None

    def environment_s(self) -> float:
        """Seconds that count against the guard's limit (the environment's own work)."""
        now = time.monotonic()
        with self._lock:
            running = now - self._open[0] if self._open is not None else 0.0
            return now - self.start - self._policy - running

    def overdue(self) -> bool:
        """The open policy stretch ran past its tool's limit and :data:`TEARDOWN_S`: a stall."""
        with self._lock:
            return self._open is not None and time.monotonic() - self._open[0] > self._open[1] + TEARDOWN_S

    @contextmanager
    def running(self) -> Iterator[None]:
        """The calling thread's tool work is timed by this clock (see :func:`policy_time`)."""
        _CURRENT.clock = self
        try:
            yield
        finally:
            _CURRENT.clock = None


@contextmanager
def policy_time(limit_s: float) -> Iterator[None]:
    """Inside a tool: what runs here is the policy's own program, bounded by the tool at ``limit_s``
    (with its sandbox's set-up and teardown); the guard does not count it. Outside a guarded call
    (a tool called directly) it does nothing."""
    clock: CallClock | None = getattr(_CURRENT, "clock", None)
    if clock is None:
        yield
        return
    clock.enter(limit_s)
    try:
        yield
    finally:
        clock.leave()


def timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in this thread, timed by the clock of the call that runs it (set in
    :data:`CALL_CLOCK` by an asynchronous caller; none: run as it is), so a :func:`policy_time`
    inside it is left out of that call's limit."""
    clock = CALL_CLOCK.get()
    if clock is None:
        return fn(*args, **kwargs)
    with clock.running():
        return fn(*args, **kwargs)
