"""Quarantine: counted on hand-made groups; a quarantined prompt is never sampled again; readmission."""

import json

import pytest
from typer.testing import CliRunner

from rlvr.cli.app import app
from rlvr.diagnostics import quarantine as q
from rlvr.diagnostics.causes import Cause

INV, W, T = Cause.INVALID, Cause.WRONG, Cause.TRUNCATED


def test_consecutive_and_total_rules():
    qu = q.Quarantine(consecutive=2, total=3)
    assert not qu.observe("a", [INV, INV], 1)
    assert not qu.observe("a", [INV, W], 2)  # one live rollout: the streak resets
    assert not qu.observe("a", [INV, INV], 3)
    assert qu.observe("a", [INV, INV], 4) and "a" in qu and qu.entries["a"]["reason"] == "2 dead groups in a row"
    qu2 = q.Quarantine(consecutive=9, total=2)
    qu2.observe("b", [INV], 1)
    qu2.observe("b", [W], 2)
    assert qu2.observe("b", [INV], 3) and qu2.entries["b"]["reason"] == "2 dead groups in total"
    assert not q.Quarantine(consecutive=1).observe("c", [T, T], 1)  # truncated is not 'dying' by default
    assert q.Quarantine(consecutive=1, dying=frozenset({T})).observe("c", [T, T], 1)


def test_file_round_trip_and_readmit(tmp_path):
    qu = q.Quarantine(consecutive=1)
    qu.observe("a", [INV], 3, [{"completion": "", "cause": "invalid"}])
    qu.observe("b", [INV], 5)
    qu.write(tmp_path)
    again = q.Quarantine()
    again.load({}, tmp_path, upto_step=4)  # resuming from step 4: b was quarantined after it
    assert "a" in again and "b" not in again
    assert q.readmit(tmp_path, ["a", "zz"]) == ["a"]
    assert [e["prompt_id"] for e in q.read(tmp_path)] == ["b"]
    r = CliRunner().invoke(app, ["quarantine", str(tmp_path)])
    assert r.exit_code == 0 and "1 quarantined prompt" in r.output and "b" in r.output
    r = CliRunner().invoke(app, ["quarantine", str(tmp_path), "--readmit", "b"])
    assert r.exit_code == 0 and "readmitted: b" in r.output and q.read(tmp_path) == []


def test_trainer_never_samples_a_quarantined_prompt(tmp_path):
    pytest.importorskip("torch")
    from rlvr.config import load_config
    from rlvr.data.tasks import Sample
    from rlvr.engine.trainer import GRPOTrainer
    from rlvr.errors import DataError

    # an untrained model given 2 new tokens never answers: every group dies, both prompts leave
    # training one after the other, and then the trainer stops with a clear error
    rows = [
        Sample([{"role": "user", "content": "1+1"}], "2", "math", "one"),
        Sample([{"role": "user", "content": "2+2"}], "4", "math", "two"),
    ]
    cfg = load_config(
        None,
        [
            "model.hidden=32",
            "model.layers=1",
            "model.heads=2",
            "rollout.prompts_per_step=1",
            "rollout.group_size=2",
            "rollout.max_new_tokens=2",
            "run.steps=6",
            "run.eval_every=0",
            f"run.out_dir={tmp_path}",
            "failure.quarantine_consecutive=1",
            "failure.quarantine_causes=[invalid, truncated, no_answer, wrong]",
            "rewards.weights={format: 1.0}",
            "rewards.options={format: {think_tag: null}}",
        ],
    )
    trainer = GRPOTrainer(cfg, train_rows=rows, eval_rows=[])
    with pytest.raises(DataError, match="every training row is quarantined"):
        trainer.train()
    quarantined = [e["prompt_id"] for e in q.read(tmp_path)]
    assert sorted(quarantined) == ["one", "two"]
    seen = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    for pid in quarantined:
        when = next(e["step"] for e in q.read(tmp_path) if e["prompt_id"] == pid)
        assert not [r for r in seen if r["prompt_id"] == pid and r["step"] > when]
