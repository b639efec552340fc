"""``rlvr sample``: K verified completions per prompt, the filters, the summary, bad rows, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlvr.cli.app import app

runner = CliRunner()
PROMPTS = [
    {"question": f"{a}+{b}", "answer": str(a + b)}
    for a, b in [(1, 2), (3, 4), (2, 2), (5, 1), (0, 7), (4, 4), (6, 2), (1, 1), (3, 3), (2, 5)]
]


def _data(tmp_path: Path) -> Path:
    lines = (
        [json.dumps(r) for r in PROMPTS[:4]]
        + ["{not json", json.dumps({"question": "no gold"})]
        + [json.dumps(r) for r in PROMPTS[4:]]
    )
    p = tmp_path / "prompts.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def _sample(model: Path, data: Path, out: Path, *extra: str):
    return runner.invoke(
        app,
        [
            "sample",
            str(model),
            "--data",
            str(data),
            "--out",
            str(out),
            "-k",
            "4",
            "--max-new-tokens",
            "20",
            "--batch-prompts",
            "3",
            *extra,
        ],
    )


def _rows(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text().splitlines()]


def test_every_completion_is_verified_and_the_kept_ones_are_correct(warm_tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    r = _sample(warm_tiny, _data(tmp_path), out)
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "prompts.jsonl:5: skipped" in text and "prompts.jsonl:6: skipped" in text  # reported by line
    rows = _rows(out)
    assert len(rows) == 10 * 4 and {r["sample"] for r in rows} == {0, 1, 2, 3}
    for row in rows:
        assert {"prompt", "gold", "completion", "verdict", "components", "cause", "kept", "total"} <= set(row)
        assert row["kept"] == (row["dropped"] is None)
        if row["kept"]:
            assert row["verdict"]["status"] == "correct" and row["finish"] == "eos"
    kept = sum(r["kept"] for r in rows)
    correct = sum(r["verdict"]["status"] == "correct" for r in rows)
    assert 0 < kept <= correct  # the warmed-up model solves some 1-digit sums
    assert "pass@1" in text and "pass@4" in text and f"{correct / 40:.3f}" in text
    # only the kept, at most one per prompt
    only = tmp_path / "kept.jsonl"
    r = _sample(warm_tiny, _data(tmp_path), only, "--keep", "correct", "--max-kept", "1")
    assert r.exit_code == 0, r.output
    kept_rows = _rows(only)
    assert kept_rows and all(r["kept"] for r in kept_rows)
    assert len({r["prompt_id"] for r in kept_rows}) == len(kept_rows)


def test_a_killed_run_resumes_to_the_same_file(warm_tiny: Path, tmp_path: Path) -> None:
    data = _data(tmp_path)
    full = tmp_path / "full.jsonl"
    assert _sample(warm_tiny, data, full).exit_code == 0
    reference = _rows(full)
    # what a kill in the second batch leaves: the first batch whole and marked done, part of the
    # second written (one line torn), the second not marked
    cut = tmp_path / "cut.jsonl"
    first = [r for r in reference if r["prompt_id"] in {r["prompt_id"] for r in reference[:12]}]
    lines = [json.dumps(r) for r in first] + [json.dumps(r) for r in reference[12:17]]
    cut.write_text("\n".join(lines) + '\n{"prompt_id": "add-')
    (tmp_path / "cut.jsonl.done").write_text("".join(f"{p}\n" for p in dict.fromkeys(r["prompt_id"] for r in first)))
    r = _sample(warm_tiny, data, cut)
    assert r.exit_code == 2 and "--resume" in r.output  # never overwritten silently
    r = _sample(warm_tiny, data, cut, "--resume")
    assert r.exit_code == 0, r.output
    assert "3 prompts resumed" in " ".join(r.output.split())
    assert _rows(cut) == reference


def test_a_bad_model_or_data_is_a_clear_error(tmp_path: Path, warm_tiny: Path) -> None:
    r = _sample(tmp_path / "nowhere", _data(tmp_path), tmp_path / "o.jsonl")
    assert r.exit_code == 2 and "nowhere" in r.output
    r = _sample(warm_tiny, tmp_path / "missing.jsonl", tmp_path / "o.jsonl")
    assert r.exit_code == 2 and "missing.jsonl" in r.output
    r = _sample(warm_tiny, _data(tmp_path), tmp_path / "o.jsonl", "--keep", "some")
    assert r.exit_code == 2 and "--keep" in r.output


@pytest.mark.parametrize("spec", ["task:addition?size=6&seed=3&max_operand=9"])
def test_synthetic_task_prompts(warm_tiny: Path, tmp_path: Path, spec: str) -> None:
    out = tmp_path / "t.jsonl"
    r = runner.invoke(
        app, ["sample", str(warm_tiny), "--data", spec, "--out", str(out), "-k", "2", "--max-new-tokens", "8"]
    )
    assert r.exit_code == 0, r.output
    rows = _rows(out)
    assert len(rows) == 12 and all(int(r["gold"]) <= 18 for r in rows)


def test_the_trace_rewards_refuse_the_last_number_fallback_when_strict_and_weigh_only_accuracy() -> None:
    from rlvr.traces import trace_rewards

    loose, strict = trace_rewards(strict=False), trace_rewards(strict=True, think=True, language=True)
    text = "I added them and got 7"
    (lb,) = loose.breakdown([text], gold=["7"], task=["math"])
    (sb,) = strict.breakdown([text], gold=["7"], task=["math"])
    assert lb.verdict.status == "correct" and sb.verdict.status == "no_answer"
    assert sb.weights == {"accuracy": 1.0, "format": 0.0, "language_consistency": 0.0}
    assert "language_consistency" in sb.components and sb.total == sb.components["accuracy"]
