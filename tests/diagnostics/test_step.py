"""The engine-neutral failure-aware step on hand-made rollouts: no model, no engine."""

from __future__ import annotations

import json

import pytest
import torch

from rlvr.config import FailureConfig
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import DrawAhead, FailureAware, RolloutView, informative, rollout_record
from rlvr.types import Status, Verdict


def FC(**kw) -> FailureConfig:
    return FailureConfig(**{"max_staleness": 100, **kw})


OK, BAD, NONE = Verdict(Status.CORRECT), Verdict(Status.WRONG), Verdict(Status.NO_ANSWER)
TIMEOUT, GOLD = Verdict(Status.TIMEOUT), Verdict(Status.BAD_GOLD)


def view(pid: str, verdict: Verdict | None, total: float | None = None, **kw) -> RolloutView:
    if total is None and verdict is not None:
        total = 1.0 if verdict.correct else 0.0
    kw.setdefault("version", 0)
    return RolloutView(pid, verdict, total, {"accuracy": total}, text=kw.pop("text", "x"), **kw)


@pytest.mark.parametrize(
    "rows, causes",
    [
        ([view("p", OK), view("p", BAD)], ["correct", "wrong"]),
        ([view("p", NONE), view("p", OK, finish="length")], ["no_answer", "truncated"]),
        ([view("p", TIMEOUT), view("p", None, 0.0)], ["invalid", "scored"]),  # no verifier: the reward stands
        ([view("p", None, None), view("p", None, 1.0, finish="length")], ["invalid", "truncated"]),  # nothing scored it
        ([view("p", OK, unscored=True), view("p", GOLD)], ["invalid", "bad_gold"]),  # every reward said None
        ([view("p", OK, version=-4), view("p", OK, version=-1)], ["stale", "correct"]),  # step 1: version 0 is current
        ([view("p", OK, text="  "), view("p", OK)], ["invalid", "correct"]),  # empty output
    ],
)
def test_causes_table(rows, causes) -> None:
    fa = FailureAware(FC(max_staleness=1, quarantine=False), group_size=2)
    assert [c.value for c in fa.causes(rows, step=1)] == causes


def test_excluded_rows_leave_the_group_statistics_and_get_no_advantage() -> None:
    fa = FailureAware(FC(quarantine=False), group_size=4)
    rows = [view("p", OK), view("p", BAD), view("p", TIMEOUT, 1.0), view("p", GOLD, 0.5)]
    d = fa.decide(rows, step=1)
    assert d.admit.tolist() == [True, True, False, False]
    assert d.advantages[2:].tolist() == [0.0, 0.0]
    assert d.advantages[0] == pytest.approx(-d.advantages[1]) and d.advantages[0] > 0.7  # a 2-row group
    assert d.metrics["failure/excluded_frac"] == 0.5 and d.metrics["causes/invalid"] == 0.25


def test_the_cold_start_excludes_format_deaths_until_they_fall_and_says_when() -> None:
    fa = FailureAware(
        FC(cold_start=True, cold_start_threshold=0.3, cold_start_window=1, quarantine=False), group_size=4
    )
    many = [view("p", NONE), view("p", NONE), view("p", OK), view("p", BAD)]
    d = fa.decide(many, step=1)
    assert d.admit.tolist() == [False, False, True, True] and d.metrics["failure/cold_start"] == 1.0
    few = [view("p", NONE), view("p", OK), view("p", OK), view("p", BAD)]
    d = fa.decide(few, step=2)  # 25% < 30%: the switch happens now, format deaths count from here
    assert d.metrics["failure/cold_start_ended"] == 1.0 and d.admit.all()
    assert fa.decide(many, step=3).admit.all()  # once off, it stays off


def test_advantage_clipping_and_dr_grpo_scaling() -> None:
    rows = [view("p", OK)] + [view("p", BAD)] * 7
    plain = FailureAware(FC(quarantine=False), group_size=8).decide(rows, 1).advantages
    assert plain[0] > 2.4  # one lucky success gets a large advantage
    clipped = FailureAware(FC(quarantine=False), group_size=8, advantage_clip=1.5).decide(rows, 1)
    assert clipped.advantages.max() == pytest.approx(1.5) and clipped.metrics["advantages/clipped_frac"] == 1 / 8
    dr = FailureAware(FC(quarantine=False), group_size=8, scale_rewards=False).decide(rows, 1)
    assert dr.advantages.tolist() == pytest.approx([7 / 8] + [-1 / 8] * 7)


