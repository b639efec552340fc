"""Which traces are kept: verified correct, finished, format-valid / language-consistent on request,
no duplicates, the shortest under a cap, and every other row says why not."""

from __future__ import annotations

from rlvr.traces import KeepRules, keep_flags, summarize


def row(text: str, status: str = "correct", finish: str = "eos", **components: float) -> dict:
    return {
        "completion": text,
        "verdict": {"status": status},
        "finish": finish,
        "components": {"accuracy": float(status == "correct"), **components},
        "task": "math",
    }


def test_only_correct_finished_rows_are_kept_and_the_reason_is_given() -> None:
    rows = [
        row("<answer>4</answer>"),
        row("<answer>5</answer>", "wrong"),
        row("4", "no_answer"),
        row("<answer>4</ans", finish="length"),
    ]
    assert keep_flags(rows, KeepRules()) == [None, "not correct (wrong)", "not correct (no_answer)", "truncated"]
    assert keep_flags(rows, KeepRules(complete_only=False))[3] is None


def test_duplicates_and_the_cap_keep_the_shortest() -> None:
    rows = [row("a long correct answer 4"), row("4"), row("4"), row("mid 4")]
    flags = keep_flags(rows, KeepRules(max_per_prompt=2))
    assert flags == ["over the cap of 2 per prompt", None, "duplicate", None]
    assert keep_flags(rows, KeepRules(max_per_prompt=2, shortest_first=False)) == [
        None,
        None,
        "duplicate",
        "over the cap of 2 per prompt",
    ]
    assert keep_flags(rows, KeepRules(dedup=False)) == [None, None, None, None]


def test_format_and_language_filters_read_the_components() -> None:
    rows = [row("x", format=1.0, language_consistency=0.0), row("y", format=0.0, language_consistency=1.0)]
    assert keep_flags(rows, KeepRules(format_only=True)) == [None, "format not valid"]
    assert keep_flags(rows, KeepRules(language_only=True)) == ["language not consistent", None]


def test_summary_pass_at_1_and_k_per_task() -> None:
    a = [row("1") | {"kept": True}, row("2", "wrong"), row("3", "no_answer")]
    b = [row("4", "wrong"), row("5", "wrong"), row("6", "wrong")]
    for r, c in zip(a + b, ["correct", "wrong", "no_answer", "wrong", "wrong", "wrong"], strict=True):
        r["cause"] = c
    s = summarize([a, b])["math"]
    assert (s.prompts, s.completions, s.correct, s.kept) == (2, 6, 1, 1)
    assert s.pass_at_1 == 1 / 6 and s.pass_at_k == 0.5
    assert s.causes == {"wrong": 4, "correct": 1, "no_answer": 1}
