"""Verifiers by task name: ``verify(completion, gold, task=...)`` picks the right one.

Every verifier has the same shape, ``fn(completion, gold, **options) -> Verdict``,
so rewards, ``rlvr score`` and the trainer never special-case a task. The code and
instruction-following verifiers are registered here too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rlvr.errors import ConfigError
from rlvr.registry import Registry
from rlvr.types import Status, Verdict
from rlvr.verify.batch import run_batch
from rlvr.verify.code.spec import parse_spec
from rlvr.verify.code.verifier import DEFAULT_CODE_TIMEOUT, verify_code
from rlvr.verify.countdown import verify_countdown
from rlvr.verify.instruction import verify_instruction
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT, verify_math, warm_up
from rlvr.verify.mcq import verify_mcq
from rlvr.verify.reasoning_gym import verify_reasoning_gym
from rlvr.verify.verifiers_rubric import verify_verifiers

VerifyFn = Callable[..., Verdict]

#: The verifier of each task, by name; common dataset spellings of a task are its aliases.
VERIFIERS: Registry[VerifyFn] = Registry("verifier")
VERIFIERS.add("math", verify_math, "maths", "arithmetic", "gsm8k", "addition")
VERIFIERS.add("countdown", verify_countdown)
VERIFIERS.add("code", verify_code, "python", "humaneval", "apps")
VERIFIERS.add("instruction", verify_instruction, "ifeval", "json")
VERIFIERS.add(
    "mcq", verify_mcq, "multiple_choice", "choice", "gpqa", "mmlu", "mmlu_pro", "mmlu-pro", "aqua", "aqua_rat", "medqa"
)
VERIFIERS.add("reasoning_gym", verify_reasoning_gym)
VERIFIERS.add("verifiers", verify_verifiers)  # a verifiers environment's rows: its own rubric


def register_verifier(task: str, fn: VerifyFn) -> None:
    """Make ``fn(completion, gold, **options) -> Verdict`` the verifier for ``task``."""
    VERIFIERS.add(task, fn)


def available_tasks() -> list[str]:
    """Task names with a verifier (their aliases left out)."""
    return sorted(VERIFIERS)


def canonical_task(task: str | None) -> str:
    """The verifier name a task spelling stands for (``gsm8k`` -> ``math``, ``gpqa`` -> ``mcq``,
    ``reasoning_gym/chain_sum`` -> ``reasoning_gym``)."""
    if task and task.startswith("reasoning_gym/"):
        return "reasoning_gym"
    return VERIFIERS.canonical(task or "math")


def get_verifier(task: str | None) -> VerifyFn:
    """The verifier for ``task`` (``None`` or ``""`` means maths)."""
    name = canonical_task(task)
    if name not in VERIFIERS:
        raise ConfigError(f"no verifier for task {task!r}; known tasks: {', '.join(available_tasks())}")
    return VERIFIERS.get(name)


def verify(completion: str, gold: Any, task: str | None = "math", **options: Any) -> Verdict:
    """Verify one completion with the task's verifier."""
    return get_verifier(task)(completion, gold, **options)


def verify_with(
    completion: str,
    gold: Any,
    task: str | None,
    *,
    strict: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    question: str | None = None,
) -> Verdict:
    """:func:`verify` with the common options; ``strict`` and ``question`` (the row's prompt, which
    tells a restated computation from a closed form) go only to the maths verifier."""
    opts: dict[str, Any] = {"timeout": timeout}
    if canonical_task(task) == "math":
        opts["strict"] = strict
        if question is not None:
            opts["question"] = question
    return verify(completion, gold, task, **opts)


def _verify_item(item: tuple[str, Any, str | None, str | None], timeout: float, strict: bool) -> Verdict:
    completion, gold, task, question = item
    return verify_with(completion, gold, task, strict=strict, timeout=timeout, question=question)


#: Seconds a code item gets beyond its budget in a batch: the sandbox stops the program at the
#: budget and then tears its run down (kills, the control group emptied, the folder set aside); on
#: a loaded machine that can take more than the batch's one-second grace, and a program the sandbox
#: stopped for looping is ``wrong``, never the batch's ``timeout``.
SANDBOX_GRACE_S = 5.0


def item_limit(gold: Any, task: str | None, timeout: float) -> float:
    """The seconds one item may take, as its verifier will give it: a code spec's own ``timeout``
    wins over the batch's (the batch must not kill what the spec allows, and call it ``timeout``),
    plus :data:`SANDBOX_GRACE_S` for the sandbox to end the run."""
    if get_verifier(task) is verify_code:
        try:
            own = parse_spec(gold).timeout
        except ValueError:  # a bad spec: its verdict (bad_gold) comes at once
            own = None
        return (own or timeout) + SANDBOX_GRACE_S
    return timeout


def verify_many(
    completions: Sequence[str],
    golds: Sequence[Any],
    tasks: Sequence[str | None] | None = None,
    *,
    jobs: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    strict: bool = False,
    on_done: Callable[[int], None] | None = None,
    progress: bool = False,
    questions: Sequence[str | None] | None = None,
) -> list[Verdict]:
    """Verify rows in order; ``jobs > 0`` runs them in worker processes with hard kills.
    ``questions``: each row's prompt (maths rows use it, see :func:`rlvr.verify.math.verify_math`).

    Unknown tasks raise :class:`ConfigError` before any work starts.
    """

    tasks = list(tasks) if tasks is not None else [None] * len(completions)
    if not len(completions) == len(golds) == len(tasks):
        raise ValueError(f"lengths differ: {len(completions)} completions, {len(golds)} golds, {len(tasks)} tasks")
    for t in set(tasks):
        get_verifier(t)
    if jobs > 0:
        warm_up()
    return run_batch(
        _verify_item,
        list(zip(completions, golds, tasks, questions if questions is not None else [None] * len(completions))),
        jobs=jobs,
        timeout=timeout,
        limit=lambda item: item_limit(item[1], item[2], timeout),
        options={"timeout": timeout, "strict": strict},
        on_timeout=lambda item: Verdict(
            Status.TIMEOUT, reason=f"worker killed after {item_limit(item[1], item[2], timeout):g}s"
        ),
        on_crash=lambda item, why: Verdict(Status.ERROR, reason=f"worker crashed: {why}"),
        on_done=on_done,
        progress=progress,
    )


def verify_math_batch(
    pairs: Iterable[tuple[str, str]] | Sequence[tuple[str, str]],
    *,
    jobs: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    strict: bool = False,
    progress: bool = False,
) -> list[Verdict]:
    """Verify many (completion, gold) pairs in worker processes.

    Each item gets a hard time limit enforced from outside: a worker that runs past
    ``timeout`` (plus a grace second) is killed with its process group and replaced,
    and the item comes back as ``timeout``. ``jobs=0`` runs in this process.
    """
    items = list(pairs)
    return verify_many(
        [c for c, _ in items],
        [g for _, g in items],
        ["math"] * len(items),
        jobs=jobs,
        timeout=timeout,
        strict=strict,
        progress=progress,
    )


def verify_code_batch(
    completions: Sequence[str],
    golds: Sequence[Any],
    *,
    jobs: int = 2,
    timeout: float = DEFAULT_CODE_TIMEOUT,
    on_done: Callable[[int], None] | None = None,
) -> list[Verdict]:
    """Verify many completions, ``jobs`` at once (the maths batch machinery: per-item hard deadlines)."""
    return verify_many(completions, golds, ["code"] * len(completions), jobs=jobs, timeout=timeout, on_done=on_done)
