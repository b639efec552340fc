"""Built-in synthetic tasks: rows with a prompt, a gold answer and a task type.

* ``addition``: ``a+b`` with operands 0..99 -- the trainer benchmark's task (same
  held-out set as ``../shared/bench/trainer/task.py``: seed 1234, 200 pairs).
* ``arithmetic``: multi-digit ``a op b`` with ``+ - *``.
* ``countdown``: reach a target from given numbers with ``+ - * /``, each number at
  most once; verified by the ``countdown`` verifier (safe evaluation, no ``eval``).

Prompts are chat messages (rendered with the tokenizer's chat template); the tiny
model's template renders ``[{"role": "user", "content": "23+58"}]`` as ``Q: 23+58=``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rlvr.registry import Registry

EVAL_SEED = 1234


@dataclass(frozen=True)
class Sample:
    """One task row.

    Attributes:
        prompt: chat messages, or raw text already in the model's prompt format.
        gold: the reference answer (a string; structured golds are JSON strings).
        task: which verifier judges it (``math``, ``countdown``...).
        id: a stable identifier (for quarantine lists and reports).
        extra: any other columns (``steps``, ``language``...), passed to rewards.
    """

    prompt: Any
    gold: str
    task: str = "math"
    id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _pairs(rng: random.Random, hi: int) -> Iterator[tuple[int, int]]:
    while True:
        yield rng.randint(0, hi), rng.randint(0, hi)


def addition_eval(n: int = 200, seed: int = EVAL_SEED, max_operand: int = 99) -> list[Sample]:
    """The fixed held-out addition problems (unique pairs; at most a quarter of all pairs)."""
    n = min(n, (max_operand + 1) ** 2 // 4)
    rng = random.Random(seed)
    seen: set[tuple[int, int]] = set()
    out = []
    for a, b in _pairs(rng, max_operand):
        if (a, b) not in seen:
            seen.add((a, b))
            out.append(Sample(_user(f"{a}+{b}"), str(a + b), "math", f"add-{a}-{b}"))
        if len(out) == n:
            return out
    raise AssertionError("unreachable")


def addition_train(seed: int, max_operand: int = 99, held_out: int = 200) -> Iterator[Sample]:
    """An endless stream of training problems, never from the held-out set."""
    excluded = {s.id for s in addition_eval(held_out, max_operand=max_operand)}
    rng = random.Random(seed)
    for a, b in _pairs(rng, max_operand):
        sid = f"add-{a}-{b}"
        if sid not in excluded:
            yield Sample(_user(f"{a}+{b}"), str(a + b), "math", sid)


def arithmetic(seed: int, digits: int = 3, ops: str = "+-*") -> Iterator[Sample]:
    """``a op b`` with up to ``digits`` digits per operand."""
    rng = random.Random(seed)
    hi = 10**digits - 1
    while True:
        a, b, op = rng.randint(0, hi), rng.randint(0, hi), rng.choice(ops)
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        yield Sample(_user(f"{a}{op}{b}"), str(value), "math", f"arith-{a}{op}{b}")


def countdown(seed: int, count: int = 4, max_number: int = 25, max_target: int = 100) -> Iterator[Sample]:
    """Reach a target from ``count`` numbers; the target is built from a random expression, so it is reachable."""
    rng = random.Random(seed)
    while True:
        nums = [rng.randint(1, max_number) for _ in range(count)]
        used = rng.sample(nums, rng.randint(2, count))
        value = used[0]
        for x in used[1:]:
            op = rng.choice("+-*")
            value = {"+": value + x, "-": value - x, "*": value * x}[op]
        if not 0 < value <= max_target:
            continue
        gold = json.dumps({"target": value, "numbers": nums})
        text = f"Using the numbers {nums}, make {value}. Use + - * / and each number at most once."
        yield Sample(_user(text), gold, "countdown", f"cd-{'-'.join(map(str, nums))}-{value}")


#: The built-in synthetic tasks, by name (``data.task``): each ``fn(seed, **task_options)`` yields samples.
TASKS: Registry[Callable[..., Iterator[Sample]]] = Registry("synthetic task")
TASKS.add("addition", addition_train)
TASKS.add("arithmetic", arithmetic)
TASKS.add("countdown", countdown)