def test_quarantine_judges_the_first_draws_and_writes_its_file(tmp_path) -> None:
    fa = FailureAware(FC(quarantine_consecutive=2), group_size=2, run_dir=tmp_path)
    dead = [view("dead", TIMEOUT), view("dead", TIMEOUT)]
    fine = [view("ok", OK), view("ok", BAD)]
    assert fa.decide(dead + fine, 1).quarantined == []
    # resampling rescued the rows, but quarantine counts what the model first produced
    d = fa.decide(
        [view("dead", OK), view("dead", BAD)] + fine,
        2,
        first_causes=[Cause.INVALID, Cause.INVALID, Cause.CORRECT, Cause.WRONG],
    )
    assert d.quarantined == ["dead"] and fa.skip("dead") and not fa.skip("ok")
    entry = json.loads((tmp_path / "quarantine.jsonl").read_text())
    assert entry["prompt_id"] == "dead" and entry["step"] == 2 and d.metrics["quarantine/size"] == 1.0


def test_state_round_trips_through_a_checkpoint(tmp_path) -> None:
    cfg = FC(cold_start=True, cold_start_window=3, quarantine_consecutive=3)
    fa = FailureAware(cfg, group_size=2, run_dir=tmp_path)
    for step in (1, 2):
        fa.decide([view("a", TIMEOUT), view("a", TIMEOUT), view("b", NONE), view("b", OK)], step)
    state = json.loads(json.dumps(fa.state_dict()))  # plain data: any engine can checkpoint it
    back = FailureAware(cfg, group_size=2, run_dir=tmp_path)
    back.load_state_dict(state, tmp_path, 2)
    assert back.state_dict() == fa.state_dict()
    assert back.decide([view("a", TIMEOUT), view("a", TIMEOUT)], 3).quarantined == ["a"]  # the third in a row


def test_resampling_names_invalid_rows_and_truncated_ones_by_option() -> None:
    causes = [Cause.INVALID, Cause.TRUNCATED, Cause.WRONG, Cause.NO_ANSWER]
    assert FailureAware(FC(), group_size=2).to_resample(causes) == [0]
    assert FailureAware(FC(exclude_truncated=True), group_size=2).to_resample(causes) == [0, 1]


def test_informative_groups_and_the_draw_ahead_buffer() -> None:
    rows = [view("a", OK), view("a", BAD), view("b", OK), view("b", OK), view("c", BAD), view("c", NONE)]
    assert informative(rows, 2) == [True, False, False]
    assert DrawAhead.pick([False, True, True, False, True], need=2) == ([1, 2], [4])
    assert DrawAhead.pick([False, False, True], need=2) == ([2, 0], [])  # flat groups fill the step
    ahead = DrawAhead(max_staleness=1)
    ahead.put(3, "old"), ahead.put(5, "new")
    assert ahead.take_fresh(5) == (["new"], 1) and len(ahead) == 0


def test_the_metrics_every_engine_logs() -> None:
    rows = [view("p", OK, text="<answer>1</answer><answer>2</answer>"), view("p", BAD)]
    d = FailureAware(FC(quarantine=False), group_size=2).decide(rows, 1)
    m = d.metrics
    assert m["reward/accuracy/mean"] == 0.5 and m["reward/accuracy/binary"] == 1.0
    assert m["verify/correct"] == m["verify/wrong"] == 0.5 and m["causes/correct"] == 0.5
    assert m["alarms/multiple_answers"] == 0.5 and m["alarms/code_tamper"] is None
    assert m["groups/flat_accuracy_frac"] == 0.0 and m["reward/total/mean"] == 0.5
    with pytest.raises(ValueError, match="groups of 2"):
        FailureAware(FC(), group_size=2).decide(rows[:1], 1)


def test_one_record_layout_for_every_engine() -> None:
    r = rollout_record(
        view("p", OK),
        Cause.CORRECT,
        prompt=[{"role": "user", "content": "1+1"}],
        gold="2",
        task="math",
        advantage=0.5,
        admitted=True,
        rank=1,
    )
    assert r["prompt"] == "1+1" and r["verdict"]["status"] == "correct" and r["rank"] == 1
    assert set(r) >= {
        "prompt_id",
        "completion",
        "finish",
        "policy_version",
        "cause",
        "components",
        "total",
        "advantage",
        "admitted",
    }
    assert torch.is_tensor(FailureAware(FC(), group_size=1).decide([view("p", OK)], 1).advantages)


def test_an_engine_that_cannot_redraw_filters_flat_groups_out() -> None:
    rows = [view("a", OK), view("a", BAD), view("b", BAD), view("b", BAD)]
    d = FailureAware(FC(quarantine=False), group_size=2).decide(rows, 1, drop_uninformative=True)
    assert d.admit.tolist() == [True, True, False, False] and d.metrics["failure/flat_dropped"] == 0.5
