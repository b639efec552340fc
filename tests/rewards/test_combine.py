"""The weighted total keeps every component; schedules; invariants over random rows."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.errors import ConfigError
from rlvr.rewards import Schedule, Total, build_reward
from rlvr.types import Status


def test_default_total_is_seed_alpha_beta():
    total = Total()  # 0.1 * format + 1.0 * accuracy
    rows = ["<think>2+2</think><answer>4</answer>", r"\boxed{4}", "<think>a</think><answer>5</answer>", "??"]
    assert total(rows, answer=["4"] * 4) == pytest.approx([1.1, 1.0, 0.1, 0.0])
    b = total.breakdown(rows, answer=["4"] * 4)
    assert [x.components for x in b] == [
        {"format": 1.0, "accuracy": 1.0},
        {"format": 0.0, "accuracy": 1.0},
        {"format": 1.0, "accuracy": 0.0},
        {"format": 0.0, "accuracy": 0.0},
    ]
    assert [x.verdict.status for x in b] == [Status.CORRECT, Status.CORRECT, Status.WRONG, Status.NO_ANSWER]
    assert b[0].weights == {"format": 0.1, "accuracy": 1.0}


def test_none_components_are_left_out_and_all_none_is_none():
    total = Total({"accuracy": 1.0, "cosine": 2.0}, options={"accuracy": {"bad_gold": None}})
    b = total.breakdown([r"\boxed{1}"], answer=[r"\frac{"])[0]
    assert b.components == {"accuracy": None, "cosine": None} and b.total is None
    assert total([r"\boxed{1}"], answer=[r"\frac{"]) == [None]


def test_schedule_interpolates_and_holds():
    s = Schedule.parse([[100, 1.0], [0, 0.0], [300, 0.5]])
    assert [s.at(k) for k in (-5, 0, 50, 100, 200, 300, 10_000)] == [0.0, 0.0, 0.5, 1.0, 0.75, 0.5, 0.5]
    assert Schedule.parse(0.3).at(99) == 0.3
    assert Schedule.parse({0: 1, 10: 0}).at(5) == 0.5
    with pytest.raises(ConfigError, match="repeats a step"):
        Schedule.parse([[0, 1], [0, 2]])
    with pytest.raises(ConfigError, match=r"weight of 'format'"):
        Total({"format": "high"})


def test_schedule_follows_trainer_step_and_logs_weights():
    total = Total({"accuracy": 1.0, "reasoning_steps": [[0, 0.0], [100, 1.0]]})

    class State:
        global_step = 50

    logged = {}
    values = total(
        ["Step 1: a\nStep 2: b\nStep 3: c. The answer is 3."],
        answer=["3"],
        trainer_state=State(),
        log_metric=lambda name, v: logged.__setitem__(name, v),
    )
    assert values == [pytest.approx(1.0 + 0.5 * 1.0)]
    assert logged == {"weights/accuracy": 1.0, "weights/reasoning_steps": 0.5}


def test_options_for_unweighted_rewards_are_rejected():
    with pytest.raises(ConfigError, match="without a weight"):
        Total({"accuracy": 1.0}, options={"cosine": {"max_len": 10}})


def test_components_verify_once_and_share_the_verdict(monkeypatch):
    calls = []
    import rlvr.rewards.verdicts as verdicts_mod

    real = verdicts_mod._verify
    monkeypatch.setattr(verdicts_mod, "_verify", lambda *a: calls.append(a) or real(*a))
    verdicts_mod.clear_cache()
    total = Total({"accuracy": 1.0, "cosine": 1.0, "process": 1.0})
    total([r"the answer is \boxed{17}"], answer=["17"])
    assert len(calls) == 1
    # TRL-style separate calls share the in-process cache too
    acc, cos = build_reward("accuracy"), build_reward("cosine")
    acc(["so 9"], answer=["9"])
    cos(["so 9"], answer=["9"])
    assert len(calls) == 2


def test_jobs_gives_the_same_breakdown_as_in_process():
    rows = [r"\boxed{3}", "nope", r"<think>t</think><answer>\frac{6}{2}</answer>", "2"]
    golds = ["3", "3", "3", r"\frac{"]
    weights = {"accuracy": 1.0, "format": 0.1, "cosine": 0.5, "repetition": 1.0}
    serial = Total(weights).breakdown(rows, answer=golds)
    parallel = Total(weights, jobs=2).breakdown(rows, answer=golds)
    assert [b.to_dict() for b in serial] == [b.to_dict() for b in parallel]


ALL = {
    "accuracy": 1.0,
    "format": 0.1,
    "reasoning_steps": 0.3,
    "cosine": 0.7,
    "repetition": 1.0,
    "language_consistency": 0.2,
    "process": 0.5,
}
BOUNDS = {
    "accuracy": (0, 1),
    "format": (0, 1),
    "reasoning_steps": (0, 1),
    "cosine": (-0.5, 1.0),
    "repetition": (-0.1, 0),
    "language_consistency": (0, 1),
    "process": (-0.6, 1.0),
}

pieces = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<answer>",
        "</answer>",
        r"\boxed{",
        "}",
        "Step 1:",
        "\n- ",
        "First,",
        " 3 ",
        "= 4",
        "2+2",
        "答案",
        "the the the",
        " x ",
        "48/2 = 24",
        "$",
    ]
)
texts = st.lists(st.one_of(pieces, st.text(max_size=8)), max_size=12).map("".join)
golds = st.sampled_from(["4", "24", r"\frac{1}{2}", r"\frac{", "x=2", "Natalia sold 48/2 = <<48/2=24>>24.\n#### 24"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(texts, golds), min_size=1, max_size=4))
def test_invariants_bounded_and_total_is_weighted_sum(rows):
    total = Total(ALL)
    out = total.breakdown([t for t, _ in rows], answer=[g for _, g in rows], language=["en"] * len(rows))
    for b in out:
        for name, v in b.components.items():
            if v is not None:
                lo, hi = BOUNDS[name]
                assert lo - 1e-9 <= v <= hi + 1e-9, (name, v)
        present = [ALL[k] * v for k, v in b.components.items() if v is not None]
        if present:
            assert math.isclose(b.total, sum(present), abs_tol=1e-12)
        else:
            assert b.total is None
        assert b.verdict is not None


def test_components_verify_with_their_own_strictness():
    loose = Total({"accuracy": 1.0})
    strict = Total({"accuracy": 1.0}, options={"accuracy": {"strict": True}})
    assert loose(["the sum is 81"], answer=["81"]) == [1.0]
    assert strict(["the sum is 81"], answer=["81"]) == [0.0]
    assert strict.breakdown(["the sum is 81"], answer=["81"])[0].verdict.status is Status.NO_ANSWER
    with pytest.raises(ConfigError, match="must share strict"):
        Total({"accuracy": 1.0, "cosine": 1.0}, options={"accuracy": {"strict": True}})
