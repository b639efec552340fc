"""The benchmarks' bar lines: a bar one quick run cannot decide is a figure there, not a FAIL."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from results import Bar, summary


def test_a_bar_quick_mode_cannot_decide_is_a_figure_there_and_judged_in_the_full_run(tmp_path, capsys) -> None:
    noisy = Bar("accuracy difference", -0.04, ">=", 0.0, quick_decides=False)
    assert noisy.line("b", quick=True).startswith("FIGURE b: accuracy difference = -0.04")
    assert noisy.line("b", quick=False).startswith("FAIL b:")
    for quick, failed in ((True, 1), (False, 2)):
        rec = {
            "benchmark": "b",
            "quick": quick,
            "commit": "c",
            "bars": [
                {
                    "name": n.name,
                    "value": n.value,
                    "op": n.op,
                    "target": n.target,
                    "unit": n.unit,
                    "quick_decides": n.quick_decides,
                }
                for n in (noisy, Bar("speed", 0.9, "<=", 0.6, "x"))
            ],
        }
        (tmp_path / "b.json").write_text(json.dumps(rec))
        assert summary(tmp_path) == failed  # the speed bar fails in both modes; the figure only in full
    assert "FIGURE" in capsys.readouterr().out


def test_a_benchmark_that_failed_to_run_is_named_and_counted(tmp_path, capsys) -> None:
    rec = {"benchmark": "b", "quick": True, "commit": "c", "bars": []}
    (tmp_path / "b.json").write_text(json.dumps(rec))
    assert summary(tmp_path) == 0
    (tmp_path / "failed.txt").write_text("benchmarks/off_policy.py --quick\nbenchmarks/soak.py --quick\n")
    assert summary(tmp_path) == 2
    out = capsys.readouterr().out
    assert "FAILED TO RUN: benchmarks/off_policy.py --quick" in out and "FAILED TO RUN: benchmarks/soak.py" in out
