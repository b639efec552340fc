"""What the program sends back is untrusted: reading it never raises and never stalls the verifier."""

from __future__ import annotations

import json

import pytest

from rlvr.types import Status
from rlvr.verify.code import sandbox
from rlvr.verify.code._harness import encode, load_plain
from rlvr.verify.code.asserts import Check, evaluate
from rlvr.verify.code.verifier import _read_report, verify_code

COLLIDING = [k * (2**61 - 1) for k in range(1, 2000)]  # every one hashes to 0


@pytest.mark.parametrize(
    "text",
    [
        "Infinity",
        "-Infinity",
        "NaN",
        '{"int": Infinity}',
        '{"int": "1e5"}',
        '{"float": "1.5"}',
        '{"tuple": 3}',
        '{"set": [[1]]}',
        '{"a": 1, "b": 2}',
        '{"nope": []}',
        "[" * 5000 + "]" * 5000,
        '{"dict": [[1]]}',
        '{"ref": 0}',
        json.dumps({"set": COLLIDING}),
        json.dumps({"dict": [[k, 0] for k in COLLIDING]}),
    ],
)
def test_anything_but_an_encoded_plain_value_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        load_plain(text)


def test_plain_values_round_trip() -> None:
    for value in [
        1,
        2**80,
        -0.5,
        float("inf"),
        "x",
        b"\x00",
        (1, [2, {3}]),
        {"a": frozenset({1})},
        {(1, 2): None},
        1 + 2j,
        list(range(1000)),
        set(range(500)),
    ]:
        assert load_plain(json.dumps(encode(value))) == value


def test_a_hostile_report_line_is_a_tamper_not_an_exception() -> None:
    lines = [b"n total 2", b'n result 0 {"int": Infinity}', b"n result 1 " + json.dumps({"set": COLLIDING}).encode()]
    rep = _read_report(sandbox.RunResult(returncode=0, results=b"\n".join(lines)), "n")
    assert rep.tamper.startswith("corrupted the harness's report") and rep.total == 2


def test_a_value_that_breaks_a_comparison_fails_the_check() -> None:
    check = Check("isclose", expected=1.0, tol={}, source="assert math.isclose(f(), 1.0)")
    ok, why = evaluate(check, 10**400)  # float(10**400) overflows inside math.isclose
    assert not ok and "OverflowError" in why


def test_a_program_returning_a_colliding_set_gets_a_verdict() -> None:
    spec = {"entry_point": "f", "cases": [{"args": [], "result": [1, 2]}]}
    code = "```python\ndef f():\n    return {k * (2**61 - 1) for k in range(1, 20000)}\n```"
    v = verify_code(code, spec, timeout=20)
    assert v.status is Status.WRONG and "collide" in v.reason


def test_a_reply_cut_at_the_output_limit_is_the_limit_not_a_tamper() -> None:
    spec = {"entry_point": "f", "cases": [{"args": [], "result": 1}]}
    v = verify_code("```python\ndef f():\n    return 'x' * 3_000_000\n```", spec, timeout=20)
    assert v.status is Status.WRONG and "tamper" not in v.details and "output limit" in v.reason, v.reason
