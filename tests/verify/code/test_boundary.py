"""What crosses the sandbox's boundary tells the truth: values judged by the expected value's type,
and every string the program sends back written as text any writer can encode."""

from __future__ import annotations

import json

import pytest

from rlvr.types import Status
from rlvr.verify.code.asserts import case_equal
from rlvr.verify.code.verifier import same_output, verify_code

BIG = 10**17 + 3  # a float cannot hold it: float(BIG) == 1e17


@pytest.mark.parametrize(
    ("got", "want", "tol", "same"),
    [
        (float(BIG), BIG, 1e-6, False),  # an integer is exact, whatever tolerance the task gives floats
        (BIG, BIG, 0.0, True),
        (3.0, 3, 0.0, True),  # the same number as a float: equal, exactly
        (3.0000001, 3, 1e-3, False),
        (0.1 + 0.2, 0.3, 0.0, True),  # an expected float: within 1e-9 at least
        (0.3001, 0.3, 1e-3, True),
        ([1.0, float(BIG)], [1, BIG], 1e-6, False),  # inside containers too
        ({"k": 2.5}, {"k": 2.5000001}, 1e-6, True),
    ],
)
def test_a_call_cases_tolerance_belongs_to_the_expected_value(got, want, tol, same) -> None:
    assert case_equal(got, want, tol) is same


@pytest.mark.parametrize(
    ("got", "want", "tol", "same"),
    [
        ("100000000000000000", "100000000000000003", 1e-6, False),  # integer tokens: only themselves
        ("1e17", "100000000000000003", 1e-6, False),
        ("3.0", "3", 1e-3, False),
        ("0.3333333", "0.33333333", 1e-6, True),  # float tokens: within the tolerance
        ("3.3e-1", "0.33", 1e-9, True),
        ("2.5 7", "2.5000001 7", 1e-6, True),
        ("2.5 8", "2.5000001 7", 1e-6, False),
        ("nan", "1.5", 1e-3, False),
    ],
)
def test_stdout_tolerance_applies_to_the_tokens_written_as_floats(got, want, tol, same) -> None:
    assert same_output(got, want, tol) is same


def test_a_float_near_an_exact_integer_scores_wrong_in_every_form() -> None:
    prog = f"```python\ndef big(n):\n    return float({BIG})\n```"
    call = {"entry_point": "big", "cases": [{"args": [1], "result": BIG}], "float_tol": 1e-6}
    compiled = {"tests": f"def check(candidate):\n    assert candidate(1) == {BIG}\n", "entry_point": "big"}
    io = {"cases": [{"input": "1\n", "output": f"{BIG}\n"}], "float_tol": 1e-6}
    io_prog = f"```python\nprint('%.0f' % float({BIG}))\n```"
    for spec, code in ((call, prog), (compiled, prog), (io, io_prog)):
        assert verify_code(code, spec, timeout=20).status == Status.WRONG, spec


SURROGATE_PROGRAMS = {
    "an exception's message": "def add(a, b):\n    raise ValueError('bad \\ud800 input')\n",
    "an exception class's name": "class E(Exception):\n    pass\nE.__name__ = 'E\\udcff'\n"
    "def add(a, b):\n    raise E('x')\n",
    "a returned string": "def add(a, b):\n    return 'x\\udfff'\n",
    "stderr and stdout": "import sys\ndef add(a, b):\n    sys.stderr.write('\\ud800')\n    print('\\ud800')\n"
    "    return a - b\n",
    "an exit message": "import sys\ndef add(a, b):\n    sys.exit('\\ud800 gone')\n",
}
FORMS = {
    "call": {"entry_point": "add", "cases": [{"args": [1, 2], "result": 3}]},
    "compiled": {"tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n", "entry_point": "add"},
    "apart": {
        "tests": "def check(candidate):\n    for a in [1, 2]:\n        assert candidate(a, 2) == a + 2\n",
        "entry_point": "add",
    },
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("what", sorted(SURROGATE_PROGRAMS))
def test_text_the_program_sends_back_can_always_be_written(form: str, what: str) -> None:
    """A lone surrogate (which Python strings hold and no encoder writes) in anything the program
    sends back: the verdict is the program's (wrong), and its reason and details encode as UTF-8
    (what the run folder, ``rlvr verify`` and a tokenizer need)."""
    v = verify_code(f"```python\n{SURROGATE_PROGRAMS[what]}```", FORMS[form], timeout=20)
    assert v.status == Status.WRONG, v.reason
    json.dumps({"reason": v.reason, "details": v.details}, ensure_ascii=False, default=str).encode("utf-8")
