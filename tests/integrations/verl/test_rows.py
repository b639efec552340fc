"""rlvr's verl pieces that need no verl: row scoring, the batch decision, the rlvr section and checks."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import FailureConfig
from rlvr.diagnostics.step import FailureAware
from rlvr.errors import ConfigError
from rlvr.integrations.verl.batch import Row, decide_rows
from rlvr.integrations.verl.rows import finish_of, score_row
from rlvr.integrations.verl.settings import EXTRA_KEYS, check_config, check_row, settings_of
from rlvr.rewards import Total

TOTAL = Total({"accuracy": 1.0, "format": 0.2}, options={"format": {"think_tag": None}})


def test_every_row_carries_the_same_keys_and_its_cause():
    right = score_row(TOTAL, "<answer>4</answer>", "4")
    wrong = score_row(TOTAL, "<answer>5</answer>", "4")
    none = score_row(TOTAL, "no idea", "4")
    cut = score_row(TOTAL, "<answer>4</answer> and more", "4", finish="length", exclude_truncated=True)
    bad = score_row(TOTAL, "<answer>4</answer>", r"\frac{")
    empty = score_row(TOTAL, "   ", "4")
    rows = [right, wrong, none, cut, bad, empty]
    assert len({tuple(r.extra) for r in rows}) == 1 and set(EXTRA_KEYS) <= set(right.extra)
    assert [r.extra["cause"] for r in rows] == ["correct", "wrong", "no_answer", "truncated", "bad_gold", "invalid"]
    assert [r.extra["admit"] for r in rows] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert right.score == pytest.approx(1.2) and right.extra["acc"] == 1.0 and right.extra["pred"] == "4"
    assert none.extra["status"] == "no_answer" and none.score == 0.0


def test_an_environment_that_judges_its_episode_gives_the_row_its_score_with_the_same_keys():
    def ep(**judged):
        return {"events": [], "tool_calls": 1, "finish": "eos", "answer": "<answer>4</answer>", **judged}

    rubric = {"total": 0.6, "components": {"right": 0.0, "tidy": 1.0}, "weights": {"right": 1.0, "tidy": 0.6}}
    failed = score_row(TOTAL, "x", "4", episode=ep(judge="environment", score={**rubric, "answered": True}))
    passed = {**rubric, "total": 1.6, "components": {"right": 1.0, "tidy": 1.0}, "passed": True}
    solved = score_row(TOTAL, "x", "4", episode=ep(judge="environment", score=passed))
    unread = score_row(TOTAL, "x", "4", episode=ep(judge="environment", score={**rubric, "answered": False}))
    number = score_row(TOTAL, "x", "4", episode=ep(judge="environment", reward=0.0))  # a plain reward(): accuracy
    broke = ep(judge="environment", finish="fault")
    broke["events"] = [{"cause": "tool_error", "turn": 1, "detail": "reward raised ValueError"}]
    fault = score_row(TOTAL, "x", "4", episode=broke)
    plain = score_row(TOTAL, "<answer>4</answer>", "4")
    rows = [failed, solved, unread, number, fault, plain]
    assert len({tuple(r.extra) for r in rows}) == 1  # verl batches the extra info by the first row's keys
    assert [r.extra["cause"] for r in rows] == ["wrong", "correct", "no_answer", "wrong", "tool_error", "correct"]
    assert [r.score for r in rows] == pytest.approx([0.6, 1.6, 0.6, 0.2, 0.0, 1.2])  # format 0.2 kept beside a number
    assert json.loads(solved.extra["env_components"]) == {"right": 1.0, "tidy": 1.0} and solved.extra["acc"] == 1.0
    assert solved.extra["accuracy"] is None and solved.extra["env_reward"] == pytest.approx(1.6)
    assert number.extra["accuracy"] == 0.0 and number.extra["env_components"] == ""
    assert number.extra["env_reward"] == 0.0  # the environment's own number, not the weighted total
    assert fault.extra["admit"] == 0.0 and fault.extra["env_reward"] is None
    assert plain.extra["env_reward"] is None and plain.extra["env_components"] == ""


def test_finish_is_length_only_when_the_response_filled_its_width_without_eos():
    ids = torch.tensor([5, 6, 7, 2])
    assert finish_of(ids, 4, {2}) == "eos" and finish_of(ids, 3, {2}) == "eos"
    assert finish_of(torch.tensor([5, 6, 7, 8]), 4, {2}) == "length"


def _rows(infos_by_uid: dict[str, list[dict]]) -> list[Row]:
    rows = []
    for uid, infos in infos_by_uid.items():
        rows += [Row(f"{uid}_{k}_0", uid, f"p-{uid}", info, 0) for k, info in enumerate(infos)]
    return rows


def test_a_verl_batch_in_any_order_is_decided_as_rlvr_groups_and_given_back_in_order():
    scored = {t: score_row(TOTAL, t, "4").extra for t in ("<answer>4</answer>", "<answer>5</answer>", "   ")}
    good, bad, empty = scored.values()
    rows = _rows({"a": [good, bad, empty, good], "b": [bad, bad, bad, bad]})
    rows = [rows[i] for i in (4, 0, 5, 1, 6, 2, 7, 3)]  # groups interleaved, as verl may sample them
    fa = FailureAware(FailureConfig(quarantine=False), group_size=1)
    d = decide_rows(fa, rows, step=1)
    assert [r.key for r in d.rows] == [r.key for r in rows]
    assert d.admit.tolist() == [True, True, True, True, True, False, True, True]  # the empty row is invalid
    assert d.causes[5].value == "invalid" and d.advantages[5] == 0.0
    assert d.advantages[1] > 0 > d.advantages[3]  # a: right above wrong
    assert all(d.advantages[i] == 0.0 for i in (0, 2, 4, 6))  # b: all wrong, no signal
    assert d.metrics["causes/invalid"] == pytest.approx(1 / 8)
    recs = d.records(["4"] * 8, ["openai/gsm8k"] * 8)
    assert recs[5]["cause"] == "invalid" and not recs[5]["admitted"] and recs[5]["key"] == rows[5].key


def test_a_prompt_that_keeps_dying_is_quarantined_through_the_decision():
    empty = score_row(TOTAL, "", "4").extra
    fa = FailureAware(FailureConfig(quarantine=True, quarantine_consecutive=2), group_size=1)
    for step in (1, 2):
        d = decide_rows(fa, _rows({"a": [empty] * 4}), step)
    assert d.quarantined == ["p-a"] and fa.skip("p-a")


def test_rows_not_scored_by_rlvr_are_refused_naming_the_fix():
    with pytest.raises(ConfigError, match=r"reward\.reward_manager\.name=rlvr"):
        decide_rows(FailureAware(FailureConfig(), group_size=1), [Row("u_0_0", "u", "p", {"acc": 1.0})], 1)


def test_the_rlvr_section_and_the_config_checks_name_the_key_and_the_fix():
    assert settings_of({"rlvr": {"advantage_clip": 2.0}}).advantage_clip == 2.0
    with pytest.raises(ConfigError, match=r"rlvr\.failure\.quarantine_total"):
        settings_of({"rlvr": {"failure": {"quarantine_total": "many"}}})
    with pytest.raises(ConfigError, match=r"rlvr\.advantge_clip"):
        settings_of({"rlvr": {"advantge_clip": 2.0}})
    cfg = {"algorithm": {"adv_estimator": "rlvr_grpo"}, "reward": {"reward_manager": {"name": "naive"}}}
    with pytest.raises(ConfigError, match=r"needs reward\.reward_manager\.name=rlvr"):
        check_config(cfg)
    cfg = {
        "algorithm": {"adv_estimator": "grpo"},
        "reward": {"reward_manager": {"name": "rlvr"}},
        "trainer": {"v1": {"trainer_mode": "rlvr"}},
    }
    with pytest.raises(ConfigError, match=r"needs algorithm\.adv_estimator=rlvr_grpo"):
        check_config(cfg)
    with pytest.raises(ConfigError, match=r"no reward_model\.ground_truth"):
        check_row({"prompt": "1+1", "data_source": "x"}, "train.parquet row 0")
    assert check_row({"reward_model": {"ground_truth": "2"}}, "x") == "2"
