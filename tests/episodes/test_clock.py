"""The guard counts the environment's time, not the policy's program's (:mod:`rlvr.episodes.clock`)."""

from __future__ import annotations

import time

import pytest

from rlvr.diagnostics.causes import Cause
from rlvr.episodes import Guard, clock
from rlvr.episodes.clock import CallClock, policy_time


class Runner:
    """A tool that runs 'the policy's program' (a sleep under its own limit) after some work of its own."""

    limit_s = 1.0

    def run(self, program_s: float, own_s: float = 0.0) -> str:
        """Run a program.

        Args:
            program_s: how long the policy's program (with its sandbox) takes.
            own_s: how long the environment's own work takes before it.
        """
        time.sleep(own_s)
        with policy_time(self.limit_s):
            time.sleep(program_s)
        return "ran"


def test_the_policys_stretch_is_not_the_environments_time() -> None:
    c = CallClock()
    with c.running():
        with policy_time(5.0):
            time.sleep(0.3)
        time.sleep(0.1)
    assert 0.08 < c.environment_s() < 0.25  # the 0.3 s stretch left out
    with policy_time(5.0):  # outside a guarded call: nothing to mark, nothing breaks
        pass


def test_a_program_and_its_teardown_past_the_guards_limit_are_not_an_env_timeout() -> None:
    guard = Guard({"run": Runner().run}, timeout_s=0.3)
    out = guard.invoke("run", {"program_s": 1.0}, 0)  # 1 s of the policy's, the guard allows 0.3 s
    assert out.event is None and out.result == "ran"


def test_the_environments_own_stall_is_still_an_env_timeout() -> None:
    guard = Guard({"run": Runner().run}, timeout_s=0.3)
    t0 = time.monotonic()
    out = guard.invoke("run", {"program_s": 0.0, "own_s": 5.0}, 0)
    assert out.event is not None and out.event.cause is Cause.ENV_TIMEOUT
    assert time.monotonic() - t0 < 2.0  # the limit fired, the stall was not waited out


def test_a_sandbox_that_never_comes_back_is_the_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "TEARDOWN_S", 0.3)
    guard = Guard({"run": Runner().run}, timeout_s=0.3)
    t0 = time.monotonic()
    out = guard.invoke("run", {"program_s": 10.0}, 0)  # 10 s inside a stretch whose limit is 1 s
    assert out.event is not None and out.event.cause is Cause.ENV_TIMEOUT
    assert "did not come back" in out.event.detail
    assert time.monotonic() - t0 < 3.0
