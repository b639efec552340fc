"""The data behind each plot and table of ``rlvr report``, from synthetic run folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.report import data
from rlvr.report.data import load_run


def write_run(d: Path, *, torn: bool = False) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    lines = [{"step": 0, "eval/accuracy": 0.25}]
    for s in range(1, 5):
        lines.append(
            {
                "step": s,
                "reward/total/mean": 0.1 * s,
                "reward/accuracy/mean": 0.1 * s,
                "reward/accuracy/std": 0.05,
                "reward/format/mean": 1.0,
                "reward/format/std": None,
                "causes/no_answer": 0.5 - 0.1 * s,
                "causes/wrong": 0.3,
                "causes/truncated": 0.1,
                "causes/invalid": 0.0,
                "completions/mean_length": 10.0 + s,
                "completions/p90_length": 20.0,
                "loss/clipfrac": 0.01 * s,
                "loss/approx_kl": None,
                "grad_norm": 1.0,
                "failure/cold_start_ended": 1.0 if s == 3 else 0.0,
                "alarms/multiple_answers": 0.0,
            }
        )
    lines.append({"step": 4, "eval/accuracy": 0.5})
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    if torn:
        text += '{"step": 5, "reward/to'
    (d / "metrics.jsonl").write_text(text)
    rollouts = [
        {
            "step": 1,
            "prompt_id": "p1",
            "task": "math",
            "prompt": "1+1",
            "gold": "2",
            "completion": "it is 3, so 3.",
            "cause": "wrong",
            "verdict": {"status": "wrong", "extracted": "3", "reason": "'3' differs"},
            "total": 0.0,
        },
        {
            "step": 2,
            "prompt_id": "p2",
            "task": "math",
            "prompt": "2+2",
            "gold": "4",
            "completion": "no idea",
            "cause": "no_answer",
            "verdict": {"status": "no_answer", "extracted": "", "reason": "nothing"},
            "total": 0.0,
        },
        {
            "step": 2,
            "prompt_id": "p2",
            "task": "code",
            "prompt": "f",
            "gold": "{}",
            "completion": "x",
            "cause": "correct",
            "verdict": {"status": "correct", "extracted": "x"},
            "total": 1.0,
        },
        {
            "step": 2,
            "prompt_id": "p3",
            "task": "math",
            "prompt": "3+3",
            "gold": "6",
            "completion": "<answer>5",
            "cause": "truncated",
            "verdict": {"status": "wrong", "extracted": "5"},
            "total": 0.0,
            "replaced": True,
        },
    ]
    (d / "rollouts.jsonl").write_text("\n".join(json.dumps(r) for r in rollouts) + "\n")
    (d / "quarantine.jsonl").write_text(json.dumps({"prompt_id": "p2", "step": 2, "reason": "3 dead groups"}) + "\n")
    return d


def test_a_run_is_read_with_its_evals_steps_and_files(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "r"))
    assert [m["step"] for m in run.steps] == [1, 2, 3, 4]
    assert run.evals == [(0, 0.25), (4, 0.5)]
    assert len(run.rollouts) == 4 and run.quarantine[0]["prompt_id"] == "p2"
    assert run.notes == []


def test_a_cut_off_last_line_is_skipped_and_said(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "r", torn=True))
    assert [m["step"] for m in run.steps] == [1, 2, 3, 4]
    assert any("cut off" in n for n in run.notes)


def test_a_broken_middle_line_names_file_and_line(tmp_path: Path) -> None:
    d = write_run(tmp_path / "r")
    lines = (d / "metrics.jsonl").read_text().splitlines()
    lines[2] = "{oops"
    (d / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"metrics.jsonl:3"):
        load_run(d)


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a training run"):
        load_run(tmp_path)


def test_reward_components_have_mean_and_band_with_total_first(tmp_path: Path) -> None:
    comps = data.reward_components(load_run(write_run(tmp_path / "r")))
    assert list(comps) == ["total", "accuracy", "format"]
    steps, mean, lo, hi = comps["accuracy"]
    assert steps == [1, 2, 3, 4] and mean == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert lo == pytest.approx([0.05, 0.15, 0.25, 0.35]) and hi == pytest.approx([0.15, 0.25, 0.35, 0.45])
    assert comps["format"][2] == comps["format"][3] == [1.0] * 4  # an unknown std draws no band


def test_bands_stay_inside_what_a_reward_can_take() -> None:
    from rlvr.diagnostics.stats import reward_stats

    run = data.RunData(
        name="r",
        path=Path("."),
        steps=[
            {"step": 1, **reward_stats("accuracy", [1.0] * 60 + [0.0] * 4), **reward_stats("cosine", [0.9, -0.5, 0.8])},
            {"step": 2, **reward_stats("accuracy", [0.0] * 64), **reward_stats("cosine", [-0.5, -0.4])},
        ],
    )
    comps = data.reward_components(run)
    _, mean, lo, hi = comps["accuracy"]
    assert mean == pytest.approx([60 / 64, 0.0])
    assert all(0.0 <= a <= m <= b <= 1.0 for a, m, b in zip(lo, mean, hi))  # mean +- std would reach 1.18 and -0
    assert lo[1] == 0.0 and 0 < hi[1] < 0.05 and hi[0] < 1.0  # a proportion's interval, not a point
    _, mean, lo, hi = comps["cosine"]
    assert lo[0] >= -0.5 and hi[0] <= 0.9 and lo[1] >= -0.5 and hi[1] <= -0.4  # clipped to the values seen


def test_death_rates_and_the_cold_start_switch(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "r"))
    steps, rates = data.death_rates(run)
    assert steps == [1, 2, 3, 4]
    assert rates["no_answer"] == pytest.approx([0.4, 0.3, 0.2, 0.1]) and rates["wrong"] == [0.3] * 4
    assert data.cold_start_switches(run) == [3]


def test_series_skip_missing_values(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "r"))
    assert data.series(run, "loss/approx_kl") == ([], [])
    assert data.series(run, "completions/mean_length") == ([1, 2, 3, 4], [11.0, 12.0, 13.0, 14.0])


def test_cause_table_alarms_and_samples(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "r"))
    table = data.causes_by_task(run)
    assert table is not None and table.by_task["math"]["wrong"] == 1 and table.by_task["all"]["correct"] == 1
    assert [a[0] for a in data.alarms(run)] == [
        "multiple_answers",
        "answer_in_reasoning",
        "format_without_accuracy",
        "code_tamper",
        "grader_talk",
    ]
    samples = data.failed_samples(run)
    assert set(samples) == {"wrong", "no_answer"}  # replaced rollouts are not shown as the run's failures
    wrong = samples["wrong"][0]
    assert (wrong["before"], wrong["answer"], wrong["after"]) == ("it is 3, so ", "3", ".")
    assert samples["no_answer"][0]["answer"] == ""


def test_highlight_uses_the_last_occurrence() -> None:
    assert data.highlight("7 then 7!", "7") == ("7 then ", "7", "!")
    assert data.highlight("abc", "z") == ("abc", "", "")


def test_smoothing_keeps_short_series_and_averages_long_ones() -> None:
    from rlvr.report.figures import smooth

    assert smooth([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    ys = [float(i % 2) for i in range(600)]  # alternating 0/1: the trend is 0.5
    out = smooth(ys)
    assert len(out) == 600 and all(abs(v - 0.5) < 0.1 for v in out[10:-10])
