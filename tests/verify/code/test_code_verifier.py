"""The code verifier: extraction, the three test-spec shapes, statuses, languages, rewards."""

from __future__ import annotations

import shutil

import pytest

from rlvr.errors import ConfigError
from rlvr.rewards import build_reward
from rlvr.types import Method, Status
from rlvr.verify import registry
from rlvr.verify.code.extract import extract_code
from rlvr.verify.code.languages import Language, get_language, register_language
from rlvr.verify.code.spec import parse_spec
from rlvr.verify.code.verifier import same_output, verify_code

PY = get_language("python")
ADD = {
    "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
    "    assert candidate(-1, 1) == 0\n",
    "entry_point": "add",
}
IO = {"cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "10 5\n", "output": "15"}]}
CALL = {
    "entry_point": "sq",
    "cases": [{"args": [2], "result": 4}, {"args": [3], "result": 9}, {"args": [0.5], "result": 0.25}],
}


def fence(code: str, lang: str = "python") -> str:
    return f"Reasoning first.\n```{lang}\n{code}\n```\nDone."


def test_extraction_takes_the_last_block_of_the_language() -> None:
    text = "```python\nx = 1\n```\n```bash\nrm -rf /\n```\n```py\nx = 2\n```"
    assert extract_code(text, PY) == ("x = 2\n", "fence:completion")
    assert extract_code("```\ny = 3\n```", PY)[0] == "y = 3\n"
    assert extract_code("```bash\nls\n```", PY) == ("", "")  # another language never counts
    assert extract_code("<think>```python\nbad\n```</think><answer>print(1)</answer>", PY) == ("print(1)", "answer")
    assert extract_code("just words", PY) == ("", "")
    assert extract_code("print(1)", PY, bare=True) == ("print(1)", "bare")
    assert extract_code("```python\nprint(1)", PY)[0] == "print(1)"  # an unclosed fence at the end still counts


@pytest.mark.parametrize(
    "gold, mode",
    [
        (ADD, "assert"),
        ("assert f() == 1", "assert"),
        (IO, "io"),
        (CALL, "call"),
        ({"inputs": ["1\n"], "outputs": ["1\n"]}, "io"),
        ({"fn_name": "f", "inputs": [[1]], "outputs": [1]}, "call"),
    ],
)
def test_spec_shapes(gold: object, mode: str) -> None:
    assert parse_spec(gold).mode == mode


@pytest.mark.parametrize(
    "bad", ["", "{not json", {"cases": []}, {"inputs": [1], "outputs": []}, 42, {"cases": [{"args": [1], "result": 1}]}]
)
def test_a_bad_spec_is_bad_gold_not_a_death(bad: object) -> None:
    v = verify_code(fence("print(1)"), bad)
    assert v.status is Status.BAD_GOLD, v


def test_all_pass_some_fail_invalid() -> None:
    ok = verify_code(fence("def add(a, b):\n    return a + b"), ADD)
    assert ok.status is Status.CORRECT and ok.method is Method.EXECUTION
    assert ok.details["passed"] == ok.details["total"] == 3
    half = verify_code(fence("def add(a, b):\n    return abs(a) + b"), ADD)
    assert half.status is Status.WRONG and (half.details["passed"], half.details["total"]) == (2, 3)
    assert "test 2" in half.reason
    syntax = verify_code(fence("def add(a, b) return a"), ADD)
    assert syntax.status is Status.NO_ANSWER and syntax.details["invalid"] == "syntax"
    prose = verify_code("I would add the two numbers.", ADD)
    assert prose.status is Status.NO_ANSWER and prose.details["invalid"] == "no_code"


def test_early_stop_stops_at_the_first_failure() -> None:
    code = fence("def add(a, b):\n    return 0")
    assert verify_code(code, ADD).details["failures"][1:]  # all three reported
    stopped = verify_code(code, ADD, early_stop=True)
    assert stopped.status is Status.WRONG and len(stopped.details["failures"]) == 1


def test_exiting_early_cannot_fake_a_pass() -> None:
    for cheat in (
        "import sys\nsys.exit(0)",
        "import os\nos._exit(0)",
        "import os\nos.write(3, b'x done\\n')\ndef add(a, b):\n    return 0",
    ):
        assert verify_code(fence(cheat), ADD).status is Status.WRONG, cheat


def test_an_exception_inside_one_assert_fails_that_test_only() -> None:
    v = verify_code(fence("def add(a, b):\n    if a < 0:\n        raise ValueError('neg')\n    return a + b"), ADD)
    assert (v.details["passed"], v.details["total"]) == (2, 3) and "ValueError" in v.reason


def test_prompt_is_prepended_when_the_completion_is_only_a_body() -> None:
    spec = {**ADD, "prompt": 'def add(a, b):\n    """Add."""\n'}
    assert verify_code("```python\n    return a + b\n```", spec).status is Status.CORRECT


def test_io_cases_are_whitespace_tolerant_and_optionally_float_tolerant() -> None:
    prog = "a, b = map(int, input().split())\nprint(a + b, ' ')"
    assert verify_code(fence(prog), IO).status is Status.CORRECT
    wrong = verify_code(fence("print(3)"), IO)
    assert wrong.status is Status.WRONG and (wrong.details["passed"], wrong.details["total"]) == (1, 2)
    assert same_output("1.0000001\n", "1.0", float_tol=1e-6) and not same_output("1.0000001", "1.0")
    assert same_output("a  b\n\n", "a b") and not same_output("a b c", "a b")


def test_call_cases_compare_plain_values_only() -> None:
    assert verify_code(fence("def sq(x):\n    return x * x"), CALL).status is Status.CORRECT
    always_equal = "class A:\n    def __eq__(self, o):\n        return True\ndef sq(x):\n    return A()"
    assert verify_code(fence(always_equal), CALL).status is Status.WRONG
    leet = {"entry_point": "Solution.sq", "cases": CALL["cases"]}
    code = "class Solution:\n    def sq(self, x):\n        return x ** 2"
    assert verify_code(fence(code), leet).status is Status.CORRECT


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_a_compiled_language_by_configuration() -> None:
    prog = '#include <stdio.h>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);return 0;}'
    c_io = {**IO, "language": "c"}
    assert verify_code(fence(prog, "c"), c_io).status is Status.CORRECT
    broken = verify_code(fence("int main( {", "c"), c_io)
    assert broken.status is Status.NO_ANSWER and broken.details["invalid"] == "build"
    # a program that prints the build marker itself cannot turn a failed build into a pass
    assert verify_code(fence(prog.replace("a+b", "a-b"), "c"), c_io).status is Status.WRONG


def test_languages_are_configuration() -> None:
    register_language(Language("py-unbuffered", ("pyu",), "prog.py", (PY.run[0], "-u", "{source}")))
    assert verify_code(
        fence("print(int(input()) * 2)", "pyu"), {"cases": [{"input": "4", "output": "8"}], "language": "py-unbuffered"}
    ).correct
    with pytest.raises(ConfigError):
        get_language("cobol")


def test_registered_by_task_and_batch_parallel() -> None:
    assert registry.verify(fence("def add(a, b):\n    return a + b"), ADD, task="humaneval").correct
    comps = [fence("def add(a, b):\n    return a + b"), fence("def add(a, b):\n    return a"), "nothing"] * 3
    vs = registry.verify_many(comps, [ADD] * 9, ["code"] * 9, jobs=2, timeout=10)
    assert [v.status for v in vs] == [Status.CORRECT, Status.WRONG, Status.NO_ANSWER] * 3


def test_code_rewards_follow_the_seed_table() -> None:
    comps = [fence("def sq(x):\n    return x * x"), fence("def sq(x):\n    return 4"), "no code", fence("def sq(x) x")]
    code = build_reward("code")
    assert code(comps, tests=[CALL] * 4) == [1.0, -1.0, -0.2, -0.2]
    rate = build_reward("code_pass_rate")
    assert rate(comps, tests=[CALL] * 4) == pytest.approx([1.0, 1 / 3, 0.0, 0.0])
    assert code([comps[0]], tests=["{oops"]) == [None]  # a bad spec is not the policy's fault
