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
        self._heap: list[tuple[float, int, int]] = []  # (deadline, token, thread id)
        self._live: set[int] = set()
        self._fired: set[int] = set()
        self._counter = itertools.count()
        self._reset()
        # A forked child inherits the deadlines but not the thread, and maybe a lock held at the fork.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        """Forget the deadlines and the thread, with a fresh lock."""
        # a plain lock, taken with C's context manager on every arm and disarm (the condition's own
        # __enter__ and the thread's is_alive() were most of a time limit's cost, per verdict)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap.clear()
        self._live.clear()
        self._fired.clear()
        self._thread: threading.Thread | None = None

    def _start(self) -> None:
        with self._lock:  # two threads' first limits at once start one watchdog
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rlvr-watchdog", daemon=True)
                self._thread.start()

    def arm(self, seconds: float) -> int:
        if self._thread is None:  # the first limit in this process (or since a fork, or the thread ended)
            self._start()
        token = next(self._counter)
        deadline = time.monotonic() + seconds
        with self._lock:
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
        with self._lock:
            self._live.discard(token)
            fired = token in self._fired
            self._fired.discard(token)
            return fired

    def _run(self) -> None:
        try:
            self._watch()
        finally:  # should it ever end, the next limit starts another
            self._thread = None

    def _watch(self) -> None:
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


class _Limit:
    """The context manager :func:`time_limit` returns (a class: a generator-based one cost a
    verification of a short answer several per cent)."""

    __slots__ = ("_seconds", "_token")

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._token: int | None = None

    def __enter__(self) -> None:
        if self._seconds is not None and self._seconds > 0:
            self._token = _WATCHDOG.arm(self._seconds)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None and _WATCHDOG.disarm(self._token):
            # The exception may still be pending (not yet delivered): clear it so
            # it cannot surface later in unrelated code.
            _clear_async_exc(threading.get_ident(), None)


def time_limit(seconds: float | None) -> _Limit:
    """Raise :class:`VerifierTimeout` in this thread if the block runs past ``seconds``.

    ``None`` or a non-positive value means no limit. Safe to nest and to use from
    any thread.

    Examples:
        >>> with time_limit(1.0):
        ...     x = sum(range(1000))
        >>> x
        499500
    """
    return _Limit(seconds)
