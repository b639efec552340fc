"""``rlvr sft --data`` rows: rlvr sample's traces, prompt/completion and messages rows; bad rows named by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.data.sft_rows import load_sft_rows
from rlvr.errors import DataError


def _write(tmp_path: Path, rows: list) -> Path:
    p = tmp_path / "sft.jsonl"
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def test_the_three_layouts(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        [
            {
                "prompt_id": "p1",
                "prompt": [{"role": "user", "content": "1+2"}],
                "gold": "3",
                "completion": "<answer>3</answer>",
                "kept": True,
                "task": "math",
            },
            {
                "prompt_id": "p1",
                "prompt": [{"role": "user", "content": "1+2"}],
                "gold": "3",
                "completion": "4",
                "kept": False,
            },
            {"prompt": "2+2", "completion": [{"role": "assistant", "content": "<answer>4</answer>"}], "answer": 4},
            {
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"},
                ]
            },
        ],
    )
    rows = load_sft_rows(p)
    assert [s.extra["kept"] for s in rows] == [True, False, True, True]
    assert rows[0].id == "p1" and rows[0].gold == "3" and rows[0].extra["completion"] == "<answer>3</answer>"
    assert rows[2].prompt == [{"role": "user", "content": "2+2"}] and rows[2].gold == "4"
    assert rows[2].extra["completion"] == "<answer>4</answer>"
    assert rows[3].prompt[-1] == {"role": "user", "content": "hi"} and rows[3].extra["completion"] == "hello"
    assert not rows[3].extra["has_gold"]


@pytest.mark.parametrize(
    "bad,why",
    [
        ("{oops", "sft.jsonl:2: not valid JSON"),
        ([1, 2], "sft.jsonl:2: a JSON list"),
        ({"question": "1+1"}, "sft.jsonl:2: neither prompt/completion nor messages"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "must end with an assistant turn"),
        ({"prompt": "x", "completion": "  "}, "sft.jsonl:2: the completion is empty"),
        ({"prompt": 3, "completion": "a"}, "prompt must be a string or a list"),
    ],
)
def test_a_bad_row_is_an_error_naming_its_line(tmp_path: Path, bad, why: str) -> None:
    p = _write(tmp_path, [{"prompt": "a", "completion": "b"}, bad])
    with pytest.raises(DataError, match=why.replace("(", r"\(")):
        load_sft_rows(p)


def test_nothing_to_learn_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no rows to learn from"):
        load_sft_rows(_write(tmp_path, [{"prompt": "a", "completion": "b", "kept": False}]))
    with pytest.raises(DataError, match="no such file"):
        load_sft_rows(tmp_path / "missing.jsonl")
