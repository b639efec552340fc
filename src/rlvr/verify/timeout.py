"""Time limits that work in any thread and in worker processes (no SIGALRM).

A single watchdog thread keeps a heap of deadlines. When one passes, it raises
:class:`~rlvr.errors.VerifierTimeout` *inside the thread that armed it* with
``PyThreadState_SetAsyncExc``. The exception lands at the next bytecode boundary,
so pure-Python work (SymPy, the LaTeX parser, our own code) is interrupted; a
single long C call is not, which is why inputs that could start one (huge integer
powers, megabyte strings) are refused up front by the guards in
:mod:`rlvr.verify.math.guards`, and why :func:`rlvr.verify.batch.run_batch` also
kills hung worker processes from outside.
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rlvr.errors import VerifierTimeout

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
# The same C function (GIL held, hence PYFUNCTYPE), typed to take NULL, which
# clears a pending async exception.
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class _Watchdog:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, int]] = []  # (deadline, token, thread id)
        self._live: set[int] = set()
        self._fired: set[int] = set()
        self._counter = itertools.count()
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None

    def _ensure_thread(self) -> None:
        # A forked child inherits the data but not the thread: start a fresh one.
        if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
            self._pid = os.getpid()
            self._cond = threading.Condition()
            self._heap.clear()
            self._live.clear()
            self._fired.clear()
            self._thread = threading.Thread(target=self._run, name="rlvr-watchdog", daemon=True)
            self._thread.start()

    def arm(self, seconds: float) -> int:
        self._ensure_thread()
        token = next(self._counter)
        deadline = time.monotonic() + seconds
        with self._cond:
            # Wake the watchdog only when this deadline comes first: with one timeout for every call
            # (the usual case) it never does, and each wake-up had cost a thread switch per call.
            earliest = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, token, threading.get_ident()))
            self._live.add(token)
            if earliest:
                self._cond.notify()
        return token

    def disarm(self, token: int) -> bool:
        """Cancel a deadline; returns True if it had already fired."""
        with self._cond:
            self._live.discard(token)
            fired = token in self._fired
            self._fired.discard(token)
            return fired

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while self._heap and self._heap[0][1] not in self._live:  # disarmed: drop without waiting
                    heapq.heappop(self._heap)
                while not self._heap:
                    cond.wait()
                deadline, token, tid = self._heap[0]
                delay = deadline - time.monotonic()
                if delay > 0:
                    cond.wait(delay)
                    continue
                heapq.heappop(self._heap)
                if token in self._live:
                    self._live.discard(token)
                    self._fired.add(token)
                    _set_async_exc(tid, VerifierTimeout)


_WATCHDOG = _Watchdog()


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`VerifierTimeout` in this thread if the block runs past ``seconds``.

    ``None`` or a non-positive value means no limit. Safe to nest and to use from
    any thread.

    Example:
        >>> with time_limit(1.0):
        ...     x = sum(range(1000))
        >>> x
        499500
    """
    if seconds is None or seconds <= 0:
        yield
        return
    token = _WATCHDOG.arm(seconds)
    try:
        yield
    finally:
        if _WATCHDOG.disarm(token):
            # The exception may still be pending (not yet delivered): clear it so
            # it cannot surface later in unrelated code.
            _clear_async_exc(threading.get_ident(), None)
