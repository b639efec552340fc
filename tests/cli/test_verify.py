"""The CLI as a contract: exit codes and output."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rlvr.cli.app import app

runner = CliRunner()


def test_correct_exits_zero() -> None:
    r = runner.invoke(app, ["verify", "--gold", "1/2", r"\boxed{0.5}"])
    assert r.exit_code == 0 and "correct" in r.output


def test_wrong_exits_one_with_json() -> None:
    r = runner.invoke(app, ["verify", "--gold", "3", "--json", r"\boxed{4}"])
    assert r.exit_code == 1
    d = json.loads(r.output)
    assert d["status"] == "wrong" and d["extracted"] == "4" and d["correct"] is False


def test_stdin_and_no_answer() -> None:
    r = runner.invoke(app, ["verify", "--gold", "3", "--strict", "--json", "-"], input="no idea here")
    assert r.exit_code == 1 and json.loads(r.output)["status"] == "no_answer"


def test_missing_gold_is_usage_error() -> None:
    r = runner.invoke(app, ["verify", "x"])
    assert r.exit_code == 2


def test_demo_runs_and_shows_both_deaths() -> None:
    r = runner.invoke(app, ["verify-demo"])
    assert r.exit_code == 0
    assert "no_answer" in r.output and "wrong" in r.output and "correct" in r.output


def test_code_and_instruction_tasks_take_a_json_gold_or_a_file(tmp_path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"entry_point": "f", "cases": [{"args": [3], "result": 9}]}))
    program = "```python\ndef f(x): return x*x\n```"
    r = runner.invoke(app, ["verify", "--task", "code", "--gold", f"@{spec}", "--json", program])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["status"] == "correct" and d["method"] == "execution" and d["details"]["passed"] == 1
    r = runner.invoke(app, ["verify", "--task", "instruction", "--gold", '{"json": true}', "--json", "plain words"])
    assert r.exit_code == 1 and json.loads(r.output)["status"] == "no_answer"


def test_unknown_task_and_missing_gold_file_are_usage_errors(tmp_path) -> None:
    r = runner.invoke(app, ["verify", "--task", "poetry", "--gold", "1", "x"])
    assert r.exit_code == 2 and "known tasks" in r.output
    r = runner.invoke(app, ["verify", "--task", "code", "--gold", f"@{tmp_path}/none.json", "x"])
    assert r.exit_code == 2 and "none.json" in r.output
