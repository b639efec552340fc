"""The shared peer suite (../shared/bench/verifier/peers.jsonl), in-process, as a regression guard.

The bar is measured by benchmarks/verifier.py through the shared harness; this test
keeps us from sliding below it between benchmark runs.
"""

from __future__ import annotations

import pytest

from rlvr import verify_math
from tests.conftest import SHARED, read_jsonl

PEERS = SHARED / "bench" / "verifier" / "peers.jsonl"


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    if not PEERS.exists():
        pytest.skip("../shared/bench/verifier is not beside this checkout")
    return read_jsonl(PEERS)


def test_peer_suite_accuracy(cases: list[dict]) -> None:
    right = {"default": 0, "all": 0}
    n_default = 0
    misses = []
    for c in cases:
        ok = verify_math(c["prediction"], c["gold"]).correct == c["expected"]
        right["all"] += ok
        if not c.get("convention"):
            n_default += 1
            right["default"] += ok
        if not ok:
            misses.append(c["id"])
    assert right["default"] / n_default >= 0.993, misses
    # 0.977: the peers' cases give no question, so a closed form equal to the gold is correct again
    # (mv-028, "Answer (9+1)" for 10 under math-verify's latex-only option); with the question given,
    # an answer that restates its computation is wrong (tests/verify/math/test_adversarial.py)
    assert right["all"] / len(cases) >= 0.977, misses
    restated = {c["id"]: c for c in cases}.get("mv-028")
    if restated is not None:
        assert verify_math(restated["prediction"], restated["gold"]).correct
