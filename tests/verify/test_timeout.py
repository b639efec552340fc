"""The watchdog time limit works in any thread and leaves nothing pending."""

from __future__ import annotations

import threading
import time

import pytest

from rlvr.errors import VerifierTimeout
from rlvr.verify.timeout import time_limit


def spin(seconds: float) -> float:
    t = time.monotonic()
    with pytest.raises(VerifierTimeout), time_limit(seconds):
        while True:
            pass
    return time.monotonic() - t


def test_interrupts_busy_loop_in_main_thread() -> None:
    assert 0.2 <= spin(0.2) < 2.0


def test_interrupts_in_worker_threads_independently() -> None:
    out: list[float] = []
    threads = [threading.Thread(target=lambda s=s: out.append(spin(s))) for s in (0.2, 0.4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(out) == 2 and all(x < 2.5 for x in out)


def test_no_stray_exception_after_block_ends() -> None:
    with time_limit(0.1):
        pass
    time.sleep(0.3)  # the deadline passes outside the block: nothing may be raised here


def test_not_swallowed_by_except_exception() -> None:
    with pytest.raises(VerifierTimeout), time_limit(0.1):
        try:
            while True:
                pass
        except Exception:
            pytest.fail("VerifierTimeout was caught by except Exception")


def test_a_forked_child_gets_a_watchdog_of_its_own() -> None:
    """A worker forked from a process whose watchdog is running (the batch pool, the benchmark's
    workers) inherits the deadlines but not the thread: its own limits must still fire."""
    import os

    with time_limit(30.0):  # the parent's watchdog is running, with a deadline pending, at the fork
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report whether its limit fired, and how soon
            try:
                elapsed = spin(0.2)
                os.write(w, f"{elapsed:.3f}".encode())
            finally:
                os._exit(0)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        got = os.read(r, 64).decode()
        os.close(r)
    assert os.waitstatus_to_exitcode(status) == 0 and got, "the child's limit never fired"
    assert 0.2 <= float(got) < 2.0


def test_a_shorter_limit_armed_under_a_longer_one_fires() -> None:
    """The watchdog sleeps towards the earliest deadline it knows: a shorter one armed later (a
    nested limit, another thread's) must wake it."""
    with time_limit(30.0):
        assert 0.2 <= spin(0.2) < 2.0


def test_an_outer_limit_fires_inside_a_longer_inner_one() -> None:
    t = time.monotonic()
    with pytest.raises(VerifierTimeout), time_limit(0.2), time_limit(30.0):
        while True:
            pass
    assert time.monotonic() - t < 2.0
    time.sleep(0.3)  # and nothing is left pending for later


def test_a_limit_armed_in_another_thread_meanwhile_fires() -> None:
    """One thread holds a long limit (the watchdog sleeps towards it) when another arms a short one."""
    release = threading.Event()

    def hold() -> None:
        with time_limit(30.0):
            release.wait(5.0)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        time.sleep(0.05)
        assert 0.2 <= spin(0.2) < 2.0
    finally:
        release.set()
        holder.join()
