"""``rlvr score`` as a contract: output rows, malformed lines, never overwriting, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlvr.cli.app import app
from rlvr.rewards import Total
from rlvr.scoring import score_file

runner = CliRunner()

ROWS = [
    {"completion": "<think>2+2</think><answer>4</answer>", "answer": "4"},
    {"completion": "the answer is 5", "answer": "4"},
    "not json {",
    {"response": r"\boxed{1}", "gold": r"\frac{"},
    {"completion": "no gold here"},
    [1, 2],
    {"completion": "I cannot say", "answer": "4", "language": "en"},
]


def _write(path: Path, rows) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


@pytest.fixture
def rollouts(tmp_path: Path) -> Path:
    p = tmp_path / "rollouts.jsonl"
    _write(p, ROWS)
    return p


def test_score_writes_components_and_reports_bad_lines(rollouts: Path) -> None:
    before = rollouts.read_bytes()
    r = runner.invoke(app, ["score", str(rollouts), "--rewards", "accuracy,format", "-w", "format=0.1", "--jobs", "0"])
    assert r.exit_code == 0, r.output
    assert rollouts.read_bytes() == before  # the input is never written
    out = [json.loads(x) for x in (rollouts.parent / "rollouts.scored.jsonl").read_text().splitlines()]
    assert [o["line"] for o in out] == [1, 2, 4, 7]
    assert [o["score"]["verdict"]["status"] for o in out] == ["correct", "wrong", "bad_gold", "no_answer"]
    assert out[0]["score"]["components"] == {"accuracy": 1.0, "format": 1.0}
    assert out[0]["score"]["total"] == pytest.approx(1.1)
    assert out[3]["language"] == "en"  # input fields are kept
    for line, why in [(3, "not valid JSON"), (5, "no gold field"), (6, "a JSON list, expected an object")]:
        assert f"rollouts.jsonl:{line}: skipped: {why}" in r.output.replace("\n", "")
    assert "malformed lines" in r.output and "no_answer" in r.output


def test_refuses_to_overwrite(rollouts: Path) -> None:
    r = runner.invoke(app, ["score", str(rollouts), "--out", str(rollouts)])
    assert r.exit_code == 2 and "never overwrites its input" in r.output
    (rollouts.parent / "rollouts.scored.jsonl").write_text("{}\n")
    r = runner.invoke(app, ["score", str(rollouts)])
    assert r.exit_code == 2 and "--resume" in r.output
    r = runner.invoke(app, ["score", str(rollouts), "--rewards", "acuracy"])
    assert r.exit_code == 2 and "unknown reward 'acuracy'" in r.output


def test_resume_after_a_killed_run_keeps_rows_and_scores_each_line_once(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    _write(src, [{"completion": rf"\boxed{{{i}}}", "answer": str(i % 3)} for i in range(50)])
    out = tmp_path / "r.scored.jsonl"
    total = Total({"accuracy": 1.0})
    full = score_file(src, tmp_path / "ref.jsonl", total)
    # a run killed mid-write: 20 rows on disk and a torn 21st line
    ref_lines = (tmp_path / "ref.jsonl").read_text().splitlines()
    out.write_text("\n".join(ref_lines[:20]) + "\n" + ref_lines[20][:37])
    resumed = score_file(src, out, total, resume=True, chunk_rows=7)
    lines = [json.loads(x)["line"] for x in out.read_text().splitlines()]
    assert lines == list(range(1, 51))
    assert resumed.skipped_resumed == 20 and resumed.rows == 50
    assert resumed.means == full.means and resumed.statuses == full.statuses
    assert out.read_text() == (tmp_path / "ref.jsonl").read_text()
