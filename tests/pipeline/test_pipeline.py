"""``rlvr pipeline``: stages checked before anything runs, run in order into one folder, skipped once
finished, measured side by side; a failed stage keeps the ones before it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from rlvr.cli.app import app
from rlvr.errors import ConfigError
from rlvr.pipeline import load_pipeline
from rlvr.pipeline.stages import command

runner = CliRunner()
EVAL = "task:addition?split=test&size=8&max_operand=9"
GRPO_SET = [
    "data.task_options={max_operand: 9}",
    "data.eval_size=8",
    "rollout.prompts_per_step=2",
    "rollout.group_size=4",
    "rollout.max_new_tokens=32",
    "run.eval_every=0",
    "run.save_every=1000",
]


def _write(tmp_path: Path, tree: dict) -> Path:
    p = tmp_path / "pipeline.yaml"
    p.write_text(yaml.safe_dump(tree))
    return p


def _tiny_pipeline(tmp_path: Path, zero_model: Path | str = "tiny") -> dict:
    return {
        "out_dir": str(tmp_path / "run"),
        "eval": {"data": EVAL, "max_new_tokens": 32, "constrain": "full", "answer": "integer"},
        "stages": [
            {
                "name": "zero",
                "kind": "grpo",
                "set": [
                    f"model.name={zero_model}",
                    "decoding.constrain=full",
                    "decoding.answer=integer",
                    "run.steps=3",
                    *GRPO_SET,
                ],
                "weights": {"accuracy": 1.0},
            },
            {
                "name": "traces",
                "kind": "sample",
                "model": "zero",
                "data": "task:addition?size=6&max_operand=9",
                "args": {
                    "per_prompt": 4,
                    "max_new_tokens": 32,
                    "constrain": "full",
                    "answer": "integer",
                    "complete_only": True,
                },
            },
            {
                "name": "cold",
                "kind": "sft",
                "model": "tiny",
                "data": "traces",
                "args": {"steps": 2, "batch_size": 4, "eval_share": 0.0},
            },
            {
                "name": "rl",
                "kind": "grpo",
                "model": "cold",
                "set": ["run.steps=2", *GRPO_SET],
                "weights": {"accuracy": 1.0, "format": [[0, 0.5], [1, 0.1]]},
            },
        ],
    }


@pytest.mark.parametrize(
    "change,why",
    [
        (lambda t: t["stages"].append(dict(t["stages"][0])), "two stages are named 'zero'"),
        (lambda t: t["stages"][1].update(model="cold"), "model 'cold' is a later stage"),
        (lambda t: t["stages"][2].update(data="zero"), "data 'zero' is a grpo stage"),
        (lambda t: t["stages"][3].update(model="traces"), "model 'traces' is a sample stage"),
        (lambda t: t["stages"][1].pop("data"), "needs model and data"),
        (lambda t: t["stages"][0]["set"].append("optim.lr=-1"), "stage 'zero': invalid config"),
        (lambda t: t["stages"][0].update(weights={"acuracy": 1.0}), "stage 'zero'"),
        (lambda t: t["stages"][0].update(kind="rl"), "stages.0.kind"),
        (lambda t: t["stages"][2].update(model="runs/nowhere"), "stage 'cold': model 'runs/nowhere' is neither"),
        (lambda t: t["stages"][2].update(data="missing.jsonl"), "stage 'cold': data 'missing.jsonl' is neither"),
        (lambda t: t["eval"].update(data="reasoning-gym:no_such_set"), "eval.data: reasoning-gym has no dataset"),
    ],
)
def test_a_bad_pipeline_is_refused_naming_the_stage_before_anything_runs(tmp_path: Path, change, why: str) -> None:
    tree = _tiny_pipeline(tmp_path)
    change(tree)
    with pytest.raises(ConfigError, match=why):
        load_pipeline(_write(tmp_path, tree))
    assert not (tmp_path / "run").exists()


def test_stage_commands_chain_the_folders(tmp_path: Path) -> None:
    cfg = load_pipeline(_write(tmp_path, _tiny_pipeline(tmp_path)))
    run = tmp_path / "run"
    zero, traces, cold, rl = (command(cfg, s) for s in cfg.stages)
    assert zero[0] == "train" and f"run.out_dir={run / 'zero'}" in zero
    assert 'rewards.weights={"accuracy": 1.0}' in zero and "rewards.options={}" in zero  # options follow weights
    assert traces[:2] == ["sample", str(run / "zero" / "model")] and str(run / "traces" / "traces.jsonl") in traces
    assert "--complete-only" in traces and traces[traces.index("--per-prompt") :][:2] == ["--per-prompt", "4"]
    assert cold[:6] == ["sft", str(run / "cold"), "--model", "tiny", "--data", str(run / "traces" / "traces.jsonl")]
    assert f"model.name={run / 'cold'}" in rl
    assert 'rewards.options={"format": {"think_tag": null}}' in rl  # the weighted format keeps its options


def test_the_pipeline_runs_in_order_skips_what_is_finished_and_reports(tmp_path: Path, warm_tiny: Path) -> None:
    p = _write(tmp_path, _tiny_pipeline(tmp_path, warm_tiny))  # a model that gets some sums right: traces
    r = runner.invoke(app, ["pipeline", str(p)])
    assert r.exit_code == 0, r.output
    run = tmp_path / "run"
    for name in ("zero", "traces", "cold", "rl"):
        assert (run / name / "stage.json").exists()
    assert (run / "zero" / "model" / "config.json").exists() and (run / "cold" / "config.json").exists()
    assert (run / "rl" / "metrics.jsonl").exists() and (run / "pipeline.png").stat().st_size > 5_000
    report = json.loads((run / "report.json").read_text())["stages"]
    assert [s["stage"] for s in report] == [f"start ({warm_tiny})", "zero", "traces", "cold", "rl"]
    for s in report:
        if s["kind"] != "sample":
            assert 0 <= s["accuracy"] <= 1 and s["format_deaths"] + s["verification_deaths"] + s["accuracy"] <= 1
            assert "constrained_accuracy" in s and s["mean_tokens"] > 0
    assert report[2]["sampled"]["completions"] == 6 * 4
    text = " ".join(r.output.split())
    assert "held-out" in text and "rl" in text
    # again: every stage is skipped, the report is rebuilt from the records
    before = (run / "zero" / "stage.json").read_text()
    r = runner.invoke(app, ["pipeline", str(p)])
    assert r.exit_code == 0, r.output
    assert " ".join(r.output.split()).count("finished already") == 4
    assert (run / "zero" / "stage.json").read_text() == before


def test_a_failed_stage_keeps_the_ones_before_it(tmp_path: Path, warm_tiny: Path) -> None:
    tree = _tiny_pipeline(tmp_path, warm_tiny)
    tree["stages"] = tree["stages"][:3]
    tree["stages"][2]["args"]["lr"] = "not-a-number"  # refused by rlvr sft when the stage starts
    p = _write(tmp_path, tree)
    r = runner.invoke(app, ["pipeline", str(p)])
    assert r.exit_code == 2 and "stage 'cold' failed" in " ".join(r.output.split())
    run = tmp_path / "run"
    assert (run / "zero" / "stage.json").exists() and (run / "traces" / "stage.json").exists()
    assert not (run / "cold" / "stage.json").exists()


def test_a_stage_cut_short_is_continued_with_its_commands_resume(tmp_path: Path) -> None:
    cfg = load_pipeline(_write(tmp_path, _tiny_pipeline(tmp_path)))
    run = tmp_path / "run"
    zero, traces, cold, _ = cfg.stages
    assert "--resume" not in command(cfg, zero) + command(cfg, traces) + command(cfg, cold)
    (run / "zero" / "checkpoints").mkdir(parents=True)
    (run / "zero" / "checkpoints" / "latest").write_text("step-2")
    (run / "traces").mkdir()
    (run / "traces" / "traces.jsonl").write_text("")
    (run / "cold").mkdir()
    (run / "cold" / "sft.json").write_text("{}")
    assert command(cfg, zero)[-2:] == ["--resume", str(run / "zero")]
    assert command(cfg, traces)[-1] == "--resume" and command(cfg, cold)[-1] == "--resume"
