"""What crosses the sandbox's boundary tells the truth: values judged by the expected value's type,
and every string the program sends back written as text any writer can encode."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.types import Status
from rlvr.verify.code.asserts import case_equal
from rlvr.verify.code.extract import fenced_blocks
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


# Tests that run apart from the program (loops: not compiled into calls): what crosses the pipe
# must be the truth about the program's exceptions, its death, its names and its effects.
def _apart(tests: str, entry: str = "f") -> dict:
    return {"tests": tests, "entry_point": entry}


RAISES_VALUE_ERROR = _apart(
    "def check(candidate):\n    for x in [-1, -2]:\n        try:\n            candidate(x)\n"
    "        except ValueError:\n            continue\n        assert False, 'no ValueError'\n"
)
SURVIVES = _apart(
    "def check(candidate):\n    for x in [1, 2]:\n        try:\n            r = candidate(x)\n"
    "        except Exception:\n            r = None\n        assert r is None or r == 2 * x\n"
)
READS_MATH_UNIMPORTED = _apart(
    "def check(candidate):\n    for a in [1, 2]:\n        assert math.isclose(candidate(a), a / 2)\n"
)
SORTS_IN_PLACE = _apart(
    "def check(candidate):\n    for xs in [[3, 1, 2], [5, 4]]:\n        ys = list(xs)\n        candidate(ys)\n"
    "        assert ys == sorted(xs)\n"
)
LEAVES_INPUT = _apart(
    "def check(candidate):\n    for xs in [[3, 1, 2], [5, 4]]:\n        orig = list(xs)\n        out = candidate(xs)\n"
    "        assert out == sorted(orig)\n        assert xs == orig\n        assert out is not xs\n"
)

BOUNDARY = [
    # (spec, program, status)
    (
        RAISES_VALUE_ERROR,
        "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
        Status.CORRECT,
    ),
    (  # a class of its own named after the builtin is not the builtin
        RAISES_VALUE_ERROR,
        "class ValueError(Exception):\n    pass\ndef f(x):\n    raise ValueError('not the builtin')\n",
        Status.WRONG,
    ),
    (  # a subclass of the builtin is one
        RAISES_VALUE_ERROR,
        "import builtins\nclass Negative(builtins.ValueError):\n    pass\ndef f(x):\n    raise Negative(x)\n",
        Status.CORRECT,
    ),
    (SURVIVES, "def f(x):\n    return 2 * x\n", Status.CORRECT),
    (SURVIVES, "import sys\ndef f(x):\n    sys.exit(0)\n", Status.WRONG),  # its death is not an exception
    (
        SURVIVES,
        "import os, threading, time\ndef f(x):\n    threading.Thread(target=os._exit, args=(0,)).start()\n"
        "    time.sleep(5)\n",
        Status.WRONG,
    ),
    (READS_MATH_UNIMPORTED, "import math\ndef f(a):\n    return a / 2\n", Status.CORRECT),
    (  # a name the tests read is not the program's to fill with an object of its own
        READS_MATH_UNIMPORTED,
        "class _Yes:\n    def isclose(self, *a, **k):\n        return True\nmath = _Yes()\ndef f(a):\n    return 0\n",
        Status.WRONG,
    ),
    (SORTS_IN_PLACE, "def f(a):\n    a.sort()\n", Status.CORRECT),  # the tests see the mutation
    (SORTS_IN_PLACE, "def f(a):\n    return sorted(a)\n", Status.WRONG),
    (LEAVES_INPUT, "def f(a):\n    return sorted(a)\n", Status.CORRECT),
    (LEAVES_INPUT, "def f(a):\n    a.sort()\n    return a\n", Status.WRONG),  # mutated, and the same object
]


@pytest.mark.parametrize(("spec", "program", "status"), BOUNDARY, ids=[f"{i}" for i in range(len(BOUNDARY))])
def test_tests_apart_see_the_programs_exceptions_death_names_and_effects(spec, program, status) -> None:
    v = verify_code(f"```python\n{program}```", spec, timeout=20)
    assert v.details.get("checks") == "apart", v.details
    assert v.status is status, v.reason


# Work the verifier does in its own process on what the program or the policy wrote is bounded.
_FENCE_REGEX = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)  # what fenced_blocks replaced


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(st.sampled_from(["`", "```", "````", "\n", " ", "\t", "py", "python", "a", "+#.-", "x y"]), max_size=16)
)
def test_fenced_blocks_reads_what_the_fence_regex_read(parts: list[str]) -> None:
    text = "".join(parts)
    assert fenced_blocks(text) == _FENCE_REGEX.findall(text)


def test_a_completion_built_to_backtrack_still_gives_its_program() -> None:
    """A program, then openers whose info lines never end (the regex rescanned each one to the end
    of the text, quadratic in its length): one pass finds the program and stops."""
    text = "```python\ndef f():\n    return 1\n```\n" + "```" + "a" * 50_000 + "```py " * 20_000
    assert fenced_blocks(text) == [("python", "def f():\n    return 1\n")]


def test_a_set_over_returned_values_crafted_to_collide_fails_the_check() -> None:
    """``assert set(f()) == {...}`` builds the set in the verifier's process: members sharing one
    hash (multiples of the hash modulus) are refused there, not hashed into a quadratic set."""
    modulus = 2**61 - 1  # CPython's integer hash modulus on 64-bit machines
    spec = {"tests": "def check(candidate):\n    assert set(candidate()) == {0}\n", "entry_point": "f"}
    program = f"```python\ndef f():\n    return [{modulus} * k for k in range(1, 5000)]\n```"
    v = verify_code(program, spec, timeout=20)
    assert v.status is Status.WRONG and v.details.get("checks") == "outside", v.reason
    assert "ValueError on the returned value" in v.reason  # refused before the set was built
    ok = verify_code("```python\ndef f():\n    return [0, 0, 0]\n```", spec, timeout=20)
    assert ok.status is Status.CORRECT, ok.reason


def test_a_batch_gives_an_item_the_time_its_spec_gives_it() -> None:
    """The spec allows 6 s, the batch's default is 1 s: a program that takes 2 s is judged on its
    output (correct), not killed by the batch and called ``timeout``."""
    from rlvr.verify.registry import verify_many

    spec = {"cases": [{"input": "", "output": "ok"}], "timeout": 6}
    slow = "```python\nimport time\ntime.sleep(2)\nprint('ok')\n```"
    wrong = "```python\nprint('no')\n```"
    got = verify_many([slow, wrong], [spec, spec], ["code", "code"], jobs=1, timeout=1.0)
    assert [v.status for v in got] == [Status.CORRECT, Status.WRONG], [v.reason for v in got]


def test_a_runs_folder_is_set_aside_at_once_and_removed_beside_the_verdict(tmp_path, monkeypatch) -> None:
    """However many files the program wrote, the verdict does not wait for their removal: the
    folder is renamed aside (closed to its user id) and removed by a thread of its own."""
    import os
    import tempfile

    from rlvr.verify.code import sandbox

    root = tmp_path / "tmp"
    root.mkdir()
    os.chmod(tmp_path, 0o711)
    os.chmod(root, 0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    code = "import os\nfor i in range(3000):\n    open(f'f{i}', 'w').close()\nprint(len(os.listdir('.')))\n"
    run = sandbox.run(["/usr/bin/python3", "-I", "main.py"], {"main.py": code})
    assert run.stdout.strip() == "3001", (run.stdout, run.stderr[-300:])
    left = os.listdir(root)
    assert all(n.endswith("-gone") for n in left), left  # nothing under the name the run used
    assert sandbox.settle()
    assert os.listdir(root) == []
