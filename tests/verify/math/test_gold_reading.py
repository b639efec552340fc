"""A gold answer is read once for the completions verified against it, and a reading cut short is
not kept."""

from __future__ import annotations

import threading

import pytest

from rlvr.errors import VerifierTimeout
from rlvr.types import Status
from rlvr.verify.math import compare
from rlvr.verify.math.verifier import verify_math

GOLD = r"\frac{5\pi^2}{4}"
GROUP = [
    r"So the area is $\boxed{\frac{5\pi^2}{4}}$.",
    r"The answer is $\boxed{\frac{5}{4}\pi^2}$.",
    r"Hence $\boxed{1.25\pi^2}$",
    r"I get $\boxed{\frac{5\pi}{4}}$.",
    r"so the area is 12",
    r"The answer might be $\boxed{\frac{5\pi^2}{4}}$, I am not sure.",
]


def test_a_group_against_one_gold_reads_it_once_with_the_verdicts_of_reading_it_each_time(monkeypatch) -> None:
    compare.clear_gold_cache()
    fresh = []
    for completion in GROUP:
        compare.clear_gold_cache()
        fresh.append(verify_math(completion, GOLD))
    reads = []
    real = compare.iter_candidates

    def counted(text: str, **kw: object):  # type: ignore[no-untyped-def]
        if kw.get("gold"):
            reads.append(text)
        return real(text, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(compare, "iter_candidates", counted)
    compare.clear_gold_cache()
    kept = [verify_math(completion, GOLD) for completion in GROUP]
    assert reads == [GOLD]
    assert [(v.status, v.extracted, v.reason) for v in kept] == [(v.status, v.extracted, v.reason) for v in fresh]
    assert [v.status for v in kept] == [Status.CORRECT] * 3 + [Status.WRONG] * 3


def test_a_reading_cut_short_by_the_time_limit_is_read_afresh(monkeypatch) -> None:
    """A time limit that fires inside the gold's extraction ends that verdict (``timeout``); the next
    completion against the same gold gets the gold read whole, not the spent generator of it."""
    compare.clear_gold_cache()
    real = compare.iter_candidates
    fired = []

    def slow_once(text: str, **kw: object):  # type: ignore[no-untyped-def]
        for cand in real(text, **kw):  # type: ignore[arg-type]
            if kw.get("gold") and not fired:
                fired.append(text)
                raise VerifierTimeout  # as the watchdog raises it: inside the generator
            yield cand

    monkeypatch.setattr(compare, "iter_candidates", slow_once)
    assert verify_math(GROUP[3], GOLD).status is Status.TIMEOUT
    assert verify_math(GROUP[3], GOLD).status is Status.WRONG
    assert verify_math(GROUP[1], GOLD).status is Status.CORRECT


@pytest.mark.parametrize("threads", [4])
def test_threads_reading_one_new_gold_at_once_all_get_it_whole(threads: int) -> None:
    compare.clear_gold_cache()
    gold = r"\frac{7\sqrt{3}}{2}"
    start = threading.Barrier(threads)
    out: list[Status] = []

    def run() -> None:
        start.wait()
        out.append(verify_math(r"so $\boxed{\frac{7\sqrt{3}}{2}}$", gold).status)
        out.append(verify_math(r"so $\boxed{\frac{7}{2}\sqrt{3}}$", gold).status)

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert out == [Status.CORRECT] * (2 * threads)
