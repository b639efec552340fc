"""Instruction following: JSON extraction, schema, regex, length constraints, each reported."""

from __future__ import annotations

import pytest

from rlvr.rewards import build_reward
from rlvr.types import Method, Status
from rlvr.verify.instruction import extract_json, verify_instruction
from rlvr.verify.registry import verify

PERSON = {
    "schema": {
        "type": "object",
        "required": ["name", "age"],
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    }
}


@pytest.mark.parametrize(
    "text, value",
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure:\n```json\n{"a": 2}\n```\nHope it helps', {"a": 2}),
        ('The result is {"a": 3} and then {"b": [1, 2]} done.', {"b": [1, 2]}),
        ("[1, 2, 3]", [1, 2, 3]),
        ('prefix {broken {"ok": true}', {"ok": True}),
    ],
)
def test_json_is_found_fenced_bare_or_embedded(text: str, value: object) -> None:
    assert extract_json(text) == (True, value)


def test_no_json_is_a_format_death() -> None:
    v = verify_instruction("<answer>name: Ann</answer>", PERSON)
    assert v.status is Status.NO_ANSWER and v.format_death


def test_schema_violations_are_wrong_with_the_path() -> None:
    ok = verify_instruction('<think>hm</think><answer>{"name": "Ann", "age": 3}</answer>', PERSON)
    assert ok.status is Status.CORRECT and ok.method is Method.CONSTRAINT
    bad = verify_instruction('<answer>{"name": "Ann", "age": -1}</answer>', PERSON)
    assert bad.status is Status.WRONG and "age" in bad.reason
    missing = verify_instruction('{"name": "Ann"}', PERSON)
    assert missing.status is Status.WRONG and "'age' is a required property" in missing.reason


def test_several_constraints_each_reported() -> None:
    gold = {"regex": r"^Dear", "not_regex": r"(?i)lorem", "max_words": 6, "contains": ["thanks"], "lowercase": False}
    v = verify_instruction("<answer>Dear Bob, thanks for lunch.</answer>", gold)
    assert v.status is Status.CORRECT and v.details["total"] == 4
    v = verify_instruction("<answer>Hi Bob, lorem ipsum dolor sit amet and more.</answer>", gold)
    names = {c["name"]: c["ok"] for c in v.details["constraints"]}
    assert v.status is Status.WRONG
    assert names == {"regex ^Dear": False, "not_regex (?i)lorem": False, "max_words": False, "contains thanks": False}
    assert v.details["pass_fraction"] == 0.0


def test_word_counts_treat_cjk_characters_as_words() -> None:
    assert verify_instruction("<answer>你好世界</answer>", {"max_words": 3}).status is Status.WRONG
    assert verify_instruction("<answer>你好世界</answer>", {"min_words": 4, "max_lines": 1}).status is Status.CORRECT


@pytest.mark.parametrize(
    "bad", [{}, {"colour": "red"}, {"regex": "("}, {"schema": {"type": "nonsense"}}, {"max_words": -1}, "{oops"]
)
def test_bad_constraints_are_bad_gold(bad: object) -> None:
    assert verify_instruction("<answer>x</answer>", bad).status is Status.BAD_GOLD


def test_registered_and_rewarded() -> None:
    assert verify('{"name": "A", "age": 1}', PERSON, task="json").correct
    reward = build_reward("instruction")
    comps = ['{"name": "A", "age": 1}', '{"name": "A"}', "no json"]
    assert reward(comps, constraints=[PERSON] * 3) == [1.0, 0.0, 0.0]
    partial = build_reward("instruction", partial=True)
    gold = {"json": True, "contains": ["zebra"]}
    assert partial(['{"a": 1}'], constraints=[gold]) == [0.5]
    assert reward(["x"], constraints=[{"colour": 1}]) == [None]
