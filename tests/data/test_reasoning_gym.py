"""reasoning-gym datasets as a data source, scored by each dataset's own score_answer as rlvr verdicts."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("reasoning_gym")

from rlvr.data.datasets import load_samples
from rlvr.data.reasoning_gym import parse_spec
from rlvr.errors import DataError
from rlvr.rewards import Total
from rlvr.types import Status
from rlvr.verify.registry import verify


def test_spec_parsing() -> None:
    assert parse_spec("reasoning-gym:chain_sum,leg_counting?size=8&seed=3&min_terms=2&allow_x=true") == (
        ["chain_sum", "leg_counting"],
        {"size": 8, "seed": 3, "min_terms": 2, "allow_x": True},
    )
    with pytest.raises(DataError, match="name a dataset"):
        parse_spec("reasoning-gym:?size=3")


def test_rows_are_reproducible_mixed_and_tabled_per_dataset() -> None:
    spec = "reasoning-gym:chain_sum,leg_counting?size=3&seed=1"
    rows = load_samples(spec)
    assert [s.task for s in rows] == ["reasoning_gym/chain_sum", "reasoning_gym/leg_counting"] * 3
    assert [s.gold for s in rows] == [s.gold for s in load_samples(spec)]
    assert "<answer>" in rows[0].prompt[-1]["content"]
    with pytest.raises(DataError, match="no dataset 'no_such_set'"):
        load_samples("reasoning-gym:no_such_set")
    with pytest.raises(DataError, match="refused options"):
        load_samples("reasoning-gym:chain_sum?min_terms=9&max_terms=2")


def test_verdicts_from_score_answer() -> None:
    s = load_samples("reasoning-gym:chain_sum?size=1&seed=1")[0]
    answer = json.loads(s.gold)["entry"]["answer"]
    right = verify(f"so <answer>{answer}</answer>", s.gold, s.task)
    assert right.status is Status.CORRECT and right.details["score"] == 1.0
    assert verify("I think it is 3", s.gold, s.task).status is Status.NO_ANSWER  # a format death
    wrong = verify("<answer>123456789</answer>", s.gold, s.task)
    assert wrong.status is Status.WRONG and wrong.details["score"] == 0.0
    assert verify("<answer>1</answer>", "{not json", s.task).status is Status.BAD_GOLD


def test_partial_scores_are_wrong_with_the_score_and_a_reward_component() -> None:
    # the base scorer gives len(oracle)/len(answer) when the oracle is inside a longer answer
    s = load_samples("reasoning-gym:leg_counting?size=1&seed=2")[0]
    answer = json.loads(s.gold)["entry"]["answer"]
    v = verify(f"<answer>{answer} legs</answer>", s.gold, s.task)
    assert v.status is Status.WRONG and 0 < v.details["score"] < 1
    total = Total({"accuracy": 1.0, "partial_score": 1.0})
    bd = total.breakdown([f"<answer>{answer} legs</answer>"], gold=[s.gold], task=[s.task])[0]
    assert bd.components["accuracy"] == 0.0 and bd.components["partial_score"] == pytest.approx(v.details["score"])


def test_a_scorer_that_raises_is_error_and_one_that_hangs_is_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from rlvr.verify import reasoning_gym as rgv

    s = load_samples("reasoning-gym:chain_sum?size=1&seed=1")[0]
    ds = rgv._dataset("chain_sum", json.dumps(json.loads(s.gold)["options"], sort_keys=True))

    def boom(answer, entry):
        raise KeyError("metadata")

    monkeypatch.setattr(ds, "score_answer", boom)
    v = verify("<answer>1</answer>", s.gold, s.task)
    assert v.status is Status.ERROR and "KeyError" in v.reason

    def slow(answer, entry):
        while True:
            time.sleep(0.01)

    monkeypatch.setattr(ds, "score_answer", slow)
    v = verify("<answer>1</answer>", s.gold, s.task, timeout=0.3)
    assert v.status is Status.TIMEOUT


def test_mixed_task_training_tables_deaths_per_dataset(tmp_path) -> None:
    from typer.testing import CliRunner

    from rlvr.cli.app import app

    runner = CliRunner()
    run = tmp_path / "run"
    sets = [
        "model.name=tiny",
        "data.task=null",
        "data.path=reasoning-gym:chain_sum,leg_counting?size=6&seed=1",
        "data.eval_path=reasoning-gym:chain_sum,leg_counting?size=2&seed=99",
        "run.steps=2",
        "rollout.prompts_per_step=2",
        "rollout.group_size=2",
        "rollout.max_new_tokens=8",
        f"run.out_dir={run}",
        "rewards.weights={accuracy: 1.0, partial_score: 0.5, format: 0.1}",
    ]
    r = runner.invoke(app, ["train", *[x for s in sets for x in ("--set", s)]])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
    assert {r["task"] for r in rows} == {"reasoning_gym/chain_sum", "reasoning_gym/leg_counting"}
    assert all("partial_score" in r["components"] for r in rows)
    from rlvr.report.table import cause_table

    by_task = cause_table(rows, 5).by_task  # what `rlvr causes` prints, one line per dataset
    assert {"reasoning_gym/chain_sum", "reasoning_gym/leg_counting", "all"} <= set(by_task)
    assert runner.invoke(app, ["causes", str(run)]).exit_code == 0
