"""Get each row's verdict once, however many rewards need it.

Three sources, in order: a ``verdicts`` column (the caller verified already, e.g.
:class:`rlvr.rewards.combine.Total` or ``rlvr score`` with worker processes); an
in-process cache (TRL calls ``accuracy`` and then ``cosine`` on the same rows: the
second call verifies nothing); the task's verifier.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from rlvr.rewards.base import column, gold_column, prompt_text
from rlvr.types import Status, Verdict
from rlvr.verify.math.conventions import Conventions, conventions
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT
from rlvr.verify.registry import canonical_task, verify_with


@lru_cache(maxsize=32_768)
def _cached(
    completion: str,
    gold: str,
    task: str | None,
    strict: bool,
    timeout: float | None,
    question: str | None,
    chosen: Conventions,
) -> Verdict:
    # ``chosen``: the maths conventions in force, part of the key (a process may change its default)
    return _verify(completion, gold, task, strict, timeout, question)


def _verify(
    completion: str, gold: Any, task: str | None, strict: bool, timeout: float | None, question: str | None = None
) -> Verdict:
    return verify_with(completion, gold, task, strict=strict, timeout=timeout, question=question)


def questions_of(columns: Mapping[str, Any], n: int) -> list[str | None]:
    """Each row's question, as the model saw it: a ``prompt`` column (rlvr's engine, ``rlvr score``) or
    TRL's ``prompts``, else a ``question`` / ``problem`` column; None where there is none."""
    for name in ("prompt", "prompts", "question", "problem"):
        col = column(columns, name, n)
        if col is not None:
            return [prompt_text(p) if p is not None else None for p in col]
    return [None] * n


def row_verdicts(
    texts: list[str],
    columns: Mapping[str, Any],
    *,
    gold_field: str | None = None,
    strict: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    task: str | None = None,
    prefer: tuple[str, ...] = (),
) -> list[Verdict]:
    """One verdict per completion text (see the module docstring for where it comes from).

    ``task`` overrides the rows' ``task`` column (the code reward always runs code);
    ``prefer`` names gold columns to look for first (``tests`` for code).
    Structured golds (test specs, constraint sets) are cached by their JSON text.
    """
    n = len(texts)
    given = column(columns, "verdicts", n)
    if given is not None:
        return [v if isinstance(v, Verdict) else Verdict.from_dict(v) for v in given]
    golds = gold_column(columns, n, gold_field, prefer)
    tasks = [task] * n if task else (column(columns, "task", n) or [None] * n)
    if any(canonical_task(t) == "mcq" for t in tasks):
        golds = _with_options(golds, tasks, columns, n)
    questions = questions_of(columns, n)
    out = []
    for text, gold, row_task, question in zip(texts, golds, tasks, questions):
        if gold is None:
            out.append(Verdict(Status.BAD_GOLD, reason="the row has no gold answer"))
            continue
        if not isinstance(gold, str):
            try:
                gold = json.dumps(gold, sort_keys=True)  # the verifiers that take dicts take their JSON too
            except (TypeError, ValueError):
                out.append(_verify(text, gold, row_task, strict, timeout, question))
                continue
        out.append(_cached(text, gold, row_task, strict, timeout, question, conventions()))
    return out


def _with_options(golds: list[Any], tasks: list[Any], columns: Mapping[str, Any], n: int) -> list[Any]:
    """Multiple-choice rows carry their options (an ``options``/``choices`` column, else the prompt
    they are listed in) with the gold, so a gold given as an option's text maps to its letter."""
    options = column(columns, "options", n) or column(columns, "choices", n) or [None] * n
    prompts = column(columns, "prompt", n) or [None] * n
    return [
        {"answer": g, "options": o, "prompt": prompt_text(p)} if canonical_task(t) == "mcq" else g
        for g, t, o, p in zip(golds, tasks, options, prompts)
    ]


def clear_cache() -> None:
    """Forget cached verdicts (tests; long-lived processes that want the memory back)."""
    _cached.cache_clear()
