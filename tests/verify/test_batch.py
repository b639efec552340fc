"""Batch verification in worker processes: order kept, hangs killed, workers recycled."""

from __future__ import annotations

import os
import time

from rlvr import Status, verify_math, verify_math_batch
from rlvr.verify.batch import run_batch


def test_batch_matches_single_calls_in_order() -> None:
    pairs = [(r"\boxed{1/2}", "0.5"), ("no", "3"), (r"\boxed{x+1}", "1+x"), (r"\boxed{4}", "5")] * 3
    got = verify_math_batch(pairs, jobs=2, timeout=5)
    want = [verify_math(c, g) for c, g in pairs]
    assert [v.status for v in got] == [v.status for v in want]


def _maybe_hang(item: int, **_: object) -> int:
    if item < 0:
        time.sleep(3600)  # sleeps in C: only a kill from outside ends it
    if item == 99:
        os._exit(3)  # the worker dies
    return item * 2


def test_hung_and_crashed_workers_are_replaced() -> None:
    t = time.monotonic()
    out = run_batch(
        _maybe_hang,
        [1, -1, 2, 99, 3, -2, 4],
        jobs=2,
        timeout=0.5,
        on_timeout=lambda item: "timeout",
        on_crash=lambda item, why: f"crash: {why}",
    )
    assert out[0] == 2 and out[2] == 4 and out[4] == 6 and out[6] == 8
    assert out[1] == out[5] == "timeout"
    assert out[3].startswith("crash")
    assert time.monotonic() - t < 10


def test_in_process_mode() -> None:
    assert verify_math_batch([(r"\boxed{2}", "2")], jobs=0)[0].status is Status.CORRECT
